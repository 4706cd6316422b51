// Package protocol names the vocabulary of the chat route protocol (the
// Quarkus LangChain4j Chat Scopes protocol, wire-compatible): the event
// types a request's answer is made of, the request data keys the runtime
// reads, and the data of the events and answers the runtime itself
// defines.
//
// It holds names, not behaviour, and imports nothing of the module: the
// runtime (runtime/chat, runtime/ai), the transports (runtime/ws,
// runtime/agui, runtime/a2aserver, runtime/mcpserver), the routes module
// (runtime/jsroutes) and clients all speak it. An application meets it
// when a client handles an event by type:
//
//	client.Builder().
//		On(protocol.EventConfirm, func(ev chat.Event) { … })
//
// docs/protocol.md describes the protocol.
package protocol

import (
	"encoding/json"
	"time"
)

// Event types of the chat route protocol.
const (
	EventMessage    = "Message"    // a text reply
	EventObject     = "Object"     // any other value
	EventThinking   = "Thinking"   // progress shown while the route works
	EventConsole    = "Console"    // text for the client's console
	EventError      = "Error"      // an application error message
	EventStream     = "Stream"     // one chunk of a streamed reply
	EventConfirm    = "Confirm"    // a tool call waits for the user's confirmation
	EventClientTool = "ClientTool" // a tool call the client runs waits for its result
	EventSources    = "Sources"    // the passages an AI service's answer draws on
	EventRetract    = "Retract"    // the text streamed so far in the request is withdrawn
	EventAgent      = "Agent"      // another agent answers (a hand-off, runtime/agent)
	EventPlan       = "Plan"       // the conversation's plan changed (package runtime/plan)
	EventCompleted  = "Completed"  // terminator: data is the current scope id
	EventFailed     = "Failed"     // terminator: data is the failure reason
)

// IsReserved reports whether typ is a terminator type, which routes may
// not send: [EventCompleted] or [EventFailed]. Only the transport ends a
// request; chatgen refuses them in //chat:event at generate time.
func IsReserved(typ string) bool { return typ == EventCompleted || typ == EventFailed }

// KeyUserMessage is the request data key of the user's text.
const KeyUserMessage = "userMessage"

// The request data keys of an answer to a paused turn: a client tool call
// ([ClientToolCall]) or, with KeyCancel, a tool call waiting for the
// user's confirmation too.
const (
	KeyClientTool = "clientTool" // the id of the client tool call answered (string)
	KeyResult     = "result"     // the call's result (any JSON value)
	KeyError      = "error"      // why the call failed or was refused (string), instead of a result
	KeyCancel     = "cancel"     // the id of the paused call whose turn stops (string)
)

// A ClientToolCall is the data of a ClientTool event ([EventClientTool]):
// the model called a tool that the client runs (an AI service's tool
// marked //chat:tool client), and the turn paused until the client sends
// the result. The client answers with the data of its next request:
//
//	{"clientTool": "<id>", "result": <any JSON value>}   the call's result
//	{"clientTool": "<id>", "error": "why"}               the call failed or the user refused it
//	{"cancel": "<id>"}                                   stop the paused turn
//
// The Go client's SessionBuilder.OnClientTool (runtime/chat) answers so
// on its own.
type ClientToolCall struct {
	// ID identifies the call: the answer names it.
	ID string `json:"id"`
	// Tool is the tool's name; Arguments the model's arguments (a JSON
	// object).
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// CallID is the model's id of the tool call.
	CallID string `json:"callId"`
	// Deadline, when set, is the time after which the server no longer
	// takes the result: an answer after it tells the model that the
	// client did not answer in time.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Agent and Session name the sub-agent, and its session, whose turn
	// made the call; "" for a call of the top-level turn.
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
}

// A Retraction is the data of a Retract event ([EventRetract]): an AI
// service's output guardrail refused or changed an answer the client was
// already shown as it streamed, so the client drops every Stream chunk of
// the request received so far; what follows (a rewritten or new answer,
// or the request's failure) replaces it.
type Retraction struct {
	// Reason is the guardrail outcome that withdrew the text: "rewrite",
	// "reprompt", "fail" or "fatal".
	Reason string `json:"reason"`
}
