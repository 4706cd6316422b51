package ws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// session is one chatId of a connection: its conversation and a FIFO of
// requests. The requests are run by a pool worker while the queue is not
// empty, so an idle session costs no goroutine.
type session struct {
	c      *conn
	id     string
	idJSON []byte // id as a JSON string
	conv   *chat.Conversation
	sink   func(chat.Event) error // s.deliver, made once
	timer  *time.Timer            // idle expiry
	dur    *durableSession        // nil unless the conversation is durable (durable.go)

	// The frames of the running request go out under heldMu. The last
	// event is held back briefly, so that it goes out with the next event
	// or the terminator in one write (BenchmarkLoad: a turn's Message and
	// Completed frames cost one write(2), not two).
	heldMu    sync.Mutex
	current   *request        // the request whose frames may be sent; nil once it is cut off
	requestID json.RawMessage // current's requestId
	heldEvent []byte          // the frame held back
	heldTimer *time.Timer     // sends heldEvent after heldDelay

	mu    sync.Mutex // taken before heldMu
	queue []*request
	// The context of the session's requests (see requestContext), made
	// when a request starts; with RequestTimeout, shared by the requests
	// that start early enough for its deadline.
	reqCtx      context.Context
	reqCancel   context.CancelCauseFunc
	reqDeadline time.Time
	reqTimer    *time.Timer // answers RequestTimeout at reqDeadline
	running     bool        // a worker runs the queue
	busy        bool        // the worker is running a request
	closing     bool        // Disconnect, expiry, the conversation ended or the connection closed
	finished    bool        // the conversation is closed
	keep        bool        // detach the conversation rather than close it (durable.go)
	last        time.Time
}

type request struct {
	scopeID   string
	data      json.RawMessage // parsed by the session's worker (routeRequest)
	requestID json.RawMessage
	size      int64           // counted in the connection's queued bytes while it waits
	ctx       context.Context // its context, once it runs
}

// errCutOff is returned to a route sending an event after its request was
// cut off: it timed out, or its session was disconnected.
var errCutOff = errors.New("ws: the request has ended (timed out or disconnected): its events are dropped")

func newSession(c *conn, id string, idJSON []byte, conv *chat.Conversation) *session {
	s := &session{c: c, id: id, idJSON: idJSON, conv: conv, last: time.Now()}
	s.sink = s.deliver
	return s
}

// enqueue queues r; the caller holds c.mu. It returns a failure reason
// and detail when the request is refused, and start = true when the
// caller must run s.work (on a pool worker): the session was idle.
func (s *session) enqueue(r *request) (start bool, reason, detail string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false, chat.ErrSessionNotActive.Reason, "the session has ended"
	}
	// The request running and those waiting: one may run, MaxQueued wait.
	outstanding := len(s.queue)
	if s.busy {
		outstanding++
	}
	if limit := s.c.srv.opts.MaxQueued; outstanding > limit {
		return false, ErrTooManyRequests.Reason, fmt.Sprintf("more than %d requests queued", limit)
	}
	if !s.running {
		// The session is idle: the request runs at once, it does not
		// wait.
		s.queue = append(s.queue, r)
		s.running = true
		s.c.workers.Add(1)
		return true, "", ""
	}
	// The connection's waiting bytes only grow under c.mu: checking then
	// adding is exact.
	r.size = int64(len(r.data) + len(r.requestID) + len(r.scopeID))
	if limit := s.c.srv.opts.MaxQueuedBytes; limit > 0 {
		if q := s.c.queued.Load(); q > 0 && q+r.size > limit {
			return false, ErrTooManyRequests.Reason, fmt.Sprintf("more than %d bytes of requests waiting on this connection", limit)
		}
	}
	s.c.queued.Add(r.size)
	s.queue = append(s.queue, r)
	return false, "", ""
}

// dropQueueLocked empties the queue and returns what it held; s.mu is
// held.
func (s *session) dropQueueLocked() []*request {
	q := s.queue
	s.queue = nil
	for _, r := range q {
		s.c.queued.Add(-r.size)
	}
	return q
}

// work runs the queued requests, in order, and returns when the queue is
// empty.
func (s *session) work() {
	defer s.c.workers.Done()
	for {
		s.mu.Lock()
		s.busy = false
		if len(s.queue) == 0 || s.closing {
			s.running = false
			s.last = time.Now()
			closing := s.closing
			s.mu.Unlock()
			if closing {
				s.finishConv()
			}
			return
		}
		// Pop the head in place: the queue is short (at most maxQueued+1)
		// and its array is reused, unless it grew.
		r := s.queue[0]
		n := copy(s.queue, s.queue[1:])
		s.queue[n] = nil
		s.queue = s.queue[:n]
		if n == 0 && cap(s.queue) > 4 {
			s.queue = nil
		}
		s.c.queued.Add(-r.size)
		s.busy = true
		r.ctx = s.requestContext()
		// Under s.mu, so that close either sees the request or keeps it
		// from starting.
		s.heldMu.Lock()
		s.current, s.requestID = r, r.requestID
		s.heldMu.Unlock()
		s.mu.Unlock()
		s.run(r.ctx, r)
	}
}

