package ws

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// testProxy is a TCP proxy on loopback standing in for a load balancer:
// tests cut its connections, switch it to another node, or make it drop
// what the server sends.
type testProxy struct {
	t  *testing.T
	ln net.Listener
	wg sync.WaitGroup

	mu        sync.Mutex
	target    string // host:port
	conns     map[net.Conn]struct{}
	blackhole bool // drop the server's bytes
}

func startProxy(t *testing.T, target *testServer) *testProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &testProxy{t: t, ln: ln, conns: map[net.Conn]struct{}{}}
	p.switchTo(target)
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *testProxy) url() string { return "ws://" + p.ln.Addr().String() + RoutesPath }

func (p *testProxy) switchTo(ts *testServer) {
	p.switchToAddr(strings.TrimPrefix(ts.http.URL, "http://"))
}

// switchToAddr sends the next connections to host:port addr.
func (p *testProxy) switchToAddr(addr string) {
	p.mu.Lock()
	p.target = addr
	p.mu.Unlock()
}

func (p *testProxy) setBlackhole(on bool) {
	p.mu.Lock()
	p.blackhole = on
	p.mu.Unlock()
}

// cut closes every connection through the proxy: a network failure.
func (p *testProxy) cut() {
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	p.mu.Unlock()
}

func (p *testProxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		up, err := net.Dial("tcp", target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns[down], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(up, down)
			up.Close()
		}()
		go func() {
			defer p.wg.Done()
			buf := make([]byte, 32<<10)
			for {
				n, err := up.Read(buf)
				p.mu.Lock()
				drop := p.blackhole
				p.mu.Unlock()
				if n > 0 && !drop {
					if _, werr := down.Write(buf[:n]); werr != nil {
						break
					}
				}
				if err != nil {
					break
				}
			}
			down.Close()
		}()
	}
}

// stateLog records a client's connection states.
type stateLog struct {
	mu     sync.Mutex
	states []string
	ch     chan ConnectionState
}

func newStateLog() *stateLog { return &stateLog{ch: make(chan ConnectionState, 64)} }

func (l *stateLog) record(st ConnectionState, _ error) {
	l.mu.Lock()
	l.states = append(l.states, st.String())
	l.mu.Unlock()
	l.ch <- st
}

// await waits for the client to reach st.
func (l *stateLog) await(t *testing.T, st ConnectionState) {
	t.Helper()
	for {
		if got := recv(t, l.ch); got == st {
			return
		}
	}
}

