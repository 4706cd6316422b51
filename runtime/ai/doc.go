// Package ai is the runtime of chatgen's AI services: the code that the
// generated implementation of a //chat:ai interface calls to assemble the
// prompt, run the tool loop, stream, decode structured output and keep the
// chat memory of each scope. It works with any langchaingo
// [github.com/tmc/langchaingo/llms.Model].
//
// An application configures each AI service with a [Config] (the model,
// the memory provider, limits) passed in the generated Deps; generated code
// registers one [Service] per interface with [Register], declares one
// [Method] per interface method (its prompts, its [Tool] table, the form of
// its answer) and, per method call, passes a [Request] to [Service.Chat],
// [Service.Stream] or [Structured]. [BeanTool] makes
// the tools that are methods of scoped beans. [Config.ToolSources] add
// tools made at run time to every method of a service — the tools of MCP
// servers (package runtime/mcptools), for example: see [ToolSource].
// [Config.Knowledge] makes a service answer from documents, through any
// langchaingo schema.Retriever, retrieved before each turn or searched by
// the model, per scope: see [Knowledge].
// [Config.LongTerm] gives it a memory of each principal that outlives
// conversations — facts recalled into the turn's user message after the
// passages and extracted after committed turns, or tools — see
// [LongTermMemory] and package runtime/longterm/recall.
//
// # A turn
//
// One method call is one turn:
//
//  1. The memory id: [Request.MemoryID] when set; otherwise
//     "<scope id>#<service>.<Method>" for chat-scoped services (the memory
//     is attached to the current chat scope: chat.ClearMemory and scheduled
//     wipes clear it, the end of the scope deletes it) or
//     "<invocation id>#<service>.<Method>" for invocation-scoped ones (a
//     fresh memory per top-level call, deleted when it ends). Without an
//     active scope (or invocation) the call fails with an error matching
//     chat.ErrNotActive.
//  2. The prompt: the system message (a new one replaces a different one
//     in the memory), the memory's messages, the user message (with, in
//     generic retrieval, the passages of [Config.Knowledge] and then the
//     facts of a generic [Config.LongTerm], which the memory never gets).
//  3. The tool loop: the model is offered the method's tools, then those
//     of the service's tool sources (asked once per turn; a name clash
//     fails the turn with [ErrToolClash]). While the model's reply calls
//     tools, the service runs them (in order, or concurrently with
//     [Config.ParallelTools]), sends one tool message per result and calls
//     the model again. Tool failures
//     are told to the model, never returned: an unknown tool, arguments
//     that do not decode ([ArgumentsError]), the tool's error, a panic. The
//     loop ends when a reply calls no tool, or when every tool it called is
//     immediate and succeeded ([Tool.Immediate]: no further model call;
//     [Reply.Immediate]), and fails with [ErrTooManyModelCalls] past
//     [Config.MaxModelCalls].
//  4. The commit: only a turn that completes is remembered, in one
//     memory.Memory.Add: the system message, the user message, every AI
//     message with its tool calls, the tool results, the final answer. A
//     failed model call, a failed tool loop, too many model calls or a
//     context that ended leave the memory as it was — except a turn the
//     user stopped ([chat.Cancelled]: its context cancelled with the cause
//     chat.ErrCancelled), which is remembered as far as it went: the user
//     message, the tool calls with their results (a call that had not run
//     gets a "cancelled" result, so no tool call is left without one) and
//     an AI message with the text streamed so far and [InterruptedMarker],
//     which the model reads in the next turns. A turn during which
//     its memory was cleared (a tool calling chat.ClearMemory) or deleted
//     (a tool ending its scope) is not remembered either: the wipe wins.
//
// Turns on one memory id are serialised within a Service: a turn waits
// for the one in progress on the same id (or until its context ends).
//
// # Example
//
// What generated code does for a method
// Ask(ctx context.Context, day, userMessage string) (string, error) with a
// system template over day and one tool, a method of the chat-scoped
// Weather:
//
//	var assistantAsk = ai.Method{
//		Name:           "Ask",
//		Kind:           chat.KindChat,
//		SystemTemplate: template.Must(template.New("Assistant.Ask system").Parse("You are terse. Today is {{.day}}.")),
//		Tools: []ai.Tool{{
//			Name:        "weather",
//			Description: "Weather tells the weather in a city.",
//			Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
//			Invoke: ai.BeanTool(weatherBean, func(ctx context.Context, w *Weather, args struct {
//				City string `json:"city"`
//			}) (any, error) {
//				return w.Weather(ctx, args.City)
//			}),
//		}},
//	}
//
//	func (x *assistantImpl) Ask(ctx context.Context, day, userMessage string) (string, error) {
//		reply, err := x.svc.Chat(ctx, &ai.Request{
//			Method: &assistantAsk,
//			User:   userMessage,
//			Data:   map[string]any{"day": day, "userMessage": userMessage},
//		})
//		if err != nil {
//			return "", err
//		}
//		return reply.Content, nil
//	}
//
// with x.svc the service that the generated Register's
// ai.Register(p, assistantBean, ai.ServiceSpec{Config: deps.Assistant,
// Methods: []*ai.Method{&assistantAsk}}, …) passes to the constructor of
// assistantImpl, and weatherBean the chat.Bean of Weather. A constant system message is
// Method.System rather than a template; a user message that is a parameter
// as it is is Request.User, and Data stays nil when no template needs it.
// See the package's Example for a complete program against a scripted
// model.
//
// # Steering and observing
//
// [Config.ModelHooks] and [Config.ToolHooks] wrap every model call and tool
// call in the net/http middleware style ([ModelHook], [ToolHook]): they
// see and change the messages, options and arguments, answer in the
// model's place, veto a tool call ([Veto]) or replace its result.
// [Config.ToolTimeout] (or a tool's own [Tool.Timeout], //chat:tool
// timeout=) and [Config.ModelTimeout] bound the calls ([ErrToolTimeout],
// [ErrModelTimeout]); [Config.Retry] retries model calls that failed with
// 429, 5xx or a transport error, honouring Retry-After when the provider's
// client goes through [Transport]. [Config.ForwardThinking] sends the
// model's reasoning to the client as Thinking events. [Config.Telemetry]
// configures the OpenTelemetry spans and metrics ([Telemetry]).
//
// # Models
//
// A Service shapes what it sends to the langchaingo client it talks to
// ([Client], detected from [Config.Model] or set with [Config.Client]):
// Anthropic, Google AI, Ollama and Mistral each carry the conversation in
// their own way, with their own gaps. A client that cannot carry tool
// calls is refused ([ErrToolsUnsupported]) rather than silently given no
// tools. Package runtime/ai/modeltest is the conformance suite of the
// clients; docs/models.md has what each can do.
//
// # Streaming
//
// langchaingo's OpenAI client passes text, empty chunks and JSON tool-call
// fragments to the same streaming function; [Service.Stream] yields the
// text only. Cancelling the context mid-stream fails the turn even when the
// provider returns the truncated text without an error.
package ai
