package ws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/e2e"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// gateRoute is route "held": it counts its runs, tells started, and
// answers once release is closed — or returns when its context ends.
type gateRoute struct {
	started chan struct{}
	release chan struct{}
	runs    atomic.Int64
}

func newGateRoute() *gateRoute {
	return &gateRoute{started: make(chan struct{}, 8), release: make(chan struct{})}
}

func (g *gateRoute) pkg() *chatimpl.Package {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/runtime/ws/draintest")
	p.AddRoute(chatimpl.RouteSpec{Name: "held", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		n := g.runs.Add(1)
		g.started <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return chat.SendValue(ctx, fmt.Sprintf("held %d: %s", n, req.UserMessage()))
	}})
	return p
}

// slowRelease is a store whose leases take long to release, as on a
// loaded store: a node lets go of a conversation well after it decided to.
type slowRelease struct {
	*chat.InMemoryConversationStore
	delay time.Duration
}

func (s slowRelease) Release(ctx context.Context, id string, lease chatstore.Lease) error {
	time.Sleep(s.delay)
	return s.InMemoryConversationStore.Release(ctx, id, lease)
}

// router returns a router over the nodes' store with the tick and held
// routes; its leases take releaseDelay to release.
func (n *durableNodes) router(t *testing.T, name string, g *gateRoute, releaseDelay time.Duration) (*chat.Router, *testRoutes) {
	t.Helper()
	routes := newTestRoutes()
	var store chatstore.ConversationStore = n.store
	if releaseDelay > 0 {
		store = slowRelease{n.store, releaseDelay}
	}
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: name, Logger: quietLogger()},
		e2e.Register(), routes.pkg(), n.tickPkg(), g.pkg())
	if err != nil {
		t.Fatal(err)
	}
	return r, routes
}

// servingNode is a node served by ServeUntilSignal on a listener of its
// own, as a replica's main() serves it.
type servingNode struct {
	srv  *Server
	addr string
	stop context.CancelFunc
	done chan struct{} // closed when ServeUntilSignal has returned err
	err  error
}

// wait waits for ServeUntilSignal to return and returns its error.
func (sn *servingNode) wait(t *testing.T) error {
	t.Helper()
	recv(t, sn.done)
	return sn.err
}

// serve starts a node named name served by ServeUntilSignal with opts;
// its logger tells handedOver (if not nil) each time a request is left
// for the client to send again elsewhere. It serves reconnectPage at
// /page.html.
func (n *durableNodes) serve(t *testing.T, name string, g *gateRoute, opts *DrainOptions, handedOver chan<- struct{}, releaseDelay time.Duration) *servingNode {
	t.Helper()
	r, _ := n.router(t, name, g, releaseDelay)
	logger := quietLogger()
	if handedOver != nil {
		logger = slog.New(&handOverLog{ch: handedOver})
	}
	srv := NewServer(r, &ServerOptions{Logger: logger})
	mux := http.NewServeMux()
	mux.Handle("/", srv)
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(reconnectPage))
	})
	mux.Handle("/readyz", srv.ReadinessHandler())
	mux.Handle("/livez", srv.LivenessHandler())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	sn := &servingNode{srv: srv, addr: ln.Addr().String(), stop: stop, done: make(chan struct{})}
	hs := &http.Server{Handler: mux}
	go func() {
		defer close(sn.done)
		sn.err = srv.ServeUntilSignal(ctx, hs, ln, opts)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-sn.done:
		case <-time.After(30 * time.Second):
			t.Error("ServeUntilSignal did not return")
		}
	})
	// Serving: the signals are handled from now on.
	waitFor(t, "the node to serve", func() bool {
		resp, err := http.Get("http://" + sn.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return sn
}

// handOverLog signals each request a draining server leaves for the
// client to send again elsewhere.
type handOverLog struct{ ch chan<- struct{} }

func (h *handOverLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *handOverLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *handOverLog) WithGroup(string) slog.Handler            { return h }
func (h *handOverLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "left for the client") {
		h.ch <- struct{}{}
	}
	return nil
}

// probe answers h's status for a GET of path, in process.
func probe(h http.Handler, path string) int {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.Code
}

// upgradeStatus answers the status of a websocket upgrade, in process
// (the recorder cannot be hijacked: a refusal is all it can show).
func upgradeStatus(srv *Server) int {
	r := httptest.NewRequest(http.MethodGet, RoutesPath, nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	return w.Code
}

// anyDraining reports whether a connection of srv drains.
func anyDraining(srv *Server) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for c := range srv.conns {
		c.mu.Lock()
		d := c.draining
		c.mu.Unlock()
		if d {
			return true
		}
	}
	return false
}

// startSignalWatcher starts os/signal's goroutine, which never ends, before
// leaktest.Check counts.
func startSignalWatcher() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR2)
	signal.Stop(c)
}

