// Package a2atools offers remote agents that speak A2A (the Agent2Agent
// protocol) to chatgen AI services as tools, next to their generated
// tools: a tool source like runtime/mcptools.
//
// A [Source] is one remote agent, found by its Agent Card
// (URL/.well-known/agent-card.json). Put it in the ai.Config.ToolSources
// of the services that may use it, in the generated Deps; generated code
// needs no change:
//
//	smith, err := a2atools.Connect(ctx, &a2atools.Options{URL: "https://smith.example.com/"})
//	if err != nil {
//		return err
//	}
//	defer smith.Close()
//	router, err := chat.NewRouter(nil, Register(Deps{
//		Clerk: &ai.Config{Model: llm, ToolSources: []ai.ToolSource{smith}},
//	}))
//
// # The tool
//
// The agent is one tool, named after the card ([Options.Name] renames
// it) and described by the card's description and skills. The model
// calls it with a message (and new_conversation to start over); it is
// told the agent's answer: the text of the task's artifacts and of its
// last status message, or of the agent's message.
//
// # Versions
//
// [Connect] chooses the version of A2A from the card's interfaces: A2A
// 1.0 (JSON-RPC SendMessage and SendStreamingMessage, proto-JSON, the
// A2A-Version: 1.0 header) when the card offers it, spoken by this
// package's own small client; else A2A 0.3 (message/send, message/stream),
// spoken through the a2a-go SDK's client
// (github.com/a2aproject/a2a-go/a2aclient). [Options.Version] forces one.
// Only the JSON-RPC binding is spoken (not gRPC nor HTTP+JSON).
//
// # One remote conversation per chat scope
//
// The contextId the agent returns is kept in the chat scope (a
// chat-scoped durable bean, [Source.Bean]), and sent with the next
// messages of the scope: the agent sees one conversation per chat scope,
// and a nested scope continues its parent's. It is saved with a durable
// conversation, so a conversation resumed on another node goes on in the
// same remote context; it is forgotten when the scope ends. A call
// outside any chat scope starts a new remote conversation.
//
// A task the agent leaves input-required is returned to the model as the
// agent's question, marked as such; the model's next call of the tool
// answers it, on the same task (or, when the agent no longer knows the
// task — it restarted —, as a new message of the same context).
//
// # Progress
//
// When the card says the agent streams (and [Options.NoStream] is not
// set), messages are sent with the streaming send, and each step of the
// agent reaches the chat client as it comes, as an ai.EventSubAgent event
// whose ai.AgentEvent is tagged with the agent's name (Agent) and the
// remote contextId (Session): Type "Status" (Text: the state and its
// message, "working: heating"; ID: the task's id), "Artifact" (Text: a chunk of an artifact,
// ID: the artifact's id) or "Stream" (Text: a message of the agent).
//
// # Failures and bounds
//
// A failure fails the tool call only: it is told to the model as the
// tool's result, as for generated tools, and the turn and its memory go
// on. An agent that cannot be reached or answers with an HTTP error
// ([ErrUnavailable]), a JSON-RPC error ([RemoteError]), an answer that is
// not A2A ([ErrProtocol]), a call past [Options.CallTimeout], an answer
// past [Options.MaxMessageBytes] ([ErrMessageTooLarge]) are each a
// [CallError]. A call that times out, or whose turn is cancelled, after
// a stream named its task has the task cancelled on the agent, in the
// background ([Source.Close] waits for it); a task that ends failed, rejected, canceled or
// auth-required is a [TaskError]. A card that cannot be fetched or used
// fails Connect ([ErrUnavailable], [ErrInvalidCard]). An answer longer
// than [Options.MaxResultBytes] is cut.
//
// # Dependencies
//
// This package imports runtime/ai and runtime/chat, never the reverse,
// so an application that does not use A2A does not link a2a-go.
package a2atools
