package ws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// clientSession is one session of a Client. Its requests are sent one at
// a time: each waits for the terminator of the one before, so it is sent
// with the scope id current after it.
type clientSession struct {
	c      *Client
	id     string
	idJSON []byte
	h      *chat.Handlers

	mu      sync.Mutex
	scopeID string
	convID  string // the top scope id, from Connect's Completed
	token   string // the resume token, when the server keeps conversations
	// resuming: the session waits for the resuming Connect at the head of
	// its queue (client_reconnect.go).
	resuming       bool
	resumeFailures int // resumes refused in a row, for the delays
	queue          []*clientCall
	inflight       *clientCall
	closed         bool
	// detaching: the client is detaching (Client.Detach): nothing more is
	// sent, and resumeAnswer, if set, is closed when the resuming Connect
	// in flight is answered.
	detaching    bool
	resumeAnswer chan struct{}
}

type clientCall struct {
	ctx       context.Context
	connect   bool
	resume    bool // a Connect resuming the session's conversation
	initial   bool // the resume of Builder().Resume, not of a reconnection
	route     string
	data      []byte // the request data, a JSON object
	requestID []byte // as JSON (see Client.reqPrefix); given when first sent, kept when sent again
	call      *chat.Call
	// One delivery across reconnects (guarded by clientSession.mu):
	// delivered counts the events of the answer handed to the handlers;
	// pos counts those received since the request was last sent. A
	// replayed event at a position already delivered is dropped.
	delivered, pos int
	// interrupt: the request stops those pending before it (WithInterrupt).
	interrupt bool
	// stopped (guarded by clientSession.mu): the request was stopped (its
	// context ended, or an interrupting request came) while in flight: its
	// call has ended with Cancelled, a Cancel was sent, and its events are
	// dropped until its terminator, which lets the next request go.
	stopped bool
	// unwatch stops watching ctx (see watch); nil when it is not watched.
	unwatch func() bool
	// sent: the request's frame is queued on the connection, so that a
	// Cancel goes out after it; until then, a stop leaves its Cancel in
	// cancel, for next to send (guarded by clientSession.mu).
	sent   bool
	cancel []byte
}

var _ chat.Session = (*clientSession)(nil)

func (s *clientSession) ScopeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scopeID
}

// Chat sends a request and waits for its end. Cancelling ctx stops the
// request (see [WithInterrupt] for the other way): the server is sent a
// Cancel and Chat returns at once with an error matching
// [chat.ErrCancelled] and context.Canceled (past ctx's deadline:
// context.DeadlineExceeded); no event of the request reaches the
// handlers after that.
func (s *clientSession) Chat(ctx context.Context, text string) error {
	return s.ChatAsync(ctx, text).Wait(context.WithoutCancel(ctx))
}

// Send is Chat with request data; ctx stops it as it stops Chat.
func (s *clientSession) Send(ctx context.Context, data any) error {
	return s.SendAsync(ctx, data).Wait(context.WithoutCancel(ctx))
}

func (s *clientSession) ChatAsync(ctx context.Context, text string) *chat.Call {
	b := make([]byte, 0, len(text)+20)
	b = append(b, `{"userMessage":`...)
	b = appendString(b, text)
	b = append(b, '}')
	return s.request(ctx, b)
}

func (s *clientSession) SendAsync(ctx context.Context, data any) *chat.Call {
	if text, ok := data.(string); ok {
		return s.ChatAsync(ctx, text)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return finishedCall(fmt.Errorf("ws: encoding request data: %w", err))
	}
	if len(b) == 0 || (b[0] != '{' && string(b) != "null") {
		return finishedCall(&chat.Failure{Reason: chat.ErrBadRequest.Reason, Err: fmt.Errorf("request data %T is not a JSON object", data)})
	}
	return s.request(ctx, b)
}

func (s *clientSession) request(ctx context.Context, data []byte) *chat.Call {
	if ctx.Err() != nil {
		return finishedCall(stopError(ctx))
	}
	cc := &clientCall{ctx: ctx, data: data, call: new(chat.Call), interrupt: interrupting(ctx)}
	s.enqueue(cc)
	return cc.call
}

// enqueue queues cc and sends it if no request is in flight. An
// interrupting request first stops those pending.
func (s *clientSession) enqueue(cc *clientCall) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cc.call.Finish(chat.ErrSessionClosed)
		return
	}
	var stopped []*clientCall
	var cancel []byte
	if cc.interrupt {
		stopped, cancel = s.interruptLocked()
	}
	s.queue = append(s.queue, cc)
	if !cc.connect && cc.ctx.Done() != nil {
		s.watch(cc)
	}
	s.mu.Unlock()
	for _, q := range stopped {
		q.call.Finish(&chat.Failure{Reason: chat.ErrCancelled.Reason, Err: errInterrupted})
	}
	if cancel != nil {
		_ = s.c.write(cancel, true)
	}
	s.next(true)
}