// TestServeUntilSignalDrains sends SIGTERM to a node running a turn: its
// readiness fails at once (liveness does not) and upgrades are refused;
// the running turn completes and its answer reaches the client; a request
// sent while the node drains is left unanswered there; the connection
// closes with 1001, the client resumes both conversations on the other
// node (the load balancer sends it there), the left request runs there,
// and every turn ran once.
func TestServeUntilSignalDrains(t *testing.T) {
	startSignalWatcher()
	leaktest.Check(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	g := newGateRoute()
	handedOver := make(chan struct{}, 1)
	a := nodes.serve(t, "a", g, &DrainOptions{Delay: 20 * time.Millisecond, Signals: []os.Signal{syscall.SIGTERM}}, handedOver, 300*time.Millisecond)
	rb, routes := nodes.router(t, "b", g, 0)
	b := startServerFor(t, rb, routes, nil)
	proxy := startProxy(t, b)
	proxy.switchToAddr(a.addr)
	retries := &retryLog{}
	c, err := Dial(context.Background(), proxy.url(), &DialOptions{
		Logger:    slog.New(retries),
		Reconnect: &ReconnectOptions{MinDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var rec1, rec2 recorder
	s1, err := rec1.builder(c).Connect(context.Background(), "held")
	if err != nil {
		t.Fatal(err)
	}
	s2, err := rec2.builder(c).Connect(context.Background(), "tick")
	if err != nil {
		t.Fatal(err)
	}
	long := s1.ChatAsync(context.Background(), "long")
	recv(t, g.started)

	// The load balancer will send new connections to b.
	proxy.switchTo(b)
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ready := a.srv.ReadinessHandler()
	waitFor(t, "readiness to fail", func() bool { return probe(ready, "/readyz") == http.StatusServiceUnavailable })
	if code := probe(a.srv.LivenessHandler(), "/livez"); code != http.StatusOK {
		t.Fatalf("liveness while draining: %d", code)
	}
	if code := upgradeStatus(a.srv); code != http.StatusServiceUnavailable {
		t.Fatalf("an upgrade while draining: %d", code)
	}
	waitFor(t, "the connection to drain", func() bool { return anyDraining(a.srv) })
	during := s2.ChatAsync(context.Background(), "during the drain")
	recv(t, handedOver) // a leaves it to the client

	close(g.release)
	recv(t, long.Done())
	if err := long.Err(); err != nil {
		t.Fatalf("the turn running at SIGTERM: %v", err)
	}
	if got := rec1.take(); got != "message held 1: long" {
		t.Fatalf("the turn running at SIGTERM answered %q", got)
	}
	if err := a.wait(t); err != nil {
		t.Fatalf("ServeUntilSignal: %v", err)
	}
	recv(t, during.Done())
	if err := during.Err(); err != nil {
		t.Fatalf("the request sent during the drain: %v", err)
	}
	if got := rec2.take(); got != "thinking ticking | message tick 1: during the drain" {
		t.Fatalf("the request sent during the drain answered %q", got)
	}
	// The client resumes the two conversations concurrently: the one
	// that had no request waiting may still be on its way.
	waitFor(t, "node b to serve both conversations", func() bool { return b.router.Stats().Conversations == 2 })
	// Both conversations go on, each from its last turn.
	if err := s1.Chat(context.Background(), "again"); err != nil {
		t.Fatal(err)
	}
	if got := rec1.take(); got != "message held 2: again" {
		t.Fatalf("on node b: %q", got)
	}
	if err := s2.Chat(context.Background(), "next"); err != nil {
		t.Fatal(err)
	}
	if got := rec2.take(); got != "thinking ticking | message tick 2: next" {
		t.Fatalf("on node b: %q", got)
	}
	if g.runs.Load() != 2 || nodes.ticks.Load() != 2 {
		t.Fatalf("held ran %d times, tick %d times; want 2 and 2", g.runs.Load(), nodes.ticks.Load())
	}
	// Node a had let go of both conversations before it told the client
	// to go: no resume found one busy.
	if n := retries.n.Load(); n != 0 {
		t.Fatalf("%d resumes were tried again", n)
	}
}

// retryLog counts the resumes a client tries again.
type retryLog struct{ n atomic.Int64 }

func (h *retryLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *retryLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *retryLog) WithGroup(string) slog.Handler            { return h }
func (h *retryLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "trying again") {
		h.n.Add(1)
	}
	return nil
}

// TestDrainTimeoutCutsTurns drains a node whose turn outlasts the drain's
// Timeout: Drain returns DeadlineExceeded, and the client's request runs
// again on the other node (nothing of the cut turn was saved).
func TestDrainTimeoutCutsTurns(t *testing.T) {
	startSignalWatcher()
	leaktest.Check(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	g := newGateRoute()
	a := nodes.serve(t, "a", g, &DrainOptions{Timeout: 50 * time.Millisecond, Signals: []os.Signal{syscall.SIGUSR1}}, nil, 0)
	rb, routes := nodes.router(t, "b", g, 0)
	b := startServerFor(t, rb, routes, nil)
	proxy := startProxy(t, b)
	proxy.switchToAddr(a.addr)
	c := dialReconnecting(t, proxy.url(), newStateLog())
	var rec recorder
	s, err := rec.builder(c).Connect(context.Background(), "held")
	if err != nil {
		t.Fatal(err)
	}
	call := s.ChatAsync(context.Background(), "long")
	recv(t, g.started)
	proxy.switchTo(b)
	a.stop() // ctx ends: the drain starts
	if err := a.wait(t); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ServeUntilSignal: %v, want a deadline exceeded", err)
	}
	recv(t, g.started) // the re-sent request runs on b
	close(g.release)
	recv(t, call.Done())
	if err := call.Err(); err != nil {
		t.Fatalf("the cut request: %v", err)
	}
	if got := rec.take(); got != "message held 2: long" {
		t.Fatalf("the cut request answered %q", got)
	}
}

func TestServeUntilSignalServeError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv := startServer(t, nil).Server
	hs := &http.Server{Addr: ln.Addr().String(), Handler: srv} // in use
	err = srv.ServeUntilSignal(context.Background(), hs, nil, nil)
	var opErr *net.OpError
	if !errors.As(err, &opErr) || !strings.Contains(err.Error(), "ws: serve") {
		t.Fatalf("ServeUntilSignal on an address in use: %v", err)
	}
}

func TestReadinessChecks(t *testing.T) {
	srv := startServer(t, nil).Server
	errStore := errors.New("store unreachable")
	var failing atomic.Bool
	check := func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("a check without a deadline")
		}
		if failing.Load() {
			return errStore
		}
		return nil
	}
	ready := srv.ReadinessHandler(check)
	if code := probe(ready, "/readyz"); code != http.StatusOK {
		t.Fatalf("ready: %d", code)
	}
	failing.Store(true)
	if err := srv.Ready(context.Background(), check); !errors.Is(err, errStore) {
		t.Fatalf("Ready with a failing check: %v", err)
	}
	// The probe says only that the node is not ready: the check's error
	// (which may name hosts, users, databases) is for the log.
	w := httptest.NewRecorder()
	ready.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != http.StatusServiceUnavailable || w.Body.String() != "not ready\n" {
		t.Fatalf("ready with a failing check: %d %q, want 503 \"not ready\"", w.Code, w.Body.String())
	}
	if code := probe(srv.LivenessHandler(), "/livez"); code != http.StatusOK {
		t.Fatalf("live with a failing check: %d", code)
	}
	failing.Store(false)
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := srv.Ready(context.Background(), check); !errors.Is(err, ErrDraining) {
		t.Fatalf("Ready after Shutdown: %v", err)
	}
	w = httptest.NewRecorder()
	ready.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	if w.Code != http.StatusServiceUnavailable || w.Body.String() != "draining\n" {
		t.Fatalf("ready after Shutdown: %d %q, want 503 \"draining\"", w.Code, w.Body.String())
	}
}
