package ws

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/e2e"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
)

func dialTest(t testing.TB, ts *testServer) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, ts.url, &DialOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// recorder logs the events a session receives.
type recorder struct {
	mu  sync.Mutex
	log []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.log = append(r.log, s)
	r.mu.Unlock()
}

func (r *recorder) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := strings.Join(r.log, " | ")
	r.log = nil
	return s
}

func (r *recorder) builder(c chat.Client) *chat.SessionBuilder {
	return c.Builder().
		OnMessage(func(m string) { r.add("message " + m) }).
		OnThinking(func(m string) { r.add("thinking " + m) }).
		OnConsole(func(m string) { r.add("console " + m) }).
		OnError(func(m string) { r.add("error " + m) }).
		OnStream(func(m string) { r.add("stream " + m) }).
		OnObject(func(ev chat.Event) {
			var v map[string]any
			if err := ev.Decode(&v); err != nil {
				r.add("object decode error: " + err.Error())
				return
			}
			r.add(fmt.Sprintf("object %v", v))
		}).
		On("weapon", func(ev chat.Event) {
			var w e2e.Weapon
			if err := ev.Decode(&w); err != nil {
				r.add("weapon decode error: " + err.Error())
				return
			}
			r.add(fmt.Sprintf("weapon %s/%d", w.Name, w.Damage))
		}).
		OnDefault(func(ev chat.Event) { r.add(ev.Type + " " + ev.Text()) })
}

// scenario drives a client through the e2e routes and returns a transcript:
// the same for the local and the websocket client.
func scenario(t *testing.T, c chat.Client) string {
	ctx := context.Background()
	var out []string
	var rec recorder
	step := func(s chat.Session, what string, err error) {
		res := "ok"
		if err != nil {
			var f *chat.Failure
			if !errors.As(err, &f) {
				t.Fatalf("%s: %v is not a *chat.Failure", what, err)
			}
			res = "failed " + f.Reason
		}
		out = append(out, fmt.Sprintf("%s => %s [%s]", what, res, rec.take()))
	}
	menu, err := rec.builder(c).Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	top := menu.ScopeID()
	step(menu, "hello", menu.Chat(ctx, "hello"))
	step(menu, "build sword", menu.Chat(ctx, "build sword"))
	if menu.ScopeID() == top {
		t.Fatal("build did not move the session to a nested scope")
	}
	step(menu, "damage", menu.Send(ctx, map[string]any{"userMessage": "sword", "damage": 4}))
	step(menu, "done", menu.Chat(ctx, "done"))
	if menu.ScopeID() != top {
		t.Fatal("done did not pop back to the top scope")
	}
	step(menu, "back", menu.Chat(ctx, "back"))

	count, err := rec.builder(c).Connect(ctx, "count")
	if err != nil {
		t.Fatal(err)
	}
	step(count, "count", count.Send(ctx, struct {
		Count int    `json:"count"`
		Label string `json:"label"`
	}{21, "x"}))
	step(count, "bad count", count.Send(ctx, map[string]any{"count": "x"}))

	stream, _ := rec.builder(c).Connect(ctx, "stream")
	step(stream, "stream", stream.Chat(ctx, "a b c"))
	step(stream, "stream fail", stream.Chat(ctx, "a fail"))
	shop, _ := rec.builder(c).Connect(ctx, "shop")
	step(shop, "sword", shop.Chat(ctx, "sword"))
	step(shop, "axe", shop.Chat(ctx, "axe"))
	panicky, _ := rec.builder(c).Connect(ctx, "panic")
	step(panicky, "panic", panicky.Chat(ctx, "x"))
	step(panicky, "panic again", panicky.Chat(ctx, "y"))
	admin, _ := rec.builder(c).Connect(ctx, "admin")
	step(admin, "admin", admin.Chat(ctx, ""))

	_, err = rec.builder(c).Connect(ctx, "nowhere")
	if !errors.Is(err, chat.ErrRouteNotFound) {
		t.Fatalf("unknown route: %v", err)
	}
	bye, _ := rec.builder(c).Connect(ctx, "bye")
	step(bye, "bye", bye.Chat(ctx, ""))
	step(bye, "after bye", bye.Chat(ctx, ""))
	for _, s := range []chat.Session{menu, count, stream, shop, panicky, admin, bye} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return strings.Join(out, "\n")
}

