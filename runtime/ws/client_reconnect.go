package ws

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// A ConnectionState is the state of a [Client]'s connection.
type ConnectionState uint8

const (
	// StateConnected: the client has a connection.
	StateConnected ConnectionState = iota
	// StateReconnecting: the connection was lost and the client is
	// replacing it ([DialOptions.Reconnect]); requests wait.
	StateReconnecting
	// StateClosed: the client has ended (Close, or a connection lost for
	// good).
	StateClosed
)

// String returns "Connected", "Reconnecting" or "Closed".
func (s ConnectionState) String() string {
	switch s {
	case StateConnected:
		return "Connected"
	case StateReconnecting:
		return "Reconnecting"
	case StateClosed:
		return "Closed"
	}
	return fmt.Sprintf("ConnectionState(%d)", uint8(s))
}

// ReconnectOptions configures how a [Client] replaces a lost connection
// (the server restarted, was shut down, or the network failed). A nil
// *ReconnectOptions in [DialOptions] disables reconnection; the zero value
// gives the defaults.
//
// The client dials again after a delay that doubles from MinDelay to
// MaxDelay, each one drawn at random between half of it and all of it
// (jitter: clients dropped together do not come back together). Once
// connected, it resumes each session whose server keeps conversations
// (its Connect answered with a resume token) with a Connect carrying
// resume, and sends again, with the same requestId, the request whose
// terminator it did not receive: a server that completed it answers it
// again from what it saved instead of running it twice; one that never got
// it runs it. Requests made meanwhile wait (each for its context). A
// resume that the server refuses (ResumeRefused) fails the session's
// requests with that failure; one that finds the conversation busy on
// another node, or the store unavailable, is tried again with the same
// delays. Sessions of a server that keeps no conversations cannot be
// resumed: their requests fail with [ErrConnectionLost].
type ReconnectOptions struct {
	// MinDelay is the first delay (0: 100 ms).
	MinDelay time.Duration
	// MaxDelay bounds the delay (0: 10 s).
	MaxDelay time.Duration
	// MaxAttempts is the number of failed attempts in a row (dials, or
	// resumes of one session) after which the client gives up (0: it
	// never does; Close stops it).
	MaxAttempts int
	// DialTimeout bounds each dial (0: 10 s).
	DialTimeout time.Duration
}

func (o ReconnectOptions) withDefaults() ReconnectOptions {
	if o.MinDelay <= 0 {
		o.MinDelay = 100 * time.Millisecond
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 10 * time.Second
	}
	o.MaxDelay = max(o.MaxDelay, o.MinDelay)
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	return o
}

// delay returns the delay before attempt n (0 for the first), with
// jitter.
func (o *ReconnectOptions) delay(n int) time.Duration {
	d := o.MaxDelay
	if n < 30 {
		d = min(o.MinDelay<<n, o.MaxDelay)
	}
	return d/2 + rand.N(d/2+1)
}

// State returns the state of the client's connection.
func (c *Client) State() ConnectionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

func (c *Client) notify(st ConnectionState, err error) {
	if c.onState == nil {
		return
	}
	defer func() {
		if v := recover(); v != nil {
			c.log.Error("ws: OnConnectionState panicked", "state", st.String(), "panic", v)
		}
	}()
	c.onState(st, err)
}

// reconnect starts replacing the lost connection: the sessions that can
// be resumed wait for it, the others fail now.
func (c *Client) reconnect(cause error) {
	c.mu.Lock()
	c.state = StateReconnecting
	sessions := c.allSessions()
	c.mu.Unlock()
	lostErr := ErrConnectionLost
	if cause != nil {
		lostErr = fmt.Errorf("%w: %w", ErrConnectionLost, cause)
	}
	for _, s := range sessions {
		if !s.resumable() {
			s.fail(lostErr)
			c.forget(s)
		}
	}
	c.log.Info("ws: connection lost; reconnecting", "err", cause)
	c.notify(StateReconnecting, cause)
	go c.redial()
}

// redial dials until it has a new connection, then resumes the sessions.
func (c *Client) redial() {
	var lastErr error
	for n := 0; ; n++ {
		if c.recon.MaxAttempts > 0 && n >= c.recon.MaxAttempts {
			c.finish(fmt.Errorf("%w: reconnecting failed %d times: %w", ErrConnectionLost, n, lastErr))
			return
		}
		select {
		case <-time.After(c.recon.delay(n)):
		case <-c.stop:
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.recon.DialTimeout)
		go func() { // Close stops the dial
			select {
			case <-c.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		wc, err := c.dial(ctx)
		cancel()
		if err != nil {
			lastErr = err
			c.log.Info("ws: reconnecting failed", "attempt", n+1, "err", err)
			continue
		}
		l := c.newLink(wc)
		c.mu.Lock()
		sessions := c.allSessions()
		c.mu.Unlock()
		// Before any session can send on the new connection: the resuming
		// Connect first, then the request whose terminator was lost.
		for _, s := range sessions {
			s.prepareResume()
		}
		c.mu.Lock()
		if c.closed || c.err != nil {
			c.mu.Unlock()
			wc.CloseNow()
			return
		}
		c.link, c.state = l, StateConnected
		sessions = c.allSessions() // with those started meanwhile, which wait
		c.mu.Unlock()
		go l.readLoop()
		c.log.Info("ws: reconnected", "attempts", n+1, "sessions", len(sessions))
		c.notify(StateConnected, nil)
		for _, s := range sessions {
			s.next(true)
		}
		return
	}
}

// resumable reports whether the session can go on over a new connection:
// its server keeps its conversation, or its Connect has not been answered
// yet (it is sent again).
func (s *clientSession) resumable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed && (s.token != "" || s.convID == "")
}

// prepareResume arranges the session's queue for a new connection: a
// Connect resuming its conversation first, then the request whose
// terminator was lost (with its requestId), then the queued ones. A
// session whose Connect was not answered sends it again.
func (s *clientSession) prepareResume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cc := s.inflight; cc != nil && !cc.stopped {
		s.queue = append([]*clientCall{cc}, s.queue...)
	}
	// A stopped request is not sent again: its call has ended. (Its
	// Cancel may have been lost with the connection: a durable turn then
	// goes on on the server, and its answer is saved, not delivered.)
	s.inflight = nil
	if s.convID == "" {
		return
	}
	s.resuming = true
	s.queueResume()
}