// requestContext returns the context of a request starting now; s.mu
// is held. It is the connection's, cancelled when the session ends
// (Disconnect), made once per session. With RequestTimeout, it also has
// a deadline between RequestTimeout and RequestTimeout + RequestTimeout/16
// after the request starts: the requests of a session share one context
// while its deadline is far enough, as a context with a deadline per
// request (its timer, the one answering RequestTimeout, their
// allocations) cost a fifth of the server's work for a turn
// (BenchmarkWSTurn). When its deadline passes, the request running with
// it is answered RequestTimeout (deadlinePassed).
func (s *session) requestContext() context.Context {
	parent := s.c.ctx
	if s.dur != nil {
		parent = s.c.turnCtx // a durable turn outlives its connection
	}
	d := s.c.srv.opts.RequestTimeout
	if d <= 0 {
		if s.reqCtx == nil {
			s.reqCtx, s.reqCancel = context.WithCancelCause(parent)
		}
		return s.reqCtx
	}
	now := time.Now()
	if s.reqCtx != nil && s.reqCtx.Err() == nil && !s.reqDeadline.Before(now.Add(d)) {
		return s.reqCtx
	}
	s.takeRequestContextLocked()(nil) // the requests that used it have ended
	s.reqDeadline = now.Add(d + d/16)
	// A cause for Cancel (stop), a deadline for RequestTimeout.
	cctx, cancelCause := context.WithCancelCause(parent)
	ctx, cancelDeadline := context.WithDeadline(cctx, s.reqDeadline)
	s.reqCtx = ctx
	s.reqCancel = func(cause error) {
		cancelCause(cause)
		cancelDeadline()
	}
	s.reqTimer = time.AfterFunc(time.Until(s.reqDeadline), func() {
		<-ctx.Done() // its own timer is due at the same time
		s.deadlinePassed(ctx)
	})
	return ctx
}

// takeRequestContextLocked forgets the requests' context and returns
// the function that cancels it, with a cause (nil: context.Canceled; a
// stopped request's is chat.ErrCancelled); s.mu is held.
func (s *session) takeRequestContextLocked() (cancel func(cause error)) {
	c, t := s.reqCancel, s.reqTimer
	s.reqCtx, s.reqCancel, s.reqTimer = nil, nil, nil
	return func(cause error) {
		if c != nil {
			c(cause)
		}
		if t != nil {
			t.Stop()
		}
	}
}

// heldDelay is the longest an event is held back waiting for company: a
// lone event is not delayed noticeably (TestLoneEventIsNotHeldBack).
const heldDelay = time.Millisecond

// run handles one request and sends its terminator, unless the request
// was cut off meanwhile.
func (s *session) run(ctx context.Context, r *request) {
	req, err := routeRequest(r.data)
	if err != nil {
		detail := err.Error()
		var fl *chat.Failure
		if errors.As(err, &fl) && fl.Err != nil {
			detail = strings.TrimPrefix(fl.Err.Error(), "chat: ")
		}
		s.done()
		s.terminate(r, s.c.buildText(s.idJSON, protocol.EventFailed, chat.ErrBadRequest.Reason, r.requestID, s.conv.ScopeID(), detail))
		return
	}
	if a := s.beforeRun(r); a != nil {
		s.done()
		s.replay(r, a) // a re-sent request: its saved answer is sent again
		return
	}
	after, f := s.conv.Handle(ctx, r.scopeID, req, s.sink)
	s.done()
	var term []byte
	switch {
	case f != nil && ctx.Err() == context.DeadlineExceeded:
		term = s.timeoutFrame(r)
	case f != nil:
		term = s.c.buildText(s.idJSON, protocol.EventFailed, f.Reason, r.requestID, after, failureDetail(f))
	default:
		term = s.c.buildText(s.idJSON, protocol.EventCompleted, after, r.requestID, "", "")
	}
	s.terminate(r, term)
	if after != "" {
		return
	}
	// The route ended the conversation: the session is over, and the
	// requests queued behind fail.
	s.mu.Lock()
	s.closing = true
	queued := s.dropQueueLocked()
	s.mu.Unlock()
	for _, q := range queued {
		s.c.failed(s.idJSON, q.requestID, chat.ErrSessionNotActive.Reason, "", "the conversation has ended")
	}
	s.c.mu.Lock()
	if s.c.sessions[s.id] == s {
		delete(s.c.sessions, s.id)
	}
	s.c.mu.Unlock()
}