func dialReconnecting(t *testing.T, url string, states *stateLog) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, &DialOptions{
		Logger:            quietLogger(),
		Reconnect:         &ReconnectOptions{MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond},
		OnConnectionState: states.record,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestClientReconnectsAndResumes(t *testing.T) {
	leaktest.Check(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	proxy := startProxy(t, a)
	states := newStateLog()
	c := dialReconnecting(t, proxy.url(), states)
	var rec recorder
	s, err := rec.builder(c).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	token := s.ResumeToken()
	if s.ConversationID() == "" || token == "" {
		t.Fatalf("session of a durable server: conversation %q token %q", s.ConversationID(), token)
	}
	if err := s.Chat(context.Background(), "build sword"); err != nil {
		t.Fatal(err)
	}
	nested := s.ScopeID()
	rec.take()

	// The network fails: the client reconnects and resumes on its own.
	proxy.cut()
	states.await(t, StateReconnecting)
	states.await(t, StateConnected)
	if err := s.Chat(context.Background(), "build axe"); err != nil {
		t.Fatalf("after the reconnection: %v", err)
	}
	if got := rec.take(); !strings.Contains(got, "weapon axe") {
		t.Fatalf("the builder did not answer: %q", got)
	}
	if s.ScopeID() != nested || s.ResumeToken() == token || c.State() != StateConnected {
		t.Fatalf("scope %q (want %q), token rotated %v, state %v", s.ScopeID(), nested, s.ResumeToken() != token, c.State())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	states.await(t, StateClosed)
	waitNoConversations(t, a.router)
	if ids, _ := nodes.store.ConversationIDs(context.Background()); len(ids) != 0 {
		t.Fatalf("Close left conversations in the store: %q", ids)
	}
}

func TestClientMovesToAnotherNode(t *testing.T) {
	leaktest.Check(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a, b := nodes.start(t, "a", nil), nodes.start(t, "b", nil)
	proxy := startProxy(t, a)
	states := newStateLog()
	c := dialReconnecting(t, proxy.url(), states)
	var rec recorder
	s, err := rec.builder(c).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(context.Background(), "build bow"); err != nil {
		t.Fatal(err)
	}
	nested := s.ScopeID()

	// Node a shuts down: it tells the client to go (1001), and the load
	// balancer sends the client to node b, which resumes the conversation.
	proxy.switchTo(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	states.await(t, StateConnected)
	rec.take()
	if err := s.Chat(context.Background(), "build crossbow"); err != nil {
		t.Fatalf("on node b: %v", err)
	}
	if got := rec.take(); !strings.Contains(got, "weapon crossbow") || s.ScopeID() != nested {
		t.Fatalf("on node b: %q in scope %q (want %q)", got, s.ScopeID(), nested)
	}
	if st := b.router.Stats(); st.Conversations != 1 || st.Scopes != 2 {
		t.Fatalf("node b serves %+v", st)
	}
	waitNoConversations(t, a.router)
}

func TestClientReSendsALostRequestOnce(t *testing.T) {
	leaktest.Check(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	proxy := startProxy(t, a)
	states := newStateLog()
	c := dialReconnecting(t, proxy.url(), states)
	var rec recorder
	s, err := rec.builder(c).Connect(context.Background(), "tick")
	if err != nil {
		t.Fatal(err)
	}
	id := s.ConversationID()
	// The server's answer is lost on the way: the request completes on
	// the server, the client never hears of it.
	proxy.setBlackhole(true)
	call := s.ChatAsync(context.Background(), "once")
	waitFor(t, "the answer to be saved", func() bool {
		st, err := nodes.store.Load(context.Background(), id)
		return err == nil && strings.Contains(string(st.Extra[replayKey]), "tick 1")
	})
	proxy.setBlackhole(false)
	proxy.cut()
	// The client resumes and sends the request again: it is answered from
	// what the server saved, and the route does not run again.
	recv(t, call.Done())
	if err := call.Err(); err != nil {
		t.Fatalf("the re-sent request: %v", err)
	}
	if got := rec.take(); got != "thinking ticking | message tick 1: once" {
		t.Fatalf("events of the re-sent request: %q", got)
	}
	if n := nodes.ticks.Load(); n != 1 {
		t.Fatalf("the route ran %d times", n)
	}
	if err := s.Chat(context.Background(), "next"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got != "thinking ticking | message tick 2: next" {
		t.Fatalf("the next request: %q", got)
	}
}

func TestClientQueuesRequestsWhileReconnecting(t *testing.T) {
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	proxy := startProxy(t, a)
	states := newStateLog()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The first attempts fail: the proxy has nowhere to go.
	c, err := Dial(ctx, proxy.url(), &DialOptions{
		Logger:            quietLogger(),
		Reconnect:         &ReconnectOptions{MinDelay: 5 * time.Millisecond, MaxDelay: 5 * time.Millisecond},
		OnConnectionState: states.record,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var rec recorder
	s, err := rec.builder(c).Connect(context.Background(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	dead := nodes.start(t, "dead", nil)
	dead.http.Close() // a node that is gone
	proxy.switchTo(dead)
	proxy.cut()
	states.await(t, StateReconnecting)
	calls := []*chat.Call{s.ChatAsync(context.Background(), "one"), s.ChatAsync(context.Background(), "two")}
	proxy.switchTo(a)
	for _, call := range calls {
		recv(t, call.Done())
		if err := call.Err(); err != nil {
			t.Fatalf("a request made while reconnecting: %v", err)
		}
	}
	if got := rec.take(); got != "message one | message two" {
		t.Fatalf("events: %q", got)
	}
}

func TestClientSessionsOfAPlainServerFailOnReconnect(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil) // keeps no conversations
	proxy := startProxy(t, ts)
	states := newStateLog()
	c := dialReconnecting(t, proxy.url(), states)
	s, err := c.Builder().Connect(context.Background(), "gate")
	if err != nil {
		t.Fatal(err)
	}
	if s.ResumeToken() != "" {
		t.Fatal("a resume token from a server without a store")
	}
	call := s.ChatAsync(context.Background(), "stuck")
	recv(t, ts.routes.entered)
	proxy.cut()
	recv(t, call.Done())
	if err := call.Err(); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("a request of a session that cannot be resumed: %v", err)
	}
	states.await(t, StateConnected)
	if err := s.Chat(context.Background(), "again"); !errors.Is(err, chat.ErrSessionClosed) && !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("the lost session: %v", err)
	}
	// New sessions work on the new connection.
	s2, err := c.Builder().Connect(context.Background(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Chat(context.Background(), "fresh"); err != nil {
		t.Fatal(err)
	}
	close(ts.routes.gate)
}

func TestClientResumeRefused(t *testing.T) {
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	proxy := startProxy(t, a)
	states := newStateLog()
	c := dialReconnecting(t, proxy.url(), states)
	s, err := c.Builder().Connect(context.Background(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	// The conversation is gone when the client comes back (it expired).
	dead := nodes.start(t, "dead", nil)
	dead.http.Close()
	proxy.switchTo(dead)
	proxy.cut()
	states.await(t, StateReconnecting)
	waitNoConversations(t, a.router)
	if err := nodes.store.Delete(context.Background(), s.ConversationID()); err != nil {
		t.Fatal(err)
	}
	proxy.switchTo(a)
	err = s.Chat(context.Background(), "hello?")
	if !errors.Is(err, chat.ErrResumeRefused) {
		t.Fatalf("a request of a session whose resume was refused: %v", err)
	}
	if c.State() != StateConnected {
		t.Fatalf("state %v", c.State())
	}
}

func TestClientCloseWhileReconnecting(t *testing.T) {
	leaktest.Check(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	proxy := startProxy(t, a)
	states := newStateLog()
	c := dialReconnecting(t, proxy.url(), states)
	s, err := c.Builder().Connect(context.Background(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	dead := nodes.start(t, "dead", nil)
	dead.http.Close()
	proxy.switchTo(dead)
	proxy.cut()
	states.await(t, StateReconnecting)
	call := s.ChatAsync(context.Background(), "never")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	recv(t, call.Done())
	if err := call.Err(); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("a request pending at Close: %v", err)
	}
	states.await(t, StateClosed)
	select {
	case <-c.Done():
	default:
		t.Fatal("Done is not closed after Close")
	}
}

func TestClientGivesUp(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	proxy := startProxy(t, ts)
	states := newStateLog()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, proxy.url(), &DialOptions{
		Logger:            quietLogger(),
		Reconnect:         &ReconnectOptions{MinDelay: time.Millisecond, MaxDelay: time.Millisecond, MaxAttempts: 3},
		OnConnectionState: states.record,
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.http.Close()
	proxy.cut()
	states.await(t, StateClosed)
	if err := c.Err(); !errors.Is(err, ErrConnectionLost) || !strings.Contains(err.Error(), "3 times") {
		t.Fatalf("Err after giving up: %v", err)
	}
	_ = c.Close()
}

func TestClientResumesAfterItsProcessRestarted(t *testing.T) {
	leaktest.Check(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	proxy := startProxy(t, a)
	c := dialTest(t, &testServer{url: proxy.url()})
	s, err := c.Builder().Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(context.Background(), "build mace"); err != nil {
		t.Fatal(err)
	}
	id, token, nested := s.ConversationID(), s.ResumeToken(), s.ScopeID()
	// The client's process dies: its connection drops, it sends nothing.
	proxy.cut()
	<-c.Done()
	waitNoConversations(t, a.router)

	// The restarted process resumes the conversation by id and token.
	c2 := dialTest(t, a)
	if _, err := c2.Builder().Resume(context.Background(), id, "x"+token); !errors.Is(err, chat.ErrResumeRefused) {
		t.Fatalf("resume with a wrong token: %v", err)
	}
	var rec recorder
	s2, err := rec.builder(c2).Resume(context.Background(), id, token)
	if err != nil {
		t.Fatal(err)
	}
	if s2.ScopeID() != nested || s2.ConversationID() != id || s2.ResumeToken() == token {
		t.Fatalf("resumed session: scope %q (want %q), conversation %q", s2.ScopeID(), nested, s2.ConversationID())
	}
	if err := s2.Chat(context.Background(), "build flail"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); !strings.Contains(got, "weapon flail") {
		t.Fatalf("after the resume: %q", got)
	}
}