func TestClientMatchesLocalClient(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)

	local := chat.NewLocalClient(ts.router)
	want := scenario(t, local)
	if err := local.Close(); err != nil {
		t.Fatal(err)
	}
	remote := dialTest(t, ts)
	got := scenario(t, remote)
	t.Logf("transcript:\n%s", got)
	if got != want {
		t.Fatalf("websocket transcript:\n%s\n\nlocal transcript:\n%s", got, want)
	}
	for _, line := range []string{
		"build sword => ok [thinking opening the builder | weapon sword/0]",
		"damage => ok [weapon sword/4]",
		"done => ok [message saved sword]",
		"count => ok [object map[double:42 label:x]]",
		"stream fail => failed StreamingFailure [stream a]",
		"sword => ok [error sorry, no sword]",
		"admin => failed Forbidden []",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("transcript lacks %q:\n%s", line, got)
		}
	}
	if err := remote.Close(); err != nil {
		t.Fatal(err)
	}
	waitNoConversations(t, ts.router)
}

func TestClientAsyncInOrder(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	var rec recorder
	s, err := rec.builder(c).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := []*chat.Call{
		s.ChatAsync(ctx, "one"),
		s.ChatAsync(ctx, "build bow"), // pushes: the next ones run in the builder
		s.SendAsync(ctx, map[string]any{"userMessage": "bow", "damage": 2}),
		s.ChatAsync(ctx, "done"), // pops
		s.ChatAsync(ctx, "two"),
		s.SendAsync(ctx, []int{1}), // not an object
	}
	for i, call := range calls[:5] {
		if err := call.Wait(ctx); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if err := calls[5].Wait(ctx); !errors.Is(err, chat.ErrBadRequest) {
		t.Fatalf("array data: %v", err)
	}
	want := "message menu 1: one | thinking opening the builder | weapon bow/0 | weapon bow/2 | message saved bow | message menu 3: two"
	if got := rec.take(); got != want {
		t.Fatalf("events:\n%s\nwant\n%s", got, want)
	}
}

func TestClientSessionClose(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	ctx := context.Background()
	s, err := c.Builder().Connect(ctx, "gate")
	if err != nil {
		t.Fatal(err)
	}
	first := s.ChatAsync(ctx, "first")
	recv(t, ts.routes.entered)
	queued := s.ChatAsync(ctx, "queued")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := queued.Wait(ctx); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("queued: %v", err)
	}
	if err := s.Chat(ctx, "after"); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("after close: %v", err)
	}
	// The request in flight fails at once; on the server, Disconnect
	// cancels it (the gate route returns on its context).
	if err := first.Wait(ctx); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("in flight: %v", err)
	}
	waitNoConversations(t, ts.router)
	// The client goes on.
	e, err := c.Builder().Connect(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Chat(ctx, "x"); err != nil {
		t.Fatal(err)
	}
}

func TestClientCloseDoesNotHang(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	ctx := context.Background()
	s, err := c.Builder().Connect(ctx, "gate")
	if err != nil {
		t.Fatal(err)
	}
	inflight := s.ChatAsync(ctx, "stuck")
	recv(t, ts.routes.entered)
	queued := s.ChatAsync(ctx, "queued")
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	for _, call := range []*chat.Call{inflight, queued} {
		if err := call.Wait(ctx); !errors.Is(err, chat.ErrSessionClosed) {
			t.Fatalf("pending: %v", err)
		}
	}
	if _, err := c.Builder().Connect(ctx, "echo"); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("connect after close: %v", err)
	}
	if err := c.Close(); err != nil { // twice
		t.Fatal(err)
	}
	<-c.Done()
	waitNoConversations(t, ts.router) // the server cancelled the stuck route
}