// queueResume puts a resuming Connect at the head of the queue, unless
// one is there. s.mu is held.
func (s *clientSession) queueResume() {
	if len(s.queue) > 0 && s.queue[0].resume {
		return
	}
	cc := &clientCall{ctx: context.Background(), connect: true, resume: true, call: new(chat.Call)}
	s.queue = append([]*clientCall{cc}, s.queue...)
}

// appendResume appends the resume of a Connect frame. s.mu is held.
func (s *clientSession) appendResume(b []byte) []byte {
	b = append(b, `,"resume":{"conversationId":`...)
	b = appendString(b, s.convID)
	b = append(b, `,"token":`...)
	b = appendString(b, s.token)
	return append(b, '}')
}

// Resume is what [chat.SessionBuilder.Resume] calls; use Builder().Resume. It sends a
// Connect resuming the conversation and waits for the server's reply: a
// refusal is an error matching [chat.ErrResumeRefused], a conversation
// another server still serves [chat.ErrConversationBusy].
func (c *Client) Resume(ctx context.Context, conversationID, token string, h *chat.Handlers) (chat.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed || c.err != nil {
		err := c.err
		if err == nil || c.closed {
			err = chat.ErrSessionClosed
		}
		c.mu.Unlock()
		return nil, err
	}
	c.nextChat++
	s := &clientSession{c: c, id: "go-" + strconv.FormatUint(c.nextChat, 10), h: h, convID: conversationID, token: token}
	s.idJSON = quote(s.id)
	c.sessions[s.id] = s
	c.mu.Unlock()

	cc := &clientCall{ctx: ctx, connect: true, resume: true, initial: true, call: new(chat.Call)}
	s.enqueue(cc)
	select {
	case <-cc.call.Done():
		if err := cc.call.Err(); err != nil {
			c.forget(s)
			return nil, err
		}
		return s, nil
	case <-ctx.Done():
		_ = s.Close()
		return nil, ctx.Err()
	}
}

// resumeAnswered handles the terminator of the resuming Connect cc: typ
// and f are the frame. s.mu is held; resumeAnswered releases it.
func (s *clientSession) resumeAnswered(cc *clientCall, typ string, f *serverFrame) {
	if s.resumeAnswer != nil {
		// Detach waits for this answer: the token it rotates.
		defer close(s.resumeAnswer)
		s.resumeAnswer = nil
	}
	if typ == protocol.EventCompleted {
		s.resuming = false
		s.resumeFailures = 0
		if scope := text(f.data); scope != "" {
			s.scopeID = scope
		}
		if tok := text(f.resumeToken); tok != "" {
			s.token = tok
		}
		s.mu.Unlock()
		s.c.log.Debug("ws: session resumed", "chat", s.id, "scope", s.ScopeID())
		cc.call.Finish(nil)
		s.next(false)
		return
	}
	reason := text(f.data)
	fl := &chat.Failure{Reason: reason}
	if detail := text(f.detail); detail != "" {
		fl.Err = errors.New(detail)
	}
	if cc.initial || s.c.recon == nil {
		// Builder().Resume: the caller decides what to do.
		s.mu.Unlock()
		cc.call.Finish(fl)
		s.fail(fl)
		return
	}
	s.resumeFailures++
	limit := s.c.recon.MaxAttempts
	retry := reason == chat.ErrConversationBusy.Reason || reason == chat.ErrUnavailable.Reason || reason == ErrShuttingDown.Reason
	if retry && !s.detaching && (limit == 0 || s.resumeFailures < limit) {
		delay := s.c.recon.delay(s.resumeFailures - 1)
		s.mu.Unlock()
		s.c.log.Info("ws: resuming a session failed; trying again", "chat", s.id, "reason", reason, "delay", delay)
		time.AfterFunc(delay, func() {
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				return
			}
			s.queueResume()
			s.mu.Unlock()
			s.next(true)
		})
		return
	}
	s.mu.Unlock()
	s.c.log.Info("ws: resuming a session failed", "chat", s.id, "reason", reason)
	cc.call.Finish(fl)
	s.fail(fl)
	s.c.forget(s)
}
