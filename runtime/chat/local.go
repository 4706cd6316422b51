package chat

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// A LocalClient talks to a Router in the same process, with no transport:
// handlers run on the goroutine that runs the request. It implements
// [Client]. A request whose ctx is done before it starts does not run: it
// fails with ctx's error. Cancelling the ctx of a request stops it: the
// route's context is cancelled at once, with a cause matching
// [ErrCancelled] (see [Cancelled]), and the request fails with a
// *[Failure] whose reason is Cancelled and which matches context.Canceled
// too; a request past its deadline fails with context.DeadlineExceeded.
//
// Handlers may call ChatAsync, SendAsync and Close on their session (and
// Close on the client); a synchronous Chat or Send of the same session
// from a handler would wait for the request that is running the handler,
// and so never return.
type LocalClient struct {
	router *Router

	mu       sync.Mutex
	sessions map[*localSession]struct{}
	closed   bool
}

var (
	_ Client  = (*LocalClient)(nil)
	_ resumer = (*LocalClient)(nil)
)

// NewLocalClient returns a client of router.
func NewLocalClient(router *Router) *LocalClient {
	return &LocalClient{router: router, sessions: map[*localSession]struct{}{}}
}

// Builder returns a builder for a new session.
func (c *LocalClient) Builder() *SessionBuilder { return NewSessionBuilder(c) }

// Connect implements [Connector]; use Builder().Connect.
func (c *LocalClient) Connect(ctx context.Context, route string, h *Handlers) (Session, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrSessionClosed
	}
	conv, err := c.router.Connect(ctx, route)
	if err != nil {
		return nil, err
	}
	return c.add(ctx, conv, h)
}

// Resume implements [Resumer]; use Builder().Resume. Failures are
// *[Failure]s without their server-side cause, like those of requests.
func (c *LocalClient) Resume(ctx context.Context, conversationID, token string, h *Handlers) (Session, error) {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, ErrSessionClosed
	}
	conv, err := c.router.Resume(ctx, conversationID, token)
	if err != nil {
		var f *Failure
		if errors.As(err, &f) {
			return nil, &Failure{Reason: f.Reason} // the cause stays on the server side
		}
		return nil, err
	}
	return c.add(ctx, conv, h)
}

// add makes a session of conv.
func (c *LocalClient) add(ctx context.Context, conv *Conversation, h *Handlers) (Session, error) {
	s := &localSession{client: c, conv: conv, h: h, scopeID: conv.ScopeID()}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.Join(ErrSessionClosed, conv.Close(ctx))
	}
	c.sessions[s] = struct{}{}
	c.mu.Unlock()
	return s, nil
}

// Close ends every session and destroys their scopes.
func (c *LocalClient) Close() error {
	c.mu.Lock()
	c.closed = true
	sessions := make([]*localSession, 0, len(c.sessions))
	for s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}

// Detach ends every session without ending their conversations: with a
// router that has a [chatstore.ConversationStore], they stay in the store, to be
// resumed (by this process after a restart, say) with
// Builder().Resume and each session's ConversationID and ResumeToken.
// Without a store it is Close.
func (c *LocalClient) Detach() error {
	c.mu.Lock()
	c.closed = true
	sessions := make([]*localSession, 0, len(c.sessions))
	for s := range c.sessions {
		sessions = append(sessions, s)
	}
	c.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		errs = append(errs, s.end(true))
	}
	return errors.Join(errs...)
}

// localSession runs requests in arrival order. An idle session runs a
// synchronous request on the caller's goroutine; queued requests are run
// by one goroutine that exists only while the queue is not empty. It is
// the eventSink of its requests: events go to its handlers on the
// goroutine that sends them.
type localSession struct {
	client *LocalClient
	conv   *Conversation
	h      *Handlers

	mu      sync.Mutex
	queue   []*localCall
	running bool // a goroutine is running the session's requests
	closed  bool
	scopeID string
	// closeAfterRun: Close was called while a handler ran; the request in
	// progress closes the conversation when it ends.
	closeAfterRun bool
	detach        bool // the session ends by detaching its conversation (LocalClient.Detach)

	inHandler atomic.Int32 // handlers running now
}

