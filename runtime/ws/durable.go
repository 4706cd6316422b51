package ws

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// The server side of durable conversations (docs/durability.md): a Connect
// may resume a conversation saved by this server or another one over the
// same store; a connection that is lost (rather than closed by the client's
// Disconnect) lets go of its conversations without ending them; and each
// session remembers, with its conversation's state, the answer of its last
// completed request, so that a request re-sent after a reconnect is
// answered again instead of run twice.

// A resumeRef is the resume of a Connect frame:
// {"conversationId": "…", "token": "…"}.
type resumeRef struct {
	ConversationID string `json:"conversationId"`
	Token          string `json:"token"`
}

// decodeResume parses the resume of a Connect frame.
func decodeResume(raw []byte) (*resumeRef, error) {
	var r resumeRef
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &r) != nil || r.ConversationID == "" || r.Token == "" {
		return nil, errors.New("resume must be an object with the strings conversationId and token")
	}
	return &r, nil
}

// open starts the conversation of a Connect: a new one, or the one it
// resumes. The errors of a resume are failures whose reason the client
// gets: ResumeRefused (one reason for an unknown, expired or foreign
// conversation and a wrong token), ConversationBusy, Unavailable.
func (c *conn) open(f *inFrame) (*chat.Conversation, error) {
	if f.Resume == nil {
		return c.srv.router.Connect(c.ctx, f.Route)
	}
	// A resume waits for a request its conversation still runs here (the
	// client lost its connection during it), for a while: the connection's
	// frames, pongs included, are not read meanwhile. Past it, the client
	// is told ConversationBusy and tries again.
	ctx, cancel := context.WithTimeout(c.ctx, c.resumeWait())
	defer cancel()
	conv, err := c.srv.router.Resume(ctx, f.Resume.ConversationID, f.Resume.Token)
	if errors.Is(err, chat.ErrNotDurable) {
		// A server that keeps no conversation knows none: the client
		// gets the reason of an unknown conversation, not ServerError.
		return nil, &chat.Failure{Reason: chat.ErrResumeRefused.Reason, Err: err}
	}
	return conv, err
}

// maxResumeWait bounds how long a resume waits for a request still
// running in the conversation it resumes (see open).
const maxResumeWait = 5 * time.Second

// resumeWait is how long a resume may take: maxResumeWait, or less
// when a pong must be read sooner (WriteTimeout).
func (c *conn) resumeWait() time.Duration {
	return min(maxResumeWait, c.srv.opts.WriteTimeout/2)
}

// connected returns the Completed frame of a Connect: the current scope
// id and, for a durable conversation, its id and resume token.
func (c *conn) connected(chatID []byte, conv *chat.Conversation, requestID []byte) []byte {
	token := conv.ResumeToken()
	if token == "" {
		return c.buildText(chatID, protocol.EventCompleted, conv.ScopeID(), requestID, "", "")
	}
	b := appendHead(c.srv.getFrame(), chatID, protocol.EventCompleted)
	b = appendString(b, conv.ScopeID())
	b = appendTail(b, requestID, "", "")
	b = b[:len(b)-1]
	b = append(b, `,"conversationId":`...)
	b = appendString(b, conv.ID())
	b = append(b, `,"resumeToken":`...)
	b = appendString(b, token)
	return append(b, '}')
}

// replayKey is the key of a session's last answer in its conversation's
// saved state (chatstore.ConversationState.Extra).
const replayKey = "ws.lastAnswer"

// MaxReplaySize bounds the events kept, per session, of the last completed
// request, for a replay (JSON bytes of their data). The answer of a
// request whose events are larger is replayed as its terminator alone.
const MaxReplaySize = 64 << 10