// watch makes the end of cc's context stop cc (stop); s.mu is held.
func (s *clientSession) watch(cc *clientCall) {
	cc.unwatch = context.AfterFunc(cc.ctx, func() { s.stop(cc, stopError(cc.ctx)) })
}

// unwatchLocked stops watching cc's context; s.mu is held.
func unwatchLocked(cc *clientCall) {
	if cc.unwatch != nil {
		cc.unwatch()
		cc.unwatch = nil
	}
}

// errInterrupted is the cause of the Cancelled failure of a request an
// interrupting request stopped.
var errInterrupted = errors.New("ws: stopped by an interrupting request")

// stop stops the request cc, on the client's side at once: a queued
// one is dropped; one in flight is sent a Cancel, its events are dropped
// from now on and its terminator, when it comes, lets the next request
// go. Its call ends with err. A request that has ended is left alone.
func (s *clientSession) stop(cc *clientCall, err error) {
	s.mu.Lock()
	for i, q := range s.queue {
		if q == cc {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			unwatchLocked(cc)
			s.mu.Unlock()
			cc.call.Finish(err)
			return
		}
	}
	if s.inflight != cc || cc.stopped {
		s.mu.Unlock()
		return
	}
	frame := s.stopInflightLocked()
	if !cc.sent {
		cc.cancel, frame = frame, nil // next sends it after the request
	}
	s.mu.Unlock()
	cc.call.Finish(err)
	if frame != nil {
		_ = s.c.write(frame, true)
	}
}

// stopInflightLocked marks the request in flight stopped and returns
// its Cancel frame; s.mu is held.
func (s *clientSession) stopInflightLocked() []byte {
	cc := s.inflight
	cc.stopped = true
	unwatchLocked(cc)
	b := make([]byte, 0, 64+len(s.idJSON)+len(cc.requestID))
	b = append(b, `{"type":"Cancel","chatId":`...)
	b = append(b, s.idJSON...)
	b = append(b, `,"requestId":`...)
	b = append(b, cc.requestID...)
	return append(b, '}')
}

// interruptLocked stops the requests pending, for an interrupting
// request: the queued ones are dropped and returned (their calls are
// the caller's to end), and the one in flight, if any, is stopped: its
// call has ended and its Cancel frame is returned. A Connect is left
// alone. s.mu is held.
func (s *clientSession) interruptLocked() (stopped []*clientCall, cancel []byte) {
	kept := s.queue[:0]
	for _, q := range s.queue {
		if q.connect {
			kept = append(kept, q)
			continue
		}
		unwatchLocked(q)
		stopped = append(stopped, q)
	}
	clear(s.queue[len(kept):])
	s.queue = kept
	if cc := s.inflight; cc != nil && !cc.connect && !cc.stopped {
		cancel = s.stopInflightLocked()
		if !cc.sent {
			cc.cancel, cancel = cancel, nil // next sends it after the request
		}
		stopped = append(stopped, cc)
	}
	return stopped, cancel
}

// stopError is the error of a request whose context ended: Cancelled
// (matching context.Canceled too) when it was cancelled, ctx's error
// when its deadline passed.
func stopError(ctx context.Context) error {
	err := ctx.Err()
	if errors.Is(err, context.Canceled) {
		return &chat.Failure{Reason: chat.ErrCancelled.Reason, Err: err}
	}
	return err
}

// interruptKey marks the context of an interrupting request.
type interruptKey struct{}

// WithInterrupt returns a context that makes a request of a websocket
// session (Chat, Send, ChatAsync, SendAsync) interrupt those pending
// before it, instead of waiting behind them (the default): the request
// in flight is stopped as if its context had been cancelled (its call
// ends with an error matching [chat.ErrCancelled]; the server cancels
// its route and keeps the interrupted turn in memory), the queued ones
// end the same way without being sent, and the new request is answered
// next, with the interrupted turn in the conversation's memory.
func WithInterrupt(ctx context.Context) context.Context {
	return context.WithValue(ctx, interruptKey{}, true)
}

// interrupting reports whether ctx is from WithInterrupt.
func interrupting(ctx context.Context) bool {
	v, _ := ctx.Value(interruptKey{}).(bool)
	return v
}

