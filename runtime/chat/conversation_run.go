package chat

import (
	"context"
	"errors"
	"iter"
)

// Run runs fn as one request of the conversation on the scope scopeID,
// in place of the route of that scope: everything else is as for
// [Conversation.Handle]. The scope's route must be one the principal
// may use (its roles hold), the router's hooks wrap fn as they wrap a
// route, fn's events go to sink in order, an error fn returns fails the
// request as a route's does (the error handlers see it), and a durable
// conversation saves its state after fn as after a route. fn runs with
// the request's context: the scope's beans ([Bean.Lookup]), its
// response channel ([Response]) and the other routes ([Execute]) are
// reachable through it, as from a route.
//
// Transports use it to run what is not a route within a conversation: a
// tool of a //chat:tools box called by an MCP client, or a route
// ([Execute]) with a look at the scope's state before and after.
func (c *Conversation) Run(ctx context.Context, scopeID string, req *RouteRequest, sink func(Event) error, fn func(ctx context.Context) error) (string, *Failure) {
	if fn == nil {
		return c.ScopeID(), fail(ErrBadRequest, errors.New("chat: Run needs a function"))
	}
	return c.handle(ctx, scopeID, req, &runSink{funcSink: sink, fn: fn})
}

// A runSink is the sink of a request of [Conversation.Run]: it carries
// the function that runs in place of the route.
type runSink struct {
	funcSink
	fn func(ctx context.Context) error
}

// Scopes yields the id and the route (the route its next request runs)
// of each scope of the conversation's stack in ctx, its top scope first
// and its current scope last, as they were when Scopes was called; it
// yields nothing without an active scope.
func Scopes(ctx context.Context) iter.Seq2[string, string] {
	type scopeInfo struct{ id, route string }
	var stack []scopeInfo
	if st := stackFrom(ctx); st != nil {
		st.mu.Lock()
		if cur := st.current.Load(); cur != nil {
			stack = make([]scopeInfo, cur.depth+1)
			for s := cur; s != nil; s = s.parent {
				if s.depth < len(stack) {
					stack[s.depth] = scopeInfo{s.id, s.route}
				}
			}
		}
		st.mu.Unlock()
	}
	return func(yield func(string, string) bool) {
		for _, s := range stack {
			if !yield(s.id, s.route) {
				return
			}
		}
	}
}

// Peek returns the instance of the bean for ctx when one exists (as
// [Bean.Lookup] would find it, a durable bean's saved state being
// restored), without creating one: ok is false when there is none, or
// without an active scope. Invocation-scoped beans are not peeked: ok is
// false.
func (b *Bean[T]) Peek(ctx context.Context) (v T, ok bool) {
	if b.info.kind == KindInvocation {
		return v, false
	}
	st := stackFrom(ctx)
	if st == nil {
		return v, false
	}
	s := st.current.Load()
	for p := s; p != nil; p = p.parent {
		if found, ok := p.find(&b.info); ok {
			return found.(T), true
		}
		if b.info.durable {
			if raw := p.saved(b.info.name); raw != nil {
				restored, err := restoreInScope(ctx, p, b, raw)
				return restored, err == nil
			}
		}
		if b.info.kind == KindPerChat {
			break
		}
	}
	return v, false
}