// durableSession is the durable side of a session: the events of the
// request running, kept to be saved with the conversation, and the answer
// to replay, loaded when the session resumed.
type durableSession struct {
	mu        sync.Mutex      // events are delivered from any goroutine of the route
	requestID json.RawMessage // the running request's id
	digest    []byte          // of the running request's data (requestDigest)
	ctx       context.Context // the running request's context
	events    []answerEvent
	size      int
	partial   bool

	replay *answer // owned by the session's worker; consumed by the first request
}

// An answer is what a session answered to its last completed request, as
// saved: its events and terminator, without the chatId (a resumed
// session may have another one).
type answer struct {
	RequestID json.RawMessage `json:"requestId"`
	Digest    []byte          `json:"digest,omitempty"` // requestDigest of its data; none in answers saved before it was (the requestId alone is compared)
	Events    []answerEvent   `json:"events,omitempty"`
	Partial   bool            `json:"partial,omitempty"` // the events were too large to keep
	Type      string          `json:"type"`              // Completed or Failed
	Data      string          `json:"data"`              // the scope id or the reason
	ScopeID   string          `json:"scopeId,omitempty"` // Failed's scope
}

type answerEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// setupDurable makes a session of a durable conversation record its
// answers; a resumed one loads the answer to replay.
func (c *conn) setupDurable(s *session, resumed bool) {
	if s.conv.ResumeToken() == "" {
		return
	}
	d := &durableSession{}
	s.dur = d
	if resumed {
		if raw := s.conv.Extra(replayKey); raw != nil {
			var a answer
			if err := json.Unmarshal(raw, &a); err == nil && len(a.RequestID) > 0 {
				d.replay = &a
			} else if err != nil {
				c.log(slog.LevelWarn, "ws: the saved answer of a resumed session does not decode", "chat", s.id, "err", err)
			}
		}
	}
	deliver := s.sink
	s.sink = func(ev chat.Event) error {
		if err := d.record(ev); err != nil {
			return err // an event that cannot be encoded
		}
		if err := deliver(ev); err != nil && !s.turnGoesOn(d) {
			return err
		}
		// The connection is lost, not closed by the client: the turn goes
		// on, its events are kept for the replay.
		return nil
	}
	s.conv.SetExtra(replayKey, func(scopeID string, f *chat.Failure) []byte {
		return d.save(scopeID, f)
	})
}

// record keeps ev for the answer of the running request. Its error is
// the event's encoding's.
func (d *durableSession) record(ev chat.Event) error {
	data, err := appendData(nil, ev)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.partial {
		return nil
	}
	if d.size += len(data) + len(ev.Type); d.size > MaxReplaySize {
		d.events, d.partial = nil, true
		return nil
	}
	d.events = append(d.events, answerEvent{Type: ev.Type, Data: data})
	return nil
}

// turnGoesOn reports whether the running request of s goes on although
// its events can no longer be sent: its connection was lost (rather than
// the session closed by Disconnect) and its context has not ended.
func (s *session) turnGoesOn(d *durableSession) bool {
	d.mu.Lock()
	ctx := d.ctx
	d.mu.Unlock()
	if ctx == nil || ctx.Err() != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closing || s.keep
}

// save returns the saved form of the answer of the request ending with
// scopeID and f, as the session sends it; nil when the request has no id
// (it cannot be re-sent).
func (d *durableSession) save(scopeID string, f *chat.Failure) []byte {
	d.mu.Lock()
	requestID, ctx := d.requestID, d.ctx
	if len(requestID) == 0 {
		d.mu.Unlock()
		return nil
	}
	a := answer{RequestID: requestID, Digest: d.digest, Events: d.events, Partial: d.partial, Type: protocol.EventCompleted, Data: scopeID}
	d.mu.Unlock()
	if ctx != nil && chat.Cancelled(ctx) {
		// Stopped by the client (Cancel, an interrupting request): what
		// it was told, even if the route completed meanwhile.
		a.Type, a.Data, a.ScopeID = protocol.EventFailed, chat.ErrCancelled.Reason, scopeID
	} else if f != nil {
		a.Type, a.Data, a.ScopeID = protocol.EventFailed, f.Reason, scopeID
		switch {
		case ctx == nil:
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			// What the client was told at the deadline.
			a.Data = ErrRequestTimeout.Reason
		case ctx.Err() != nil:
			// Cut off by Disconnect, or by the server going away
			// (Close): not an answer to replay; a re-sent request runs.
			return nil
		}
	}
	b, err := json.Marshal(&a)
	if err != nil {
		return nil
	}
	return b
}

