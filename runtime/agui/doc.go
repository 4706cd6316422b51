// Package agui serves the routes of a chat router to AG-UI clients (the
// Agent–User Interaction protocol: @ag-ui/client's HttpAgent, CopilotKit
// and the front ends built on it) as typed server-sent events.
//
// [Handler] is an http.Handler: a client POSTs a RunAgentInput (threadId,
// runId, messages, tools, state, context, forwardedProps) and reads the
// run's events as a text/event-stream of JSON objects, each typed as
// @ag-ui/core 1.0.0 types it:
//
//   - RUN_STARTED first; RUN_FINISHED when the request completes, or
//     RUN_ERROR (code: the failure's reason, such as "Cancelled" or
//     "Forbidden"; never internal error text) when it fails;
//   - a Message event is one assistant message: TEXT_MESSAGE_START,
//     TEXT_MESSAGE_CONTENT, TEXT_MESSAGE_END; the chunks of a stream
//     (Stream events) are the contents of one message, closed by the
//     stream's end or by the next event of another kind;
//   - Thinking text is a reasoning message: REASONING_START,
//     REASONING_MESSAGE_START, REASONING_MESSAGE_CONTENT,
//     REASONING_MESSAGE_END, REASONING_END;
//   - a tool call the client runs (a ClientTool event: a tool marked
//     //chat:tool client) is a front-end tool call: TOOL_CALL_START,
//     TOOL_CALL_ARGS and TOOL_CALL_END, its toolCallId the ClientTool id,
//     and the run finishes with the turn paused;
//   - the tool calls a sub-agent makes (SubAgent events of type ToolCall
//     and ToolResult) are TOOL_CALL_START, TOOL_CALL_ARGS, TOOL_CALL_END
//     and TOOL_CALL_RESULT;
//   - every other event (Object values, //chat:event values, Sources,
//     Agent, Plan, Confirm, Retract, Console, Error and the other steps
//     of SubAgent) is a CUSTOM event named as its type, its data the
//     value;
//   - with [Options.ShowScope] or [Options.Show], a STATE_SNAPSHOT right
//     after RUN_STARTED holds the AG-UI state: the conversation's id, its
//     scope stack ("scopes": id and route of each, the top scope first)
//     and current scope id, and under "beans" the values Show names
//     ([ShowBean]; nothing of the conversation's beans otherwise); a
//     STATE_DELTA (a JSON Patch, RFC 6902, as @ag-ui/core types it)
//     follows each event that changed it, and the run's end, never
//     inside an open message.
//
// A message or reasoning message still open is closed before an event of
// another kind, and before RUN_FINISHED or RUN_ERROR, so that the stream
// nests as AG-UI's verifier requires.
//
// A thread is a conversation: the first run on a threadId connects a
// conversation on [Options.Route] (the router's default route when
// empty), and the later runs of that thread are its next requests, one
// run per request, one at a time. The user's text of a run is the
// content of the last user message of its messages; forwardedProps, when
// it is an object, adds the route's other parameters. A thread belongs to
// the principal that started it: a run of another principal's thread is
// answered 403. Threads live in this process until [Handler.Close] or
// their idle timeout ([Options.ThreadTimeout]). With [Options.Threads] on
// a durable router, a thread is durable across nodes: each run ends by
// saving the thread's record (its conversation, resume token, principal
// and pending front-end tool call; [StoreThreads] keeps it in the
// router's conversation store) and detaching the conversation, and the
// next run, on any node sharing the store, resumes it.
//
// A client that closes its request (AbortController.abort, a closed tab)
// stops the run: the request's context is cancelled with the cause
// [chat.ErrCancelled] (the stop of the websocket's Cancel frame), so the
// route and its AI services see [chat.Cancelled] and keep the
// interrupted turn.
//
// Requests are authenticated with [Options.Authenticator] (a
// ws.Authenticator can be given as it is; an error answers 401). Bodies
// are bounded by [Options.MaxBodyBytes] (413); malformed input is
// answered 400 with a JSON error naming what is wrong. The events of a
// run wait in a bounded buffer ([Options.MaxBufferedEvents]) for a slow
// client; a client that does not read while it fills, or for longer than
// [Options.WriteTimeout] while its connection's buffers are full, has its
// run cancelled with the cause [ErrSlowClient].
//
// The front end answers a front-end tool call with the next run of the
// thread, its messages ending in a tool message: toolCallId names the
// call, content is the result (parsed as JSON when it is JSON, else the
// string), or error says why the tool did not run. The run is the request
// {"clientTool": id, "result": ...} (or "error") of the chat protocol. A
// tool message for a call that is not the thread's pending one ends the
// run with RUN_ERROR code BadRequest, the call staying pending. The tools
// of RunAgentInput are not given to the model: the tools are the AI
// service's, those marked //chat:tool client being the front-end ones.
package agui
