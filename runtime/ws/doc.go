// Package ws is the websocket transport of chatgen: the endpoint serving a
// [chat.Router] to browsers and other clients, the Go websocket client,
// and the JavaScript client.
//
// # Server
//
// [NewServer] returns a [Server], an http.Handler serving the endpoint
// [RoutesPath] (/_chat/routes) and the JavaScript client: at [ScriptPath]
// (/_chat/javascript/chatscopes.js, the Quarkus URL) the classic script,
// or an ES module for a module script, as newer Quarkus versions serve it;
// the ES module at [ModulePath] and TypeScript declarations at
// [TypeScriptPath]. From the router's [chat.Router.Manifest] it serves the
// routes as an ES module typed from the Go code ([RoutesModulePath], with
// declarations at [RoutesTypeScriptPath]; package
// [github.com/chatscopes/chatgen/runtime/jsroutes] writes both), and it serves the import map
// script of newer Quarkus pages ([ImportMapPath]); see docs/browser.md.
// Mount it on any mux:
//
//	srv := ws.NewServer(router, &ws.ServerOptions{Authenticator: auth})
//	mux.Handle("/_chat/", srv)
//	mux.Handle(ws.ImportMapPath, srv) // for pages written for newer Quarkus
//	...
//	httpServer.Shutdown(ctx)
//	srv.Shutdown(ctx) // hijacked connections are not the http.Server's
//
// A replica behind a load balancer serves with [Server.ServeUntilSignal]
// instead, which drains on SIGTERM, and mounts [Server.ReadinessHandler]
// and [Server.LivenessHandler] (docs/deploy.md).
//
// The protocol is the one of Quarkus LangChain4j Chat Scopes (see
// docs/protocol.md): a page written for the Quarkus JavaScript client works
// unchanged. Per connection there is one goroutine, which only waits for
// the client's bytes; the frames are decoded, and the requests run, by a
// pool of worker goroutines shared by the server. Each session has a FIFO
// of requests run one at a time, by a worker only while the queue is not
// empty, so idle sessions cost no goroutine and sessions of one
// connection run independently. Frames are written by whichever goroutine
// finds the connection idle, in order and never interleaved, batched into
// one TCP write when several are ready.
//
// Security and limits: an [Authenticator] puts the principal of the
// connection in the context of its requests (routes with roles= are
// checked against it: Failed "Forbidden"); a scope id is honoured only in
// the session that created it (another session's or connection's scope id
// fails with "SessionNotActive"); browser origins must be the page's own
// unless allowed by [ServerOptions].OriginPatterns; its MaxConnections,
// MaxFrameSize, MaxSessions, MaxQueued, MaxQueuedBytes, RequestTimeout,
// IdleTimeout, WriteTimeout and PingInterval bound what a client can make
// the server hold, and for how long (see docs/protocol.md).
// Malformed frames get a Failed "BadRequest" with a detail when they name
// a chatId (even when they are not valid JSON), and are logged and dropped
// when they do not; the connection keeps working.
//
// A request runs with a context that ends when its deadline
// (RequestTimeout) passes, when its session is disconnected and when its
// connection closes; from then on nothing more of it is sent. Routes and
// tools should return when it ends: the session's next request waits for
// them. [Server.Shutdown] does not wait for them once its own context
// ends.
//
// # Differences from Quarkus
//
//   - Connect to an unknown route fails with "RouteNotFound" (Quarkus sends
//     "Route not found"); an explicit null route is the default route
//     (Quarkus reads it as the route "null").
//   - A ChatRouteMessage is run on the scope it names only if that scope is
//     the session's current scope or one of its parents; Quarkus runs any
//     scope id it is given.
//   - Malformed frames and unknown types get a Failed instead of being
//     ignored or closing the connection.
//   - Additions, which Quarkus clients ignore: an optional "requestId" on
//     client frames, echoed on the request's events and terminator;
//     "scopeId" (the scope current after the failure) and "detail" on
//     Failed frames; the reasons "TooManySessions", "TooManyRequests",
//     "RequestTimeout" and "ShuttingDown".
//
// # Go client
//
// [Dial] returns a [Client], a [chat.Client] with the same Builder and
// Session API as [chat.LocalClient]. Requests of a session are queued and
// sent one at a time (each is sent with the scope id the previous one left
// the session in), events are decoded with [chat.Event.Decode], and a
// connection lost fails pending requests with [ErrConnectionLost].
// [Client.Close] ends the client's conversations; [Client.Detach] leaves
// those the server keeps resumable, by another client, with
// Builder().Resume.
package ws