// done records that the running request has returned, before its
// terminator is sent: a client that sends its next request on the
// terminator finds the session idle, not busy (with MaxQueued -1 it would
// be refused).
func (s *session) done() {
	s.mu.Lock()
	s.busy = false
	s.mu.Unlock()
}

// failureDetail is the detail sent with a failure: what was wrong with the
// request's data, for BadRequest; nothing for the other reasons, whose
// causes stay on the server.
func failureDetail(f *chat.Failure) string {
	var bad *chat.BadRequestError
	if f.Reason == chat.ErrBadRequest.Reason && errors.As(f.Err, &bad) {
		return strings.TrimPrefix(bad.Error(), "chat: ")
	}
	return ""
}

// timeoutFrame is the terminator of a request that ran out of time.
func (s *session) timeoutFrame(r *request) []byte {
	d := s.c.srv.opts.RequestTimeout
	return s.c.buildText(s.idJSON, protocol.EventFailed, ErrRequestTimeout.Reason, r.requestID, s.conv.ScopeID(),
		fmt.Sprintf("the request ran longer than %v", d))
}

// deadlinePassed runs when a request context of the session ends. If
// its deadline passed, the request running with it, if any, has run for
// RequestTimeout at least: the client gets the RequestTimeout terminator
// now, whether the route returns or not, and the rest of the request is
// cut off.
func (s *session) deadlinePassed(ctx context.Context) {
	if ctx.Err() != context.DeadlineExceeded {
		return // cancelled: replaced, or the session ended
	}
	s.heldMu.Lock()
	r := s.current
	s.heldMu.Unlock()
	if r == nil || r.ctx != ctx {
		return
	}
	if s.terminate(r, s.timeoutFrame(r)) {
		s.c.log(slog.LevelWarn, "ws: request timed out; its context is cancelled", "chat", s.id, "timeout", s.c.srv.opts.RequestTimeout)
	}
}

// terminate sends term, the terminator of r, after the event held back,
// and cuts r off; if r was cut off already, it drops term. It reports
// whether term was sent.
func (s *session) terminate(r *request, term []byte) bool {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if s.current != r {
		s.c.srv.putFrame(term)
		return false
	}
	s.current = nil
	if held := s.heldEvent; held != nil {
		s.heldEvent = nil
		s.heldTimer.Stop()
		_ = s.c.send(held, term)
	} else {
		_ = s.c.send(term)
	}
	return true
}

// cutOff drops the rest of the running request: the event held back,
// later events and its terminator.
func (s *session) cutOff() {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	s.current = nil
	if held := s.heldEvent; held != nil {
		s.heldEvent = nil
		s.heldTimer.Stop()
		s.c.srv.putFrame(held)
	}
}

// deliver sends one event of the running request: it holds it back and
// sends the one it held before.
func (s *session) deliver(ev chat.Event) error {
	b, err := appendData(appendHead(s.c.srv.getFrame(), s.idJSON, ev.Type), ev)
	if err != nil {
		s.c.srv.putFrame(b)
		return err
	}
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if s.current == nil || s.c.ctx.Err() != nil { // cut off, or the connection is ending
		s.c.srv.putFrame(b)
		return errCutOff
	}
	b = appendTail(appendRendered(b, ev), s.requestID, "", "")
	prev := s.heldEvent
	s.heldEvent = b
	if prev != nil {
		if err := s.c.send(prev); err != nil {
			s.heldEvent = nil
			s.c.srv.putFrame(b)
			return fmt.Errorf("ws: sending %s event: %w", ev.Type, err)
		}
		return nil
	}
	if s.heldTimer == nil {
		s.heldTimer = time.AfterFunc(heldDelay, s.sendHeld)
	} else {
		s.heldTimer.Reset(heldDelay)
	}
	return nil
}

// sendHeld sends the event held back, if any.
func (s *session) sendHeld() {
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if b := s.heldEvent; b != nil {
		s.heldEvent = nil
		_ = s.c.send(b)
	}
}

// close ends the session: queued requests are dropped (no reply, as for
// Disconnect), the running one is cut off (nothing more of it is sent)
// and its context cancelled, then, once it returned, the conversation is
// closed. The running request of a durable conversation that is kept (the
// connection was lost, not closed by Disconnect) is not cancelled: it
// completes and is saved, for the client to find once it resumes
// (docs/durability.md); its session ends when it returns.
func (s *session) close() {
	s.mu.Lock()
	s.closing = true
	s.dropQueueLocked()
	running := s.running
	cancel := func(error) {}
	if s.dur == nil || !s.keep {
		cancel = s.takeRequestContextLocked()
	}
	s.mu.Unlock()
	s.cutOff()
	cancel(nil) // the request running, if any: after cutOff, so that nothing it sends goes out
	if !running {
		s.finishConv() // else the worker does, when the request ends
	}
}

