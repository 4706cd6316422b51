package ws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/chatscopes/chatgen/runtime/chat"
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
}

var _ chat.Session = (*clientSession)(nil)

func (s *clientSession) ScopeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scopeID
}

func (s *clientSession) Chat(ctx context.Context, text string) error {
	return s.ChatAsync(ctx, text).Wait(ctx)
}

func (s *clientSession) Send(ctx context.Context, data any) error {
	return s.SendAsync(ctx, data).Wait(ctx)
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
	if err := ctx.Err(); err != nil {
		return finishedCall(err)
	}
	cc := &clientCall{ctx: ctx, data: data, call: chat.NewCall()}
	s.enqueue(cc)
	return cc.call
}

// enqueue queues cc and sends it if no request is in flight.
func (s *clientSession) enqueue(cc *clientCall) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cc.call.Finish(chat.ErrSessionClosed)
		return
	}
	s.queue = append(s.queue, cc)
	s.mu.Unlock()
	s.next(true)
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
		if err := cc.ctx.Err(); err != nil {
			failed, ferr = cc, err
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
		}
		s.mu.Unlock()
		if failed != nil {
			failed.call.Finish(ferr)
			continue
		}
		if err := s.c.writeOn(l, frame, inline); err != nil {
			s.mu.Lock()
			if s.inflight == cc {
				s.inflight = nil
			}
			s.mu.Unlock()
			cc.call.Finish(err)
			continue
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
	if typ != chat.EventCompleted && typ != chat.EventFailed {
		if s.firstDelivery(f) {
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
	if cc.resume {
		s.resumeAnswered(cc, typ, f) // unlocks s.mu
		return
	}
	var err error
	if typ == chat.EventCompleted {
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
	s.mu.Unlock()
	cc.call.Finish(err)
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

// wireEvent returns the event of a frame. An event rendered from markdown
// becomes what the local client gets: its text as the data and the
// rendering in HTML (a Message's frame has them the other way round, see
// appendRendered).
func wireEvent(typ string, f *serverFrame) chat.Event {
	if len(f.markdown) > 0 && typ == chat.EventMessage {
		ev := chat.NewWireEvent(typ, bytes.Clone(f.markdown))
		ev.HTML = text(f.data)
		return ev
	}
	ev := chat.NewWireEvent(typ, bytes.Clone(f.data))
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
	pending := s.queue
	if s.inflight != nil {
		pending = append([]*clientCall{s.inflight}, pending...)
	}
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
	pending := s.queue
	if s.inflight != nil {
		pending = append([]*clientCall{s.inflight}, pending...)
	}
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
	c := chat.NewCall()
	c.Finish(err)
	return c
}
