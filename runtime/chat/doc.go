// Package chat is the core runtime of chatgen: nestable chat scopes carried
// by context.Context, scoped beans, and (with the routes) the router, events,
// the route context and the local client.
//
// A conversation is a stack of scopes. [Begin] starts one and returns a
// context that carries it; [Push] and [PushRoute] start nested scopes;
// [Pop] destroys the innermost scope; [End] ends the whole conversation.
// Beans declared with //chat:scoped live in those scopes and are reached
// through generated proxies and accessors that call [Lookup].
//
// Everything here is safe for concurrent use. Different conversations never
// see each other's scopes or beans.
package chat