func TestClientContextCancellation(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	s, err := c.Builder().Connect(context.Background(), "gate")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Chat(ctx, "one") }()
	recv(t, ts.routes.entered)
	queuedCtx, cancelQueued := context.WithCancel(context.Background())
	queued := s.ChatAsync(queuedCtx, "never sent")
	cancelQueued()
	cancel()
	if err := recv(t, errc); !errors.Is(err, context.Canceled) {
		t.Fatalf("Chat: %v", err)
	}
	// The cancel also stopped "one" on the server (a Cancel frame): its
	// route returns without passing the gate.
	if err := queued.Wait(context.Background()); !errors.Is(err, context.Canceled) {
		t.Fatalf("queued: %v", err)
	}
	// The queued request was never sent: the next one runs next.
	next := s.ChatAsync(context.Background(), "two")
	if got := recv(t, ts.routes.entered); got != "two" {
		t.Fatalf("entered %q", got)
	}
	ts.routes.gate <- struct{}{}
	if err := next.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A cancelled context fails at once.
	if err := s.Chat(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if _, err := c.Builder().Connect(ctx, "echo"); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

func TestClientConnectionLoss(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	ctx := context.Background()
	s, err := c.Builder().Connect(ctx, "gate")
	if err != nil {
		t.Fatal(err)
	}
	pending := s.ChatAsync(ctx, "lost")
	recv(t, ts.routes.entered)
	if err := ts.Close(); err != nil { // the server goes away
		t.Fatal(err)
	}
	if err := pending.Wait(ctx); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("pending: %v", err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed")
	}
	if !errors.Is(c.Err(), ErrConnectionLost) {
		t.Fatalf("Err: %v", c.Err())
	}
	if err := s.Chat(ctx, "x"); !errors.Is(err, chat.ErrSessionClosed) && !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("after loss: %v", err)
	}
	if _, err := c.Builder().Connect(ctx, ""); !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("connect after loss: %v", err)
	}
	waitNoConversations(t, ts.router)
}

func TestClientFailedConnect(t *testing.T) {
	ts := startServer(t, &ServerOptions{MaxSessions: 1})
	c := dialTest(t, ts)
	ctx := context.Background()
	if _, err := c.Builder().Connect(ctx, "nowhere"); !errors.Is(err, chat.ErrRouteNotFound) {
		t.Fatalf("unknown route: %v", err)
	}
	if _, err := c.Builder().Connect(ctx, "echo"); err != nil {
		t.Fatal(err)
	}
	_, err := c.Builder().Connect(ctx, "echo")
	if !errors.Is(err, ErrTooManySessions) {
		t.Fatalf("second session: %v", err)
	}
	if !strings.Contains(err.Error(), "too many sessions") {
		t.Errorf("error %q lacks the server's detail", err)
	}
}

func TestClientHandlerPanic(t *testing.T) {
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	ctx := context.Background()
	s, err := c.Builder().OnMessage(func(string) { panic("handler bug") }).Connect(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Chat(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDialURL(t *testing.T) {
	ts := startServer(t, nil)
	// A URL without a path gets the endpoint's path.
	c, err := Dial(context.Background(), strings.TrimSuffix(ts.url, RoutesPath), &DialOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Builder().Connect(context.Background(), "echo"); err != nil {
		t.Fatal(err)
	}
	if _, err := Dial(context.Background(), strings.TrimSuffix(ts.http.URL, "/")+"/nothing", nil); err == nil {
		t.Fatal("dialled a path that is not the endpoint")
	}
}

func TestFinishedCall(t *testing.T) {
	c := new(chat.Call)
	if c.Err() != nil {
		t.Fatal("Err before Done")
	}
	select {
	case <-c.Done():
		t.Fatal("done too early")
	default:
	}
	want := errors.New("x")
	c.Finish(want)
	<-c.Done()
	if c.Err() != want || c.Wait(context.Background()) != want {
		t.Fatal(c.Err())
	}
	if finishedCall(nil).Wait(context.Background()) != nil {
		t.Fatal("finished call with nil error")
	}
}

func TestClientCloseFromHandler(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialTest(t, ts)
	ctx := context.Background()
	s, err := c.Builder().OnMessage(func(string) { c.Close() }).Connect(ctx, "echo")
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Chat(ctx, "close the client") }()
	if err := recv(t, errc); err != nil && !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatal(err)
	}
	<-c.Done()
	waitNoConversations(t, ts.router)
}
