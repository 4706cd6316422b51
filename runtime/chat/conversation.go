package chat

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// A Conversation is one client session's conversation on a Router.
// Transports create one per session and pass it each request; requests are
// handled one at a time.
type Conversation struct {
	conversation // the conversation in this process and its request path

	// durable, on a router with a store, saves the conversation around
	// each request (durable_conversation.go); nil without a store.
	durable *durableConv
}

// conversation is a conversation in this process: its scopes, and the
// request path that runs each request on the route of the scope the
// client names (handle: target, serve, result) and its end (close). On a
// router with a store, the durable layer wraps both: handleDurable and
// closeDurable (durable_conversation.go).
type conversation struct {
	router    *Router
	id        string
	stack     *scopeStack
	principal Principal

	mu     sync.Mutex // one request at a time; Close waits for it
	closed bool
	// The route of the last request and its spec (guarded by mu): most
	// requests run the route the one before ran, and need no lookup.
	lastRoute string
	lastSpec  *chatimpl.RouteSpec
}

// ID returns the id of the conversation: the id of its top scope, the same
// for the conversation's whole life (across resumes too).
func (c *Conversation) ID() string { return c.id }

// ScopeID returns the id of the conversation's current scope, or "" once
// it ended.
func (c *Conversation) ScopeID() string { return c.currentScope() }

// currentScope returns the id of the current scope, or "" once the
// conversation ended.
func (c *conversation) currentScope() string {
	if s := c.stack.current.Load(); s != nil {
		return s.id
	}
	return ""
}

// Handle runs one request on the scope scopeID: it must be the current
// scope of this conversation or one of its parents (nested scopes above it
// are popped first: the client is where it says it is). Events go to sink,
// in order, before Handle returns. It returns the id of the scope current
// after the route ran and, when the request failed, the failure; Handle
// never panics because of a route. The route sees a copy of req (nil is an
// empty request): Handle keeps no reference to it.
func (c *Conversation) Handle(ctx context.Context, scopeID string, req *RouteRequest, sink func(Event) error) (string, *Failure) {
	return c.handle(ctx, scopeID, req, funcSink(sink))
}

// handle is Handle with the events going to sink. req is copied (nil is
// an empty request): it does not escape, so a caller may keep it on its
// stack.
func (c *Conversation) handle(ctx context.Context, scopeID string, req *RouteRequest, sink eventSink) (string, *Failure) {
	if c.durable != nil {
		return c.handleDurable(ctx, scopeID, req, sink)
	}
	return c.conversation.handle(ctx, scopeID, req, sink)
}

// Close ends the conversation: every scope, its beans and chat memory. It
// waits for a request in progress to finish. Closing twice does nothing.
func (c *Conversation) Close(ctx context.Context) error {
	if c.durable != nil {
		return c.closeDurable(ctx)
	}
	return c.conversation.close(ctx)
}

// handle runs one request (see [Conversation.Handle]).
func (c *conversation) handle(ctx context.Context, scopeID string, req *RouteRequest, sink eventSink) (string, *Failure) {
	c.mu.Lock()
	defer c.mu.Unlock()
	target, scope, f := c.target(scopeID)
	if f != nil {
		return scope, f
	}
	return c.result(c.serve(ctx, target, req, sink))
}

// target returns the scope a request on scopeID runs on: the current
// scope or one of its parents. When there is none, it returns the
// request's result instead: the scope current now and the failure. c.mu
// is held.
func (c *conversation) target(scopeID string) (target *scope, current string, f *Failure) {
	cur := c.stack.current.Load()
	if c.closed || cur == nil {
		return nil, "", fail(ErrSessionNotActive, errors.New("the conversation has ended"))
	}
	for s := cur; s != nil; s = s.parent {
		if s.id == scopeID {
			return s, "", nil
		}
	}
	return nil, cur.id, fail(ErrSessionNotActive, fmt.Errorf("scope %q is not active in this conversation", scopeID))
}

// A turn is a request that ran: its state, the scope it ran on and that
// scope's route, and what the route left, the current scope and its error.
type turn struct {
	rs     *requestState
	target *scope
	route  string
	after  string // the scope current after the route ran; "" when it ended the conversation
	err    error
}

// serve runs a request on target, with its events going to sink: it pops
// the scopes above target and runs the route of target. c.mu is held.
func (c *conversation) serve(ctx context.Context, target *scope, req *RouteRequest, sink eventSink) turn {
	// One allocation holds the request and the context binding it adds.
	rs := &requestState{conv: c}
	if req != nil {
		rs.req = *req
	}
	rs.resp.sink = sink
	if r, ok := sink.(*runSink); ok {
		rs.run = r.fn
	}
	bind := &rs.ctx.bind
	if b := bindingFrom(ctx); b != nil {
		*bind = *b
	}
	bind.stack = c.stack
	bind.providers = c.router.providers
	bind.req = rs
	if bind.principal == nil {
		bind.principal = c.principal
	}
	rs.ctx.Context = ctx
	ctx = &rs.ctx
	for s := c.stack.current.Load(); s != nil && s != target; s = c.stack.current.Load() {
		if err := Pop(ctx); err != nil {
			c.router.logger.ErrorContext(ctx, "chat: popping scopes above the requested one", "scope", s.id, "err", err)
		}
	}

	c.stack.mu.Lock()
	route := target.route
	c.stack.mu.Unlock()
	var err error
	if c.router.hooked != nil {
		err = c.router.runHooked(ctx, rs, route)
	} else {
		err = serveRoute(ctx, route, &rs.req)
	}
	c.router.runWipes(ctx, rs)
	rs.resp.close()
	return turn{rs: rs, target: target, route: route, after: c.currentScope(), err: err}
}

// result returns what Handle returns for t: the scope current after it
// and its failure, logged.
func (c *conversation) result(t turn) (string, *Failure) {
	ctx := &t.rs.ctx
	if t.err != nil {
		f := failureOf(t.rs.ctx.Context, t.err)
		if t.rs.ctx.Context.Err() != nil {
			// The caller gave up (its context ended): not a server error.
			c.router.logger.InfoContext(ctx, "chat: request abandoned: the caller's context ended", "scope", t.target.id, "route", t.rs.failedRoute(t.route), "reason", f.Reason, "err", t.err)
		} else {
			c.router.logger.ErrorContext(ctx, "chat: request failed", "scope", t.target.id, "route", t.rs.failedRoute(t.route), "reason", f.Reason, "err", t.err)
		}
		return t.after, f
	}
	if t.after == "" {
		return "", fail(ErrSessionNotActive, errors.New("the route ended the conversation"))
	}
	return t.after, nil
}

// close ends the conversation (see [Conversation.Close]).
func (c *conversation) close(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.end() {
		return nil
	}
	return c.endScopes(ctx)
}

// end marks the conversation closed, and reports whether it was open.
// c.mu is held.
func (c *conversation) end() bool {
	if c.closed {
		return false
	}
	c.closed = true
	c.router.conversations.Add(-1)
	return true
}

// endScopes ends every scope of the conversation, their beans and chat
// memories. c.mu is held.
func (c *conversation) endScopes(ctx context.Context) error {
	if c.stack.current.Load() == nil {
		return nil
	}
	return End(rebind(ctx, func(b *binding) { b.stack = c.stack; b.providers = c.router.providers }))
}