type localCall struct {
	ctx  context.Context
	req  *RouteRequest
	call *Call
}

func (s *localSession) ScopeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scopeID
}

func (s *localSession) ConversationID() string { return s.conv.ID() }

func (s *localSession) ResumeToken() string { return s.conv.ResumeToken() }

func (s *localSession) Chat(ctx context.Context, text string) error {
	req := RouteRequest{userMessage: text, hasUser: true} // not escaping: no allocation
	return s.do(ctx, &req)
}

func (s *localSession) Send(ctx context.Context, data any) error {
	req, err := NewDataRequest(data)
	if err != nil {
		return err
	}
	return s.do(ctx, req)
}

func (s *localSession) ChatAsync(ctx context.Context, text string) *Call {
	return s.enqueue(ctx, NewTextRequest(text))
}

func (s *localSession) SendAsync(ctx context.Context, data any) *Call {
	req, err := NewDataRequest(data)
	if err != nil {
		c := new(Call)
		c.Finish(err)
		return c
	}
	return s.enqueue(ctx, req)
}

// do runs a request and waits for it. An idle session runs it on the
// caller's goroutine, with one lock to start and one to finish.
func (s *localSession) do(ctx context.Context, req *RouteRequest) error {
	if ctx.Err() != nil {
		return ctxError(ctx)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrSessionClosed
	}
	if s.running {
		queued := *req // req may live on the caller's stack
		lc := &localCall{ctx: ctx, req: &queued, call: new(Call)}
		s.queue = append(s.queue, lc)
		s.mu.Unlock()
		if err := lc.call.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return ctxError(ctx) // it does not run (drain skips it)
			}
			return err
		}
		return nil
	}
	s.running = true
	scope := s.scopeID
	s.mu.Unlock()

	after, err := s.run(ctx, scope, req)

	s.mu.Lock()
	closeConv := s.ended(after)
	more := len(s.queue) > 0
	s.running = more
	s.mu.Unlock()
	if closeConv {
		s.closeConversation()
	}
	if more {
		go s.drain()
	}
	return err
}

func (s *localSession) enqueue(ctx context.Context, req *RouteRequest) *Call {
	lc := &localCall{ctx: ctx, req: req, call: new(Call)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		lc.call.Finish(ErrSessionClosed)
		return lc.call
	}
	s.queue = append(s.queue, lc)
	start := !s.running
	s.running = true
	s.mu.Unlock()
	if start {
		go s.drain()
	}
	return lc.call
}

// drain runs the queued requests, then stops being the running goroutine.
func (s *localSession) drain() {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.running = false
			s.mu.Unlock()
			return
		}
		lc := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		scope := s.scopeID
		s.mu.Unlock()
		if lc.ctx.Err() != nil {
			lc.call.Finish(ctxError(lc.ctx))
			continue
		}
		after, err := s.run(lc.ctx, scope, lc.req)
		s.mu.Lock()
		closeConv := s.ended(after)
		s.mu.Unlock()
		if closeConv {
			s.closeConversation()
		}
		lc.call.Finish(err)
	}
}

// ended records the end of a request that left the session in the scope
// after ("" when there is none) and reports whether a handler closed the
// session during it, so that the conversation must be closed now. s.mu is
// held.
func (s *localSession) ended(after string) (closeConv bool) {
	if after != "" {
		s.scopeID = after
	}
	closeConv = s.closeAfterRun
	s.closeAfterRun = false
	return closeConv
}

// closeConversation ends the conversation of a session that a handler
// closed during a request.
func (s *localSession) closeConversation() {
	if err := s.finish(); err != nil {
		s.client.router.logger.Error("chat: closing a session", "err", err)
	}
}

