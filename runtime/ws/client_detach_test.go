package ws

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// openBolt opens a bbolt store in the test's directory.
func openBolt(t *testing.T) *boltstore.Store {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "chat.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestClientDetachKeepsConversations: Detach ends a client without ending
// its conversations: a new client resumes them where they were, over a
// real websocket and a bbolt store; Close still ends them.
func TestClientDetachKeepsConversations(t *testing.T) {
	leaktest.Check(t)
	ctx := context.Background()
	store := openBolt(t)
	g := newGate()
	a := startGated(t, store, "a", g, nil)

	c := dialTest(t, a)
	menu, err := c.Builder().Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := menu.Chat(ctx, "build sword"); err != nil {
		t.Fatal(err)
	}
	nested := menu.ScopeID()
	held, err := c.Builder().Connect(ctx, "waitgate")
	if err != nil {
		t.Fatal(err)
	}
	call := held.ChatAsync(ctx, "held")
	recv(t, g.started)

	if err := c.Detach(); err != nil {
		t.Fatalf("Detach: %v", err)
	}
	<-c.Done()
	if err := call.Wait(ctx); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("the request in flight at Detach: %v", err)
	}
	if err := menu.Chat(ctx, "after"); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("a request after Detach: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close after Detach: %v", err)
	}
	// The turn in flight goes on without its client; then the server lets
	// go of both conversations, which stay in the store.
	close(g.release)
	waitNoConversations(t, a.router)
	for _, s := range []chat.Session{menu, held} {
		if _, err := store.Load(ctx, s.ConversationID()); err != nil {
			t.Fatalf("conversation %s after Detach: %v", s.ConversationID(), err)
		}
	}

	// A new client resumes them, in the scope they were in.
	c2 := dialTest(t, a)
	var rec recorder
	menu2, err := rec.builder(c2).Resume(ctx, menu.ConversationID(), menu.ResumeToken())
	if err != nil {
		t.Fatalf("resuming after Detach: %v", err)
	}
	if menu2.ScopeID() != nested {
		t.Fatalf("resumed in scope %q, want %q", menu2.ScopeID(), nested)
	}
	if err := menu2.Chat(ctx, "build axe"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); !strings.Contains(got, "weapon axe") {
		t.Fatalf("after the resume: %q", got)
	}
	held2, err := rec.builder(c2).Resume(ctx, held.ConversationID(), held.ResumeToken())
	if err != nil {
		t.Fatalf("resuming after Detach: %v", err)
	}
	if err := held2.Chat(ctx, "next"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got != "thinking waiting | message gate 2: next" {
		t.Fatalf("the first request after the resume: %q", got)
	}

	// Close ends them for good.
	ids := []string{menu2.ConversationID(), held2.ConversationID()}
	token := menu2.ResumeToken()
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	waitNoConversations(t, a.router)
	for _, id := range ids {
		if _, err := store.Load(ctx, id); !errors.Is(err, chatstore.ErrConversationNotFound) {
			t.Fatalf("conversation %s after Close: %v", id, err)
		}
	}
	c3 := dialTest(t, a)
	if _, err := c3.Builder().Resume(ctx, ids[0], token); !errors.Is(err, chat.ErrResumeRefused) {
		t.Fatalf("resuming after Close: %v", err)
	}
}

// TestClientDetachOnAPlainServer: on a server that keeps no
// conversations, Detach closes the sessions, as Close does.
func TestClientDetachOnAPlainServer(t *testing.T) {
	leaktest.Check(t)
	ctx := context.Background()
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	s, err := c.Builder().Connect(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	if err := c.Detach(); err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(ctx, "again"); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("a request after Detach: %v", err)
	}
	waitNoConversations(t, ts.router)
}

// TestClientDetachAwaitsAResume: Detach while a reconnected client's
// resume is in flight waits for its answer, so that the session's
// ResumeToken is the one the resume rotated: a new client resumes with
// it. The request the client would have sent again after the resume is
// not sent.
func TestClientDetachAwaitsAResume(t *testing.T) {
	leaktest.Check(t)
	ctx := context.Background()
	store := openBolt(t)
	g := newGate()
	a := startGated(t, store, "a", g, nil)
	proxy := startProxy(t, a)
	c := dialReconnecting(t, proxy.url(), newStateLog())
	s, err := c.Builder().Connect(ctx, "waitgate")
	if err != nil {
		t.Fatal(err)
	}
	call := s.ChatAsync(ctx, "held")
	recv(t, g.started)
	// The connection drops while the request runs: the turn goes on, and
	// the client's resume, on its new connection, waits for it.
	proxy.cut()
	cs := s.(*clientSession)
	waitFor(t, "the resume to be in flight", func() bool {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		return cs.inflight != nil && cs.inflight.resume
	})
	old := cs.ResumeToken()
	detached := make(chan error, 1)
	go func() { detached <- c.Detach() }()
	waitFor(t, "Detach to hold the session", func() bool {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		return cs.detaching
	})
	close(g.release)
	if err := recv(t, detached); err != nil {
		t.Fatalf("Detach: %v", err)
	}
	if err := call.Wait(ctx); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("the request pending at Detach: %v", err)
	}
	token := s.ResumeToken()
	if token == old {
		t.Fatal("the session's resume token is the one the resume used")
	}
	waitNoConversations(t, a.router)

	c2 := dialTest(t, a)
	var rec recorder
	s2, err := rec.builder(c2).Resume(ctx, s.ConversationID(), token)
	if err != nil {
		t.Fatalf("resuming with the token after Detach: %v", err)
	}
	if err := s2.Chat(ctx, "next"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got != "thinking waiting | message gate 2: next" {
		t.Fatalf("after the resume: %q", got)
	}
	if n := g.runs.Load(); n != 2 {
		t.Fatalf("the route ran %d times for two requests", n)
	}
}
