//go:build unix

package main

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// redisPrefix returns a key prefix of its own in the Redis at
// redistest.Addr, whose keys are deleted when the test ends. The test fails
// under CI=true when that Redis is unreachable, and is skipped otherwise.
func redisPrefix(t testing.TB) string {
	t.Helper()
	return redistest.Prefix(t, redistest.Client(t), "weaponbuilder-test")
}

// proxy is a TCP proxy on loopback that stands in for a load balancer:
// it forwards each connection to its current backend; switching the
// backend drops the connections to the old one.
type proxy struct {
	ln net.Listener

	mu      sync.Mutex
	backend string
	conns   []net.Conn
	wg      sync.WaitGroup
}

func newProxy(t *testing.T, backend string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, backend: backend}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		ln.Close()
		p.closeConns()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		backend := p.backend
		p.mu.Unlock()
		out, err := net.Dial("tcp", backend)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
			src.Close()
		}
		go pipe(out, in)
		go pipe(in, out)
	}
}

// switchTo sends new connections to backend and drops the current ones.
func (p *proxy) switchTo(backend string) {
	p.mu.Lock()
	p.backend = backend
	p.mu.Unlock()
	p.closeConns()
}

func (p *proxy) closeConns() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// TestTwoNodesShareRedis is issue 11's second test with real processes:
// two weaponbuilder servers share one Redis, behind a TCP proxy. A client
// (ws.Dial with Reconnect) talks to node A into the weapon builder; A is
// killed with SIGKILL and the proxy switched to node B; the client
// reconnects through the proxy, waits for A's lease to end (a resume
// meanwhile is ConversationBusy, retried) and resumes on B, in the same
// nested scope, with the workbench and the chat memory A saved.
func TestTwoNodesShareRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	prefix := redisPrefix(t)
	dir := t.TempDir()
	bin := buildProgram(t, dir)
	const lease = time.Second
	args := []string{"-redis", redistest.Addr, "-redis-prefix", prefix, "-lease", lease.String()}
	addrA, addrB := freeAddr(t), freeAddr(t)
	nodeA := startServer(t, bin, addrA, "", args...)
	startServer(t, bin, addrB, "", args...)
	lb := newProxy(t, addrA)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connected := make(chan struct{}, 8)
	c, err := ws.Dial(ctx, "ws://"+lb.addr()+"/_chat/routes", &ws.DialOptions{
		Reconnect: &ws.ReconnectOptions{MinDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond},
		OnConnectionState: func(s ws.ConnectionState, _ error) {
			if s == ws.StateConnected {
				connected <- struct{}{}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var answers []string
	text := func(s string) {
		mu.Lock()
		answers = append(answers, s)
		mu.Unlock()
	}
	session, err := c.Builder().OnMessage(text).OnStream(text).Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	say := func(msg string) string {
		t.Helper()
		mu.Lock()
		answers = nil
		mu.Unlock()
		if err := session.Chat(ctx, msg); err != nil {
			t.Fatalf("%q: %v", msg, err)
		}
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(answers, "")
	}
	top := session.ScopeID()
	say("I want to build an axe")
	say("call it Widowmaker")
	nested := session.ScopeID()
	if nested == top {
		t.Fatal("the weapon builder did not start a nested scope")
	}

	// A dies; the balancer sends the client to B.
	nodeA.kill9(t)
	killed := time.Now()
	lb.switchTo(addrB)
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatal("the client did not reconnect to node B")
	}
	if got := session.ScopeID(); got != nested {
		t.Fatalf("on node B the session is in scope %s, want %s", got, nested)
	}
	got := say("hmm")
	t.Logf("two nodes: A killed to the first answer on B: %v (lease %v)", time.Since(killed).Round(time.Millisecond), lease)
	if !strings.Contains(got, "Widowmaker") || !strings.Contains(got, "worthy name") {
		t.Fatalf("on node B the weapon builder answered %q: the memory A saved was lost", got)
	}
	// The answer is made from the weapon on the workbench (a durable bean).
	if got := say("make it deal 30 damage"); !strings.Contains(got, "Widowmaker") || !strings.Contains(got, "axe dealing 30 damage") {
		t.Fatalf("on node B the workbench holds %q, want the axe Widowmaker", got)
	}
	if got := session.ScopeID(); got != nested {
		t.Fatalf("the turns on B left the weapon builder: scope %s, want %s", got, nested)
	}
}
