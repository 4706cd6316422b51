package ws

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/e2e"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// A gate is the route "waitgate": it sends a Thinking event, tells started,
// waits for release (or for its context to end, which it honours, as
// the docs advise), then answers with its message and the number of its
// runs.
type gate struct {
	started chan struct{}
	release chan struct{}
	runs    atomic.Int64
}

func newGate() *gate {
	return &gate{started: make(chan struct{}, 8), release: make(chan struct{})}
}

func (g *gate) pkg() *chatimpl.Package {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/runtime/ws/gatetest")
	p.AddRoute(chatimpl.RouteSpec{Name: "waitgate", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		n := g.runs.Add(1)
		if err := chat.Response(ctx).Thinking("waiting"); err != nil {
			return err
		}
		g.started <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return chat.Response(ctx).Message(fmt.Sprintf("gate %d: %s", n, req.UserMessage()))
	}})
	// "answerfirst" answers first, then waits: a connection cut meanwhile
	// drops between the answer and the terminator.
	p.AddRoute(chatimpl.RouteSpec{Name: "answerfirst", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		n := g.runs.Add(1)
		if err := chat.Response(ctx).Message(fmt.Sprintf("answer %d: %s", n, req.UserMessage())); err != nil {
			return err
		}
		g.started <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}})
	return p
}

// startGated starts a node named name of store with the waitgate route.
func startGated(t *testing.T, store chatstore.ConversationStore, name string, g *gate, opts *ServerOptions) *testServer {
	t.Helper()
	routes := newTestRoutes()
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: name, Logger: quietLogger()}, e2e.Register(), routes.pkg(), g.pkg())
	if err != nil {
		t.Fatal(err)
	}
	return startServerFor(t, r, routes, opts)
}