// run handles one request on scope; only the running goroutine calls it.
// It returns the scope the request left the session in. A request that
// failed because ctx ended fails with ctx's error (see ctxError), as a
// call on any context-aware API does.
func (s *localSession) run(ctx context.Context, scope string, req *RouteRequest) (string, error) {
	rctx := ctx
	if ctx.Done() != nil {
		var stop func()
		rctx, stop = stoppable(ctx)
		defer stop()
	}
	after, f := s.conv.handle(rctx, scope, req, s)
	if f != nil {
		if ctx.Err() != nil {
			return after, ctxError(ctx)
		}
		return after, &Failure{Reason: f.Reason} // the cause stays on the server side
	}
	return after, nil
}

// stoppable returns the context of a request made with ctx, and the
// function that releases it: it ends when ctx does, and when ctx is
// cancelled (rather than past its deadline), its cause matches
// [ErrCancelled], so that the route and the services it calls see a
// stop ([Cancelled]) and keep the interrupted turn, as on the websocket
// transport. Its values and deadline are ctx's.
func stoppable(ctx context.Context) (context.Context, func()) {
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel(fail(ErrCancelled, context.Cause(ctx)))
			return
		}
		cancel(context.Cause(ctx))
	})
	return &stopContext{Context: rctx, parent: ctx}, func() {
		stop()
		cancel(nil)
	}
}

// stopContext is the context stoppable returns: a context ended after
// parent, with parent's deadline and error.
type stopContext struct {
	context.Context // ends after parent, with its cause
	parent          context.Context
}

// Deadline returns parent's deadline.
func (c *stopContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Err returns parent's error once the context has ended.
func (c *stopContext) Err() error {
	err := c.Context.Err()
	if err == nil {
		return nil
	}
	if perr := c.parent.Err(); perr != nil {
		return perr
	}
	return err
}

// ctxError is the error of a request whose context ended: a cancelled
// one fails with [ErrCancelled], wrapping ctx's error (so that it matches
// context.Canceled too); one past its deadline with ctx's error.
func ctxError(ctx context.Context) error {
	err := ctx.Err()
	if errors.Is(err, context.Canceled) {
		return &Failure{Reason: ErrCancelled.Reason, Err: err}
	}
	return err
}

// event implements eventSink.
func (s *localSession) event(ev Event) error {
	s.inHandler.Add(1)
	defer s.inHandler.Add(-1)
	s.h.Dispatch(ev)
	return nil
}

// text implements eventSink.
func (s *localSession) text(typ, text string) error {
	s.inHandler.Add(1)
	defer s.inHandler.Add(-1)
	s.h.dispatchText(typ, text)
	return nil
}

// Close ends the session's conversation after the request in progress;
// queued requests fail with ErrSessionClosed. Called from one of the
// session's own handlers, it returns at once and the conversation ends
// when the request that is delivering the event does.
func (s *localSession) Close() error { return s.end(false) }

// end is Close, or, with detach, the same without ending the conversation
// (see [LocalClient.Detach]).
func (s *localSession) end(detach bool) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	queued := s.queue
	s.queue = nil
	deferClose := s.running && s.inHandler.Load() > 0
	s.closeAfterRun = deferClose
	s.detach = detach
	s.mu.Unlock()
	for _, lc := range queued {
		lc.call.Finish(ErrSessionClosed)
	}
	s.client.mu.Lock()
	delete(s.client.sessions, s)
	s.client.mu.Unlock()
	if deferClose {
		return nil
	}
	return s.finish()
}

// finish closes or detaches the conversation of an ended session.
func (s *localSession) finish() error {
	s.mu.Lock()
	detach := s.detach
	s.mu.Unlock()
	if detach {
		return s.conv.Detach(context.Background())
	}
	return s.conv.Close(context.Background())
}