// next sends the next queued request unless one is in flight. inline
// says whether the caller may write (not the reader goroutine).
func (s *clientSession) next(inline bool) {
	for {
		var failed *clientCall
		var ferr error
		var frame []byte
		var l *link // the connection the request goes out on
		s.mu.Lock()
		if s.inflight != nil || len(s.queue) == 0 || s.detaching || (s.resuming && !s.queue[0].resume) {
			s.mu.Unlock()
			return
		}
		cc := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if cc.ctx.Err() != nil {
			failed, ferr = cc, stopError(cc.ctx)
			unwatchLocked(cc)
		} else {
			var reconnecting bool
			if l, reconnecting = s.c.currentLink(); reconnecting {
				// No connection: the request waits for the new one.
				s.queue = append([]*clientCall{cc}, s.queue...)
				s.mu.Unlock()
				return
			}
			if cc.requestID == nil { // else sent again after a reconnect, with its id
				cc.requestID = s.c.newRequestID()
			}
			frame = s.frame(cc)
			s.inflight = cc
			cc.pos = 0
			cc.sent = false
		}
		s.mu.Unlock()
		if failed != nil {
			failed.call.Finish(ferr)
			continue
		}
		if err := s.c.writeOn(l, frame, inline); err != nil {
			s.mu.Lock()
			ended := cc.stopped // its call has ended
			if s.inflight == cc {
				s.inflight = nil
				unwatchLocked(cc)
			}
			s.mu.Unlock()
			if !ended {
				cc.call.Finish(err)
			}
			continue
		}
		s.mu.Lock()
		cc.sent = true
		cancel := cc.cancel
		cc.cancel = nil
		s.mu.Unlock()
		if cancel != nil {
			// Stopped while it was being sent: its Cancel goes after it.
			_ = s.c.writeOn(l, cancel, inline)
		}
		return
	}
}

// frame returns the wire frame of cc; s.mu is held.
func (s *clientSession) frame(cc *clientCall) []byte {
	b := make([]byte, 0, 96+len(cc.data)+len(s.scopeID))
	b = append(b, `{"chatId":`...)
	b = append(b, s.idJSON...)
	if cc.resume {
		b = append(b, `,"type":"Connect"`...)
		b = s.appendResume(b)
	} else if cc.connect {
		b = append(b, `,"type":"Connect"`...)
		if cc.route != "" {
			b = append(b, `,"route":`...)
			b = appendString(b, cc.route)
		}
	} else {
		b = append(b, `,"type":"ChatRouteMessage","scopeId":`...)
		b = appendString(b, s.scopeID)
		b = append(b, `,"data":`...)
		b = append(b, cc.data...)
	}
	b = append(b, `,"requestId":`...)
	b = append(b, cc.requestID...)
	return append(b, '}')
}

// receive handles a frame of this session, on the reader goroutine.
func (s *clientSession) receive(f *serverFrame) {
	typ := eventType(f.typ)
	if typ != protocol.EventCompleted && typ != protocol.EventFailed {
		if s.firstDelivery(f) && !s.stoppedEvent(f) {
			s.dispatch(wireEvent(typ, f))
		}
		return
	}
	s.mu.Lock()
	cc := s.inflight
	if cc == nil || (len(f.requestID) > 0 && !bytes.Equal(f.requestID, cc.requestID)) {
		s.mu.Unlock()
		s.c.log.Debug("ws: a terminator matches no request", "chat", s.id, "type", typ, "requestId", string(f.requestID))
		return
	}
	s.inflight = nil
	unwatchLocked(cc)
	if cc.resume {
		s.resumeAnswered(cc, typ, f) // unlocks s.mu
		return
	}
	var err error
	if typ == protocol.EventCompleted {
		if len(f.data) < 2 || string(f.data[1:len(f.data)-1]) != s.scopeID {
			if scope := text(f.data); scope != "" {
				s.scopeID = scope
			}
		}
		if cc.connect {
			s.convID = s.scopeID
			if id := text(f.conversationID); id != "" {
				s.convID = id
			}
			s.token = text(f.resumeToken)
		}
	} else {
		data := text(f.data)
		if scope := text(f.scopeID); scope != "" {
			s.scopeID = scope
		}
		fl := &chat.Failure{Reason: data}
		if detail := text(f.detail); detail != "" {
			fl.Err = errors.New(detail)
		}
		err = fl
		if cc.connect {
			s.closed = true
		}
	}
	done := s.closed && len(s.queue) == 0
	stopped := cc.stopped
	s.mu.Unlock()
	if !stopped { // else its call ended when it was stopped
		cc.call.Finish(err)
	}
	if done {
		s.c.forget(s)
		return
	}
	s.next(false)
}

// firstDelivery reports whether the event f of the request in flight is
// to be handed to the handlers: not when it is a replayed event (the
// request was sent again after a reconnect, and the server answers it
// from what it saved) that the session handed them already, before the
// connection dropped.
func (s *clientSession) firstDelivery(f *serverFrame) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cc := s.inflight
	if cc == nil || (len(f.requestID) > 0 && !bytes.Equal(f.requestID, cc.requestID)) {
		return true
	}
	if !f.replayed && cc.pos == 0 {
		cc.delivered = 0 // the request runs (again): a new answer
	}
	cc.pos++
	if f.replayed && cc.pos <= cc.delivered {
		return false
	}
	cc.delivered = cc.pos
	return true
}