// serverSession returns the session chatID of ts's connections.
func serverSession(t *testing.T, ts *testServer, chatID string) *session {
	t.Helper()
	var found *session
	waitFor(t, "the server's session "+chatID, func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		for c := range ts.conns {
			c.mu.Lock()
			s := c.sessions[chatID]
			c.mu.Unlock()
			if s != nil {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

// onlySession returns the one session of ts's connections.
func onlySession(t *testing.T, ts *testServer) *session {
	t.Helper()
	var found *session
	waitFor(t, "the server's session", func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		for c := range ts.conns {
			c.mu.Lock()
			for _, s := range c.sessions {
				found = s
			}
			c.mu.Unlock()
		}
		return found != nil
	})
	return found
}

// waitLost waits until the server has noticed that the connection of s
// is lost: s is closing.
func waitLost(t *testing.T, s *session) {
	t.Helper()
	waitFor(t, "the server to notice the lost connection", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.closing
	})
}

// readAnswer reads the frames of chatID up to its terminator.
func (c *rawConn) readAnswer(chatID string) []durableFrame {
	c.t.Helper()
	var fs []durableFrame
	for {
		f := c.readDurable()
		if f.ChatID != chatID {
			continue
		}
		fs = append(fs, f)
		if f.Type == "Completed" || f.Type == "Failed" {
			return fs
		}
	}
}

// A durable turn is not owned by its connection: when the connection
// drops while it runs, it completes, its answer is saved, and the request
// re-sent after the resume gets it replayed; the route ran once.
func TestDurableTurnOutlivesItsConnection(t *testing.T) {
	leaktest.Check(t)
	store := chat.NewInMemoryConversationStore(nil)
	g := newGate()
	a := startGated(t, store, "a", g, nil)
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "waitgate")
	scope := hello.text()
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c1", "scopeId": scope, "data": map[string]any{"userMessage": "once"}, "requestId": 7})
	recv(t, g.started)
	s := serverSession(t, a, "c1")
	c.ws.CloseNow()
	waitLost(t, s)
	close(g.release)

	c2 := dialRaw(t, a.url, nil)
	if f := c2.resume("c2", hello.ConversationID, hello.ResumeToken); f.Type != "Completed" || f.text() != scope {
		t.Fatalf("resume: %+v", f)
	}
	c2.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c2", "scopeId": scope, "data": map[string]any{"userMessage": "once"}, "requestId": 7})
	fs := c2.readAnswer("c2")
	if len(fs) != 3 || fs[1].Type != "Message" || fs[1].text() != "gate 1: once" || fs[2].Type != "Completed" || !fs[2].Replayed {
		t.Fatalf("the re-sent request's answer: %+v", fs)
	}
	if n := g.runs.Load(); n != 1 {
		t.Fatalf("the route ran %d times", n)
	}
}

// signalHandler is a slog.Handler that signals ch on each record whose
// message contains msg.
type signalHandler struct {
	msg string
	ch  chan struct{}
}

func (h *signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *signalHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *signalHandler) WithGroup(string) slog.Handler            { return h }
func (h *signalHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.msg) {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}

// A resume that arrives while the turn still runs on this node waits for
// it (or is told ConversationBusy, and tried again, when the turn takes
// longer than the resume may wait): the Go client's request is answered
// once, from the one run.
func TestClientRequestSurvivesADropMidTurn(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *ServerOptions
		busy bool // the turn outlasts the resume's wait
	}{
		{"the resume waits", nil, false},
		// A resume may wait WriteTimeout/2: 100 ms.
		{"the resume is busy, then retried", &ServerOptions{WriteTimeout: 200 * time.Millisecond}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaktest.Check(t)
			store := chat.NewInMemoryConversationStore(nil)
			g := newGate()
			a := startGated(t, store, "a", g, tc.opts)
			proxy := startProxy(t, a)
			states := newStateLog()
			busy := make(chan struct{}, 64)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := Dial(ctx, proxy.url(), &DialOptions{
				Logger:            slog.New(&signalHandler{msg: "trying again", ch: busy}),
				Reconnect:         &ReconnectOptions{MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond},
				OnConnectionState: states.record,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var rec recorder
			s, err := rec.builder(c).Connect(context.Background(), "waitgate")
			if err != nil {
				t.Fatal(err)
			}
			call := s.ChatAsync(context.Background(), "hello")
			recv(t, g.started)
			ss := serverSession(t, a, "go-1")
			proxy.cut()
			waitLost(t, ss)
			states.await(t, StateReconnecting)
			states.await(t, StateConnected)
			if tc.busy {
				recv(t, busy) // the resume was answered ConversationBusy
			}
			close(g.release)
			recv(t, call.Done())
			if err := call.Err(); err != nil {
				t.Fatalf("the request cut by the drop: %v", err)
			}
			if got := rec.take(); got != "thinking waiting | message gate 1: hello" {
				t.Fatalf("events: %q", got)
			}
			if n := g.runs.Load(); n != 1 {
				t.Fatalf("the route ran %d times", n)
			}
			if err := s.Chat(context.Background(), "again"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A turn the server cut short because it went away (Close) runs again
// when it is re-sent: nothing of its answer was saved.
func TestDurableTurnCutByItsNodeRunsAgain(t *testing.T) {
	leaktest.Check(t)
	store := chat.NewInMemoryConversationStore(nil)
	g := newGate()
	a := startGated(t, store, "a", g, nil)
	b := startGated(t, store, "b", g, nil)
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "waitgate")
	scope := hello.text()
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c1", "scopeId": scope, "data": map[string]any{"userMessage": "cut"}, "requestId": 7})
	recv(t, g.started)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	waitNoConversations(t, a.router)

	c2 := dialRaw(t, b.url, nil)
	if f := c2.resume("c2", hello.ConversationID, hello.ResumeToken); f.Type != "Completed" {
		t.Fatalf("resume: %+v", f)
	}
	c2.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c2", "scopeId": scope, "data": map[string]any{"userMessage": "cut"}, "requestId": 7})
	recv(t, g.started)
	close(g.release)
	fs := c2.readAnswer("c2")
	if last := fs[len(fs)-1]; last.Type != "Completed" || last.Replayed || !strings.Contains(fs[len(fs)-2].text(), "gate 2: cut") {
		t.Fatalf("the re-sent request: %+v", fs)
	}
}

// RequestTimeout still bounds a durable turn whose connection dropped: it
// ends at the deadline, and the re-sent request is told RequestTimeout,
// as the client would have been.
func TestDurableTurnTimesOutWithoutItsConnection(t *testing.T) {
	leaktest.Check(t)
	store := chat.NewInMemoryConversationStore(nil)
	g := newGate()
	a := startGated(t, store, "a", g, &ServerOptions{RequestTimeout: 50e6})
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "waitgate")
	scope := hello.text()
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c1", "scopeId": scope, "data": map[string]any{"userMessage": "slow"}, "requestId": 7})
	recv(t, g.started)
	c.ws.CloseNow()
	waitNoConversations(t, a.router) // the turn timed out, the session ended

	c2 := dialRaw(t, a.url, nil)
	if f := c2.resume("c2", hello.ConversationID, hello.ResumeToken); f.Type != "Completed" {
		t.Fatalf("resume: %+v", f)
	}
	c2.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c2", "scopeId": scope, "data": map[string]any{"userMessage": "slow"}, "requestId": 7})
	fs := c2.readAnswer("c2")
	if last := fs[len(fs)-1]; last.Type != "Failed" || last.text() != ErrRequestTimeout.Reason || !last.Replayed {
		t.Fatalf("the re-sent request: %+v", fs)
	}
	if n := g.runs.Load(); n != 1 {
		t.Fatalf("the route ran %d times", n)
	}
}

// One answer, one delivery: the connection drops after the answer reached
// the Go client and before the terminator; the re-sent request's replay
// does not hand the answer to the application a second time.
func TestClientDeliversAReplayedAnswerOnce(t *testing.T) {
	leaktest.Check(t)
	store := chat.NewInMemoryConversationStore(nil)
	g := newGate()
	a := startGated(t, store, "a", g, nil)
	proxy := startProxy(t, a)
	states := newStateLog()
	c := dialReconnecting(t, proxy.url(), states)
	var rec recorder
	s, err := rec.builder(c).Connect(context.Background(), "answerfirst")
	if err != nil {
		t.Fatal(err)
	}
	call := s.ChatAsync(context.Background(), "hello")
	recv(t, g.started)
	waitFor(t, "the answer to reach the client", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.log) == 1
	})
	ss := serverSession(t, a, "go-1")
	proxy.cut()
	waitLost(t, ss)
	close(g.release)
	recv(t, call.Done())
	if err := call.Err(); err != nil {
		t.Fatalf("the request: %v", err)
	}
	if got := rec.take(); got != "message answer 1: hello" {
		t.Fatalf("the application got: %q", got)
	}
	if n := g.runs.Load(); n != 1 {
		t.Fatalf("the route ran %d times", n)
	}
	// The next answer is delivered as usual.
	if err := s.Chat(context.Background(), "next"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got != "message answer 2: next" {
		t.Fatalf("the next request: %q", got)
	}
}

// A replay marks its events "replayed" too, so that a client can tell
// them from those of a run.
func TestReplayedEventsAreMarked(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	g := newGate()
	close(g.release)
	a := startGated(t, store, "a", g, nil)
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "waitgate")
	scope := hello.text()
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c1", "scopeId": scope, "data": map[string]any{"userMessage": "x"}, "requestId": "r1"})
	if fs := c.readAnswer("c1"); fs[0].Replayed || fs[1].Replayed || fs[2].Replayed {
		t.Fatalf("a run's frames marked replayed: %+v", fs)
	}
	c.ws.CloseNow()
	waitNoConversations(t, a.router)
	c2 := dialRaw(t, a.url, nil)
	if f := c2.resume("c2", hello.ConversationID, hello.ResumeToken); f.Type != "Completed" {
		t.Fatalf("resume: %+v", f)
	}
	c2.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c2", "scopeId": scope, "data": map[string]any{"userMessage": "x"}, "requestId": "r1"})
	fs := c2.readAnswer("c2")
	if len(fs) != 3 || !fs[0].Replayed || !fs[1].Replayed || !fs[2].Replayed || fs[1].text() != "gate 1: x" {
		t.Fatalf("the replay: %+v", fs)
	}
}
