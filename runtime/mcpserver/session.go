package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// ErrClosed is the error of a session opened on a closed [Server].
var ErrClosed = errors.New("mcpserver: the server is closed")

// errSessionEnded is the error of a call that comes in while its session
// ends.
var errSessionEnded = errors.New("mcpserver: the session has ended")

// A session is one MCP client session: its principal and its
// conversations, one per route it called.
type session struct {
	ss        *mcp.ServerSession
	principal chat.Principal
	ended     chan struct{} // closed once its conversations ended

	mu      sync.Mutex
	closing bool
	convs   map[string]*chat.Conversation // by route
	pending map[string]*pendingCall       // by route: a call waiting for a multi round-trip retry
}

// putPending keeps the call of route paused until the client's retry.
func (sess *session) putPending(route string, p *pendingCall) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.pending == nil {
		sess.pending = map[string]*pendingCall{}
	}
	sess.pending[route] = p
}

// takePending returns and forgets the paused call of route, if any.
func (sess *session) takePending(route string) *pendingCall {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	p := sess.pending[route]
	delete(sess.pending, route)
	return p
}

// track returns the session of ss, starting to track it with principal p
// the first time: when the client ends the session, its conversations
// end.
func (s *Server) track(ss *mcp.ServerSession, p chat.Principal) (*session, error) {
	if ss == nil {
		return nil, errors.New("mcpserver: a request without a session")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.sessions[ss]; sess != nil {
		return sess, nil
	}
	if s.closed {
		return nil, ErrClosed
	}
	sess := &session{ss: ss, principal: p, ended: make(chan struct{}), convs: map[string]*chat.Conversation{}}
	s.sessions[ss] = sess
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = ss.Wait()
		s.end(sess)
	}()
	return sess, nil
}

// end ends the conversations of a session its client ended.
func (s *Server) end(sess *session) {
	s.mu.Lock()
	delete(s.sessions, sess.ss)
	if id := sess.ss.ID(); id != "" {
		delete(s.owners, id)
	}
	s.mu.Unlock()
	sess.mu.Lock()
	sess.closing = true
	convs := sess.convs
	sess.convs = nil
	sess.mu.Unlock()
	for route, c := range convs {
		// Close waits for a request in progress to finish.
		if err := c.Close(context.Background()); err != nil {
			s.log.Error("mcpserver: ending a conversation of an ended session", "session", sess.ss.ID(), "route", route, "err", err)
		}
	}
	close(sess.ended)
}

// conversation returns the session's conversation on route, starting it
// on the first call (or after the route ended the last one).
func (sess *session) conversation(ctx context.Context, r *chat.Router, route string) (*chat.Conversation, error) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.closing {
		return nil, errSessionEnded
	}
	if c := sess.convs[route]; c != nil {
		if c.ScopeID() != "" {
			return c, nil
		}
		// The route ended its conversation: the next call starts another.
		if err := c.Close(ctx); err != nil {
			return nil, fmt.Errorf("mcpserver: closing an ended conversation: %w", err)
		}
		delete(sess.convs, route)
	}
	c, err := r.Connect(chat.WithPrincipal(ctx, sess.principal), route)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: starting a conversation on route %q: %w", route, err)
	}
	sess.convs[route] = c
	return c, nil
}
