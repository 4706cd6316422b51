// Package chat is the core runtime of chatgen: nestable chat scopes carried
// by context.Context, scoped beans, and the router that serves chat routes
// to clients.
//
// The examples are the quickest way in. Applications need only the first
// section below; the other two say what runtime packages and transports
// call, which applications do not need to. What only generated code calls
// is in runtime/chatimpl.
//
// # For applications
//
// A conversation is a stack of scopes. [Begin] starts one and returns a
// context that carries it; [Push] and [PushRoute] start nested scopes;
// [Pop] destroys the innermost scope; [End] ends the whole conversation.
// [ID], [Depth] and [Active] describe the current scope, and the
// [Observer] of [BeginOptions] is told about each scope's lifecycle. Beans
// declared with //chat:scoped live in those scopes, for as long as their
// [Kind] says (see [BeanOptions]), and are reached through generated proxies and accessors.
// [WithPackages] gives a conversation the registrations (what a package's
// generated Register returns) that build beans needing application
// dependencies.
//
// A [Router], from [NewRouter], serves the routes of the packages it is
// given. Inside a route, [Response] sends events to the client, [Request]
// holds the request data, [Route], [CurrentRoute], [Execute] and
// [ExecuteRoute] move between routes, and [ScheduleWipe], [AbortWipe] and
// [ClearMemory] act on the scope's chat memory. A route error that no
// //chat:catch handler takes fails the request with a [Failure]; the Err*
// failures match it with errors.Is. [RouterOptions] RouteHooks ([RouteHook])
// wrap every request, seeing its route, data and outcome ([FailureOf]);
// [ConversationID] names a conversation by its top scope.
//
// A [Client] opens sessions ([Session]) on a router: [NewLocalClient] in the
// same process, ws.Dial over a websocket. A [SessionBuilder] registers the
// session's event handlers. Authentication puts a [Principal] (a [User],
// for example) in the context with [WithPrincipal]; routes with roles check
// it.
//
// # For runtime packages
//
// Generated code and runtime packages (runtime/ai, runtime/mcptools)
// declare beans with [NewBean] ([BeanOptions] says how they live) and
// reach them with [Bean.Lookup] and [Bean.MustLookup], around
// [BeginInvocation] for invocation-scoped beans; they send route results
// with [SendValue], [ResponseChannel.Stream] and
// [ResponseChannel.StreamWithErrors]. The AI services register their chat
// memory with [AttachMemory] (it is a chatimpl.ScopedMemory) and use
// [InvocationID] and [OnInvocationEnd] for invocation-scoped memory.
// Durable checkpoints inside a request are runtime/chatimpl's Checkpoint
// and Interrupted.
//
// # For transports
//
// A server transport (runtime/ws is one) calls [Router.Connect] for each
// client session and [Conversation.Handle] for each request, built with
// [NewTextRequest] or [NewDataRequest], and writes out the events handed
// to its sink. A client transport implements [Connector] and [Session]
// (and a Resume method for [SessionBuilder.Resume]), starts sessions with
// [NewSessionBuilder], delivers received events — their Data the JSON
// text as a json.RawMessage — with [Handlers.Dispatch], and ends
// asynchronous requests with [Call.Finish] on a new(Call). Event types
// and data keys are named in runtime/protocol. [Router.Manifest]
// describes the routes to clients (runtime/jsroutes emits it as a typed
// module; runtime/ws serves it to browsers).
//
// # Concurrency
//
// Everything here is safe for concurrent use. Different conversations never
// see each other's scopes or beans.
package chat
