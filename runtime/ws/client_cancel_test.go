package ws

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// Cancelling the context of a request on the Go client stops it: the
// call ends at once with an error matching chat.ErrCancelled (and
// context.Canceled), the server's route sees a stop, no event of the
// request reaches the handlers after the call ended, OnError is not
// called, and the next request runs.
func TestClientCancelStopsTheRequest(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	var ended atomic.Bool // the stopped call has ended
	var mu sync.Mutex
	var late, errs []string
	s, err := c.Builder().
		OnMessage(func(m string) {
			if ended.Load() && strings.HasPrefix(m, "drip") {
				mu.Lock()
				late = append(late, m)
				mu.Unlock()
			}
		}).
		OnError(func(m string) { mu.Lock(); errs = append(errs, m); mu.Unlock() }).
		Connect(t.Context(), "drip")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 20 {
		ctx, cancel := context.WithCancel(t.Context())
		call := s.ChatAsync(ctx, "drip")
		recv(t, ts.routes.entered)
		cancel()
		recv(t, call.Done())
		ended.Store(true)
		err := call.Err()
		if !errors.Is(err, chat.ErrCancelled) || !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: the call ended with %v, want Cancelled", round, err)
		}
		if end := recv(t, ts.routes.held); !end.stopped {
			t.Fatalf("round %d: the route's context ended with no stop", round)
		}
		ended.Store(false)
	}
	// The next request runs once the stopped one's terminator came, and
	// so do synchronous ones whose context is cancelled.
	ctx, cancel := context.WithCancel(t.Context())
	go func() { recv(t, ts.routes.entered); cancel() }()
	if err := s.Chat(ctx, "drip"); !errors.Is(err, chat.ErrCancelled) {
		t.Fatalf("Chat = %v, want Cancelled", err)
	}
	recv(t, ts.routes.held)
	mu.Lock()
	defer mu.Unlock()
	if len(late) > 0 {
		t.Fatalf("%d events of stopped requests reached the handler after their call ended: %q", len(late), late[:min(5, len(late))])
	}
	if len(errs) > 0 {
		t.Fatalf("OnError called: %q", errs)
	}
}

// A request queued on the client whose context is cancelled ends
// Cancelled without being sent; one past its deadline ends with
// context.DeadlineExceeded (and is stopped on the server all the same).
func TestClientCancelOfAQueuedRequest(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	s, err := c.Builder().Connect(t.Context(), "hold")
	if err != nil {
		t.Fatal(err)
	}
	first, stopFirst := context.WithCancel(t.Context())
	running := s.ChatAsync(first, "first")
	recv(t, ts.routes.entered)
	second, stopSecond := context.WithCancel(t.Context())
	queued := s.ChatAsync(second, "second")
	stopSecond()
	recv(t, queued.Done())
	if err := queued.Err(); !errors.Is(err, chat.ErrCancelled) {
		t.Fatalf("the queued call ended with %v", err)
	}
	stopFirst()
	recv(t, running.Done())
	if err := running.Err(); !errors.Is(err, chat.ErrCancelled) {
		t.Fatalf("the running call ended with %v", err)
	}
	if end := recv(t, ts.routes.held); end.text != "first" || !end.stopped {
		t.Fatalf("ended %+v", end)
	}
	if err := s.Chat(t.Context(), "quick"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-ts.routes.entered:
		t.Fatalf("the cancelled queued request ran: %q", got)
	default:
	}

	ctx, cancel := context.WithTimeout(t.Context(), 50e6)
	defer cancel()
	if err := s.Chat(ctx, "late"); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, chat.ErrCancelled) {
		t.Fatalf("past its deadline: %v", err)
	}
	if end := recv(t, ts.routes.held); !end.stopped {
		t.Fatalf("past its deadline, the server's request was not stopped: %+v", end)
	}
}

// Steer on the Go client: a request made with WithInterrupt stops the
// one in flight (Cancelled) and the queued ones, and is answered next;
// without it, a request waits behind (the default).
func TestClientInterruptingRequest(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	rec := &recorder{}
	s, err := rec.builder(c).Connect(t.Context(), "hold")
	if err != nil {
		t.Fatal(err)
	}
	first := s.ChatAsync(t.Context(), "first")
	recv(t, ts.routes.entered)
	waiting := s.ChatAsync(t.Context(), "second") // queues behind
	select {
	case <-waiting.Done():
		t.Fatalf("the queued request ended: %v", waiting.Err())
	case got := <-ts.routes.entered:
		t.Fatalf("a queued request ran beside the running one: %q", got)
	default:
	}
	if err := s.Chat(WithInterrupt(t.Context()), "quick"); err != nil {
		t.Fatalf("the interrupting request: %v", err)
	}
	for name, call := range map[string]*chat.Call{"running": first, "queued": waiting} {
		if err := call.Err(); !errors.Is(err, chat.ErrCancelled) {
			t.Errorf("the %s request ended with %v, want Cancelled", name, err)
		}
	}
	if end := recv(t, ts.routes.held); end.text != "first" || !end.stopped {
		t.Fatalf("the interrupted route ended with %+v", end)
	}
	if got := rec.take(); !strings.HasSuffix(got, "message quick answer") {
		t.Fatalf("events: %s", got)
	}
}

// A request stopped while its connection is being replaced is not sent
// again on the new one: its call ended Cancelled. The durable turn the
// lost connection left running completes on the server (losing a
// connection is no stop), and its answer is not delivered; the next
// request runs.
func TestClientStopWhileReconnecting(t *testing.T) {
	leaktest.Check(t)
	store := chat.NewInMemoryConversationStore(nil)
	g := newGate()
	a := startGated(t, store, "a", g, nil)
	proxy := startProxy(t, a)
	states := newStateLog()
	c := dialReconnecting(t, proxy.url(), states)
	var rec recorder
	s, err := rec.builder(c).Connect(t.Context(), "waitgate")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	call := s.ChatAsync(ctx, "hello")
	recv(t, g.started)
	ss := serverSession(t, a, "go-1")
	proxy.cut()
	waitLost(t, ss)
	cancel()
	recv(t, call.Done())
	if err := call.Err(); !errors.Is(err, chat.ErrCancelled) {
		t.Fatalf("the stopped call: %v", err)
	}
	close(g.release) // the durable turn completes on the server
	if err := s.Chat(t.Context(), "next"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); strings.Contains(got, "gate 1") || !strings.HasSuffix(got, "message gate 2: next") {
		t.Fatalf("the application got: %q", got)
	}
	if n := g.runs.Load(); n != 2 {
		t.Fatalf("the route ran %d times, want 2 (the stopped request is not sent again)", n)
	}
}