// beforeRun is called by the session's worker before it runs r: it
// returns the saved answer to replay when r re-sends the request it
// answers (the first request of a resumed session, with the same
// requestId and the same data); otherwise it starts recording r's answer
// and returns nil.
//
// The requestId is what tells a re-sent request from a new one: the
// clients of this package make theirs unique to the client (a random
// part and a counter), so that the first request of a new client that
// resumes the conversation is never taken for the one its previous
// client lost. The data must be the same too, byte for byte, as a client
// sends it again: a client that numbers its requests from 1 on every
// start gets its new request run, not the answer of another one.
func (s *session) beforeRun(r *request) *answer {
	d := s.dur
	if d == nil {
		return nil
	}
	digest := requestDigest(r.data)
	a := d.replay
	d.replay = nil
	if a != nil && bytes.Equal(a.RequestID, r.requestID) && (a.Digest == nil || bytes.Equal(a.Digest, digest)) {
		return a
	}
	d.mu.Lock()
	d.events, d.size, d.partial = nil, 0, false
	d.requestID, d.digest, d.ctx = r.requestID, digest, r.ctx
	d.mu.Unlock()
	return nil
}

// requestDigest returns what a saved answer keeps of its request's data
// to recognise it re-sent: the first 16 bytes of its SHA-256.
func requestDigest(data []byte) []byte {
	sum := sha256.Sum256(data)
	return sum[:16]
}

// replay sends a saved answer again as the answer of r, unless r was cut
// off meanwhile. Its events and its terminator are marked
// "replayed":true: a client that received the first events of the answer
// before its connection dropped skips as many (one delivery).
func (s *session) replay(r *request, a *answer) {
	frames := make([][]byte, 0, len(a.Events)+1)
	for _, ev := range a.Events {
		b := appendHead(s.c.srv.getFrame(), s.idJSON, ev.Type)
		b = append(b, ev.Data...)
		b = appendTail(b, r.requestID, "", "")
		frames = append(frames, append(b[:len(b)-1], `,"replayed":true}`...))
	}
	term := s.c.buildText(s.idJSON, a.Type, a.Data, r.requestID, a.ScopeID, "")
	term = append(term[:len(term)-1], `,"replayed":true}`...)
	frames = append(frames, term)
	s.heldMu.Lock()
	defer s.heldMu.Unlock()
	if s.current != r {
		for _, f := range frames {
			s.c.srv.putFrame(f)
		}
		return
	}
	s.current = nil
	s.c.log(slog.LevelInfo, "ws: replayed the answer of a re-sent request", "chat", s.id, "requestId", string(r.requestID), "events", len(a.Events), "partial", a.Partial)
	_ = s.c.send(frames...)
}

// closeKeeping ends the session because its connection was lost (or the
// session expired, or the server shuts down), not because the client
// closed it: a durable conversation is detached, kept in the store for the
// client to resume, here or elsewhere.
func (s *session) closeKeeping() {
	s.mu.Lock()
	s.keep = true
	s.mu.Unlock()
	s.close()
}

// endConv ends the conversation of a finished session: Close, or Detach
// when the session ended without the client closing it.
func (s *session) endConv(ctx context.Context) error {
	s.mu.Lock()
	keep := s.keep
	s.mu.Unlock()
	if keep {
		return s.conv.Detach(ctx)
	}
	return s.conv.Close(ctx)
}
