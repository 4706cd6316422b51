// Package a2aserver serves the routes of a chat router as an A2A agent
// (the Agent2Agent protocol): one [Handler], an http.Handler, speaking
// A2A 1.0 (@a2a-js/sdk 1.x) and 0.3 (a2a-go v0.3, @a2a-js/sdk 0.3) over
// JSON-RPC and server-sent events.
//
// A GET of a path ending in /.well-known/agent-card.json answers the Agent
// Card: one card for both versions, its 0.3 fields (url, protocolVersion
// "0.3.0", preferredTransport JSONRPC) and its 1.0 supportedInterfaces
// (JSONRPC, "1.0" and "0.3"), streaming on, push notifications off, one
// skill per route of the router's manifest. Every POST is a JSON-RPC
// request; its A2A-Version header chooses the version (absent: 0.3; an
// unknown one is answered -32009):
//
//	0.3: message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe
//	1.0: SendMessage, SendStreamingMessage, GetTask, CancelTask, SubscribeToTask, ListTasks
//
// The push notification methods of both answer -32003 (not supported),
// the extended card -32007; another method -32601, a body that is not
// JSON -32700, a request that is not JSON-RPC (a batch, a wrong jsonrpc,
// an id that is an object) -32600, a body over [Options.MaxBodyBytes]
// -32600. 1.0 results are proto-JSON (ROLE_USER, TASK_STATE_COMPLETED,
// parts as {"text": …} or {"data": …}; a send result is {"task": …});
// 0.3 results are a2a-go's types.
//
// A context is a conversation: a message without contextId connects a
// conversation on [Options.Route] (the router's default route when
// empty), whose id is the contextId; the later messages of that context
// are its next requests, one at a time. A task is a request: its text
// parts, joined, are the user's message; the keys of its data parts are
// the route's other parameters (file parts are refused). Its events map
// so:
//
//   - Message and Stream text: status updates (working) carrying each
//     chunk as an agent message, in order; the whole text is the final
//     status's message, added to the task's history;
//   - Thinking: a working status update whose text part has the metadata
//     "chatgen/event": "Thinking";
//   - every other event (//chat:event values, Object, Sources, …): an
//     artifact named after the event type, with one data part holding its
//     value (a value that is not an object under "value");
//   - a ClientTool event (a tool the client runs) or a Confirm event (a
//     tool call waiting for the user's confirmation): the task ends
//     input-required, its status message holding a data part
//     {"clientTool": {id, tool, arguments, callId}} or {"confirm": {…}}.
//     The next message on that taskId answers it: a data part with
//     "result" (or "error") for a client tool, a data part with "approve"
//     (and "reason", "arguments") for a confirmation;
//   - the request's end: completed, failed (the failure's reason, never
//     internal error text), or canceled.
//
// A cancel of a running task cancels its request's context with the cause
// [chat.ErrCancelled], as the websocket's Cancel frame does; a paused one
// is stopped with a cancel request; the task ends canceled. A task that
// ended before the cancel took effect answers -32002. A task runs on
// until its request ends when its client goes away; its stream can be
// taken up with resubscribe. A task that is not running cannot be
// subscribed to (-32004).
//
// Requests are authenticated with [Options.Authenticator] (a
// ws.Authenticator can be given as it is; an error answers 401). A context
// and its tasks belong to the principal that started it: another
// principal's task or context is answered -32001, as an unknown one.
//
// Each context keeps its last [Options.MaxTasks] tasks, each with its
// last [Options.MaxHistory] messages. On a router with a conversation
// store the history is saved with the conversation, atomically with each
// request ([chat.Conversation.SetExtra]); given the same store as
// [Options.Store], a handler answers GetTask, tasks/get and ListTasks of a
// context it does not hold (after a restart, or on another node) from it.
// The next message of such a context is answered -32001, unless the
// handlers share [Options.TokenKey]: the resume token of each context's
// conversation is then saved with it, sealed with that key, and a handler
// that does not hold the context resumes the conversation from the store
// (once the first node let go of it, or its lease ended when it died),
// with its beans, memory and task history.
//
// On a router with a store, a task is saved when its request starts,
// before its route runs ([chatimpl.Checkpoint]: its id, context, state
// working and history with the user's message; the request's own save
// replaces the record with the task's end). A handler that reads the
// record of a task it does not hold answers it working while a node holds
// the conversation's lease (the task runs there), and failed once none
// does: its node died (or its save failed) before the task ended. Its
// status message then says it was interrupted (no internal error text),
// GetTask, tasks/get and ListTasks answer it so, a resubscribe answers
// -32004 naming that final state, and it is never run again: a message on
// its taskId is refused (-32004), the same message sent again is a new
// task, and the node that resumes the context keeps it failed in the
// context's history. A task whose record the store refuses is not run: it
// fails Unavailable.
//
// The events of a stream wait in a bounded buffer
// ([Options.MaxBufferedEvents]); a client that does not read while it
// fills has its stream cut, the task going on.
package a2aserver
