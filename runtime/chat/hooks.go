package chat

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// A RouteHandler handles one request: it runs route with req, in ctx, and
// returns the request's outcome: nil, or the error the request fails with
// once the error handlers (//chat:catch) had their turn. [FailureOf] gives
// the [Failure] the client receives for it.
type RouteHandler func(ctx context.Context, route string, req *RouteRequest) error

// A RouteHook wraps the handling of every request of a router, in the
// net/http middleware style: it gets the next handler and returns the one
// that runs in its place. A hook sees the route (the current route of the
// scope the request is for, before it runs), the request and the outcome,
// and may act before and after calling next: time it, trace it, log it,
// refuse it (return an error without calling next), change the request
// the route sees (pass another to next), or change the context the route
// runs with (a hook must derive it from the one it is given: a context
// without the request fails the request).
//
// Hooks are given in [RouterOptions.RouteHooks]; the first is the
// outermost: it sees the request first and the outcome last. A request
// that names a scope the conversation does not have fails with
// SessionNotActive before any hook runs. A hook that panics fails the
// request with ServerError, like a route that panics; the conversation
// goes on.
type RouteHook func(next RouteHandler) RouteHandler

// FailureOf returns the failure a request fails with when its route (or a
// hook) returns err: nil for nil, otherwise a [Failure] whose Reason is
// sent to the client (a Failure in err's chain, BadRequest for a
// [BadRequestError], StreamingFailure for a [StreamError], otherwise
// ServerError).
func FailureOf(err error) *Failure {
	if err == nil {
		return nil
	}
	return reasonOf(err)
}

// errHookContext is the error of a request whose route hook called next
// with a context that does not carry the request.
var errHookContext = errors.New("chat: a route hook called next with a context not derived from the request's")

// chainRouteHooks returns the handler of a router with hooks: the hooks
// around serveRoute, the first outermost.
func chainRouteHooks(hooks []RouteHook) RouteHandler {
	h := RouteHandler(serveRoute)
	for i := len(hooks) - 1; i >= 0; i-- {
		if hooks[i] != nil {
			h = hooks[i](h)
		}
	}
	return h
}

// serveRoute is the innermost handler: it runs route for the request in
// ctx (with req, when a hook passed another) and offers its error to the
// error handlers. A route that cannot run (unknown, or forbidden to the
// principal) fails as such: error handlers only see errors of routes that
// ran.
func serveRoute(ctx context.Context, route string, req *RouteRequest) error {
	rs := requestFrom(ctx)
	if rs == nil {
		return errHookContext
	}
	if req != &rs.req {
		rs.req = RouteRequest{}
		if req != nil {
			rs.req = *req
		}
	}
	c := rs.conv
	if route != c.lastRoute || c.lastSpec == nil {
		c.lastRoute, c.lastSpec = route, c.router.routes[route]
	}
	spec, err := c.router.check(ctx, route, c.lastSpec)
	if err != nil {
		return err
	}
	if rs.run != nil && rs.depth == 0 {
		// Conversation.Run: its function runs in place of the route.
		s := *spec
		s.Handle = rs.run
		spec = &s
	}
	if err := c.router.call(ctx, rs, spec); err != nil {
		if errors.Is(err, ErrPaused) {
			return nil // the route waits for the user: the request completes
		}
		return c.router.handleError(ctx, rs, err)
	}
	return nil
}

// runHooked runs the request through the router's hooks, recovering a
// hook's panic as a *PanicError.
func (r *Router) runHooked(ctx context.Context, rs *requestState, route string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("chat: a route hook panicked: %w", &PanicError{Value: v, Stack: debug.Stack()})
		}
	}()
	return r.hooked(ctx, route, &rs.req)
}

// ConversationID returns the id of the top scope of the conversation in
// ctx: it names the conversation for its whole life, whichever scope is
// current (OpenTelemetry's gen_ai.conversation.id). Without an active
// scope the error matches [ErrNotActive].
func ConversationID(ctx context.Context) (string, error) {
	s := currentScope(ctx)
	if s == nil {
		return "", notActive("conversation id")
	}
	for s.parent != nil {
		s = s.parent
	}
	return s.id, nil
}
