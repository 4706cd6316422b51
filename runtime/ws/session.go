package ws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
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

	// Owned by the worker while running.
	requestID json.RawMessage

	// The last event of the running request is held back briefly, so that
	// it goes out with the next event or the terminator in one write
	// (BenchmarkLoad: a turn's Message and Completed frames cost one
	// write(2), not two).
	heldMu    sync.Mutex
	heldEvent []byte      // the frame held back
	heldTimer *time.Timer // sends heldEvent after heldDelay

	mu       sync.Mutex
	queue    []*request
	running  bool // a worker runs the queue
	busy     bool // the worker is running a request
	closing  bool // Disconnect, expiry, the conversation ended or the connection closed
	finished bool // the conversation is closed
	keep     bool // detach the conversation rather than close it (durable.go)
	last     time.Time
}

type request struct {
	scopeID   string
	data      json.RawMessage // parsed by the session's worker (routeRequest)
	requestID json.RawMessage
}

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
	s.queue = append(s.queue, r)
	if s.running {
		return false, "", ""
	}
	s.running = true
	s.c.workers.Add(1)
	return true, "", ""
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
		s.busy = true
		s.mu.Unlock()
		s.run(r)
	}
}

// heldDelay is the longest an event is held back waiting for company: a
// lone event is not delayed noticeably (TestLoneEventIsNotHeldBack).
const heldDelay = time.Millisecond

// run handles one request and sends its terminator.
func (s *session) run(r *request) {
	req, err := routeRequest(r.data)
	if err != nil {
		detail := err.Error()
		var fl *chat.Failure
		if errors.As(err, &fl) && fl.Err != nil {
			detail = fl.Err.Error()
		}
		s.c.failed(s.idJSON, r.requestID, chat.ErrBadRequest.Reason, "", detail)
		return
	}
	if s.beforeRun(r) {
		return // a re-sent request: its saved answer was replayed
	}
	s.requestID = r.requestID
	after, f := s.conv.Handle(s.c.ctx, r.scopeID, req, s.sink)
	s.requestID = nil
	var term []byte
	if f != nil {
		term = s.c.buildText(s.idJSON, chat.EventFailed, f.Reason, r.requestID, after, "")
	} else {
		term = s.c.buildText(s.idJSON, chat.EventCompleted, after, r.requestID, "", "")
	}
	s.heldMu.Lock()
	if held := s.heldEvent; held != nil {
		s.heldEvent = nil
		s.heldTimer.Stop()
		_ = s.c.send(held, term)
	} else {
		_ = s.c.send(term)
	}
	s.heldMu.Unlock()
	if after != "" {
		return
	}
	// The route ended the conversation: the session is over, and the
	// requests queued behind fail.
	s.mu.Lock()
	s.closing = true
	queued := s.queue
	s.queue = nil
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

// deliver sends one event of the running request: it holds it back and
// sends the one it held before.
func (s *session) deliver(ev chat.Event) error {
	b, err := appendData(appendHead(s.c.srv.getFrame(), s.idJSON, ev.Type), ev)
	if err != nil {
		s.c.srv.putFrame(b)
		return err
	}
	b = appendTail(appendRendered(b, ev), s.requestID, "", "")
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
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
// Disconnect), the running one finishes, then the conversation is closed.
func (s *session) close() {
	s.mu.Lock()
	s.closing = true
	s.queue = nil
	running := s.running
	s.mu.Unlock()
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
	s.mu.Unlock()
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