// finishConv closes the conversation, once.
func (s *session) finishConv() {
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		return
	}
	s.finished = true
	timer := s.timer
	cancel := s.takeRequestContextLocked()
	s.mu.Unlock()
	cancel(nil) // releases the context and its timers
	if timer != nil {
		timer.Stop()
	}
	s.sendHeld()
	s.heldMu.Lock()
	if s.heldTimer != nil {
		s.heldTimer.Stop()
	}
	s.heldMu.Unlock()
	if err := s.endConv(context.WithoutCancel(s.c.ctx)); err != nil {
		s.c.log(slog.LevelError, "ws: ending a conversation", "chat", s.id, "err", err)
	}
	s.c.sessionFinished(s)
}

// armTimer starts the idle expiry.
func (s *session) armTimer() {
	if d := s.c.srv.opts.IdleTimeout; d > 0 {
		s.mu.Lock()
		s.timer = time.AfterFunc(d, s.expire)
		s.mu.Unlock()
	}
}

func (s *session) expire() {
	idle := s.c.srv.opts.IdleTimeout
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	if s.running {
		s.timer.Reset(idle)
		s.mu.Unlock()
		return
	}
	if since := time.Since(s.last); since < idle {
		s.timer.Reset(idle - since)
		s.mu.Unlock()
		return
	}
	s.closing = true
	s.keep = true // a durable conversation stays resumable
	s.mu.Unlock()
	s.c.log(slog.LevelInfo, "ws: session expired", "chat", s.id, "idle", idle)
	s.c.mu.Lock()
	if s.c.sessions[s.id] == s {
		delete(s.c.sessions, s.id)
	}
	s.c.mu.Unlock()
	s.finishConv()
}

// stop ends the request requestID of the session (a Cancel frame), if it
// is queued or running: it is answered Failed Cancelled at once, and a
// running one is cut off (nothing more of it is sent) and its context
// cancelled with the cause chat.ErrCancelled, so that the route and the
// services it calls see a stop ([chat.Cancelled]) and return at once;
// the session's next request runs when it has returned. It reports
// whether the session had the request: a Cancel of a request that has
// ended (its terminator was sent, even while the Cancel raced it) or that
// the session never had changes nothing.
func (s *session) stop(requestID []byte) bool {
	s.mu.Lock()
	for i, r := range s.queue {
		if bytes.Equal(r.requestID, requestID) {
			n := copy(s.queue[i:], s.queue[i+1:])
			s.queue[i+n] = nil
			s.queue = s.queue[:i+n]
			s.c.queued.Add(-r.size)
			s.mu.Unlock()
			s.c.failed(s.idJSON, r.requestID, chat.ErrCancelled.Reason, s.conv.ScopeID(), "")
			return true
		}
	}
	s.heldMu.Lock()
	r := s.current
	s.heldMu.Unlock()
	if r == nil || !bytes.Equal(r.requestID, requestID) {
		s.mu.Unlock()
		return false
	}
	return s.stopRunningLocked(r) // unlocks s.mu
}

// stopRunningLocked stops the running request r: it cancels r's context
// with the cause chat.ErrCancelled, then answers r Failed Cancelled and
// cuts it off; s.mu is held, and unlocked. The context ends first so
// that a route that finds itself cut off (errCutOff) sees a stop
// (chat.Cancelled) already. It reports whether r was still running:
// when its terminator was sent meanwhile, that one stands (one
// terminator per request).
func (s *session) stopRunningLocked(r *request) bool {
	// The request's context is the session's shared one: the next
	// request gets a new one.
	if r.ctx != nil && r.ctx == s.reqCtx {
		s.takeRequestContextLocked()(chat.ErrCancelled)
	}
	if !s.terminate(r, s.c.buildText(s.idJSON, protocol.EventFailed, chat.ErrCancelled.Reason, r.requestID, s.conv.ScopeID(), "")) {
		s.mu.Unlock()
		return false
	}
	s.busy = false // a cut-off request does not count against MaxQueued while its route returns
	s.mu.Unlock()
	return true
}

// interrupt stops every request of the session, running and queued, for
// a request that interrupts them ("interrupt": true): each is answered
// Failed Cancelled.
func (s *session) interrupt() {
	s.mu.Lock()
	queued := s.dropQueueLocked()
	s.heldMu.Lock()
	r := s.current
	s.heldMu.Unlock()
	if r != nil {
		s.stopRunningLocked(r) // unlocks s.mu
	} else {
		s.mu.Unlock()
	}
	scope := s.conv.ScopeID()
	for _, q := range queued {
		s.c.failed(s.idJSON, q.requestID, chat.ErrCancelled.Reason, scope, "")
	}
}