// stoppedEvent reports whether the event f is of the request in flight
// that was stopped: it is dropped.
func (s *clientSession) stoppedEvent(f *serverFrame) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	cc := s.inflight
	return cc != nil && cc.stopped && (len(f.requestID) == 0 || bytes.Equal(f.requestID, cc.requestID))
}

// wireEvent returns the event of a frame. An event rendered from markdown
// becomes what the local client gets: its text as the data and the
// rendering in HTML (a Message's frame has them the other way round, see
// appendRendered).
func wireEvent(typ string, f *serverFrame) chat.Event {
	if len(f.markdown) > 0 && typ == protocol.EventMessage {
		ev := chat.Event{Type: typ, Data: json.RawMessage(bytes.Clone(f.markdown))}
		ev.HTML = text(f.data)
		return ev
	}
	ev := chat.Event{Type: typ, Data: json.RawMessage(bytes.Clone(f.data))}
	if len(f.html) > 0 {
		ev.HTML = text(f.html)
	}
	return ev
}

func (s *clientSession) dispatch(ev chat.Event) {
	s.c.dispatching.Store(true)
	defer s.c.dispatching.Store(false)
	defer func() {
		if v := recover(); v != nil {
			s.c.log.Error("ws: an event handler panicked", "chat", s.id, "type", ev.Type, "panic", v)
		}
	}()
	s.h.Dispatch(ev)
}

// Close ends the session: Disconnect is sent, which cancels the request
// running on the server, and the requests pending (queued or in flight)
// fail with [chat.ErrSessionClosed]. The server sends nothing for the
// session after Disconnect.
func (s *clientSession) Close() error {
	if !s.end(false) {
		return nil
	}
	b := make([]byte, 0, 40+len(s.idJSON))
	b = append(b, `{"type":"Disconnect","chatId":`...)
	b = append(b, s.idJSON...)
	b = append(b, '}')
	_ = s.c.write(b, true)
	return nil
}

// end ends the session on the client's side: the requests pending fail
// with [chat.ErrSessionClosed]. It reports whether it did: not when the
// session had ended, nor, with kept, when its server keeps no
// conversation for it (no resume token: Detach closes it instead).
func (s *clientSession) end(kept bool) bool {
	s.mu.Lock()
	if s.closed || (kept && s.token == "") {
		s.mu.Unlock()
		return false
	}
	s.closed = true
	pending := s.pendingLocked()
	s.inflight, s.queue = nil, nil
	if s.resumeAnswer != nil {
		close(s.resumeAnswer)
		s.resumeAnswer = nil
	}
	s.mu.Unlock()
	s.c.forget(s)
	for _, cc := range pending {
		cc.call.Finish(chat.ErrSessionClosed)
	}
	return true
}

// pendingLocked returns the requests whose calls have not ended: the one
// in flight, unless it was stopped, and the queued ones, no longer
// watched; s.mu is held.
func (s *clientSession) pendingLocked() []*clientCall {
	pending := s.queue
	if s.inflight != nil && !s.inflight.stopped {
		pending = append([]*clientCall{s.inflight}, pending...)
	}
	for _, cc := range pending {
		unwatchLocked(cc)
	}
	if s.inflight != nil {
		unwatchLocked(s.inflight)
	}
	return pending
}

// holdForDetach stops the session from sending anything more, for
// Detach: its queued requests fail now. When its resuming Connect is in
// flight, it returns a channel closed once that is answered (or the
// session ended).
func (s *clientSession) holdForDetach() <-chan struct{} {
	s.mu.Lock()
	s.detaching = true
	queued := s.queue
	s.queue = nil
	var answered chan struct{}
	if s.inflight != nil && s.inflight.resume && !s.closed {
		answered = make(chan struct{})
		s.resumeAnswer = answered
	}
	s.mu.Unlock()
	for _, cc := range queued {
		cc.call.Finish(chat.ErrSessionClosed)
	}
	return answered
}

// fail ends every pending request of the session with err.
func (s *clientSession) fail(err error) {
	s.mu.Lock()
	pending := s.pendingLocked()
	s.inflight, s.queue, s.closed = nil, nil, true
	if s.resumeAnswer != nil {
		close(s.resumeAnswer)
		s.resumeAnswer = nil
	}
	s.mu.Unlock()
	for _, cc := range pending {
		cc.call.Finish(err)
	}
}

// finishedCall returns a Call that has already ended with err.
func finishedCall(err error) *chat.Call {
	c := new(chat.Call)
	c.Finish(err)
	return c
}
