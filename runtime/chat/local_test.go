package chat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// gated is a route recording the messages it runs, in order, and noticing
// overlapping runs. A message starting with "block" announces itself on
// entered and waits for release.
type gated struct {
	entered chan string
	release chan struct{}

	inside  atomic.Int32
	overlap atomic.Bool
	mu      sync.Mutex
	seen    []string
}

func newGated() *gated {
	return &gated{entered: make(chan string, 100), release: make(chan struct{})}
}

func (g *gated) route(name string) chatimpl.RouteSpec {
	return textRoute(name, func(ctx context.Context, msg string) (string, error) {
		if g.inside.Add(1) != 1 {
			g.overlap.Store(true)
		}
		defer g.inside.Add(-1)
		g.mu.Lock()
		g.seen = append(g.seen, msg)
		g.mu.Unlock()
		if strings.HasPrefix(msg, "block") {
			g.entered <- msg
			<-g.release
		}
		for range 3 {
			runtime.Gosched() // give an overlapping request its chance
		}
		return "done " + msg, nil
	})
}

func (g *gated) messages() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.seen)
}

func (l *evlog) has(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range l.evs {
		if ev.Type+":"+ev.Text() == s {
			return true
		}
	}
	return false
}

func TestSessionRequestsAreSerialised(t *testing.T) {
	g := newGated()
	e := newEnv(t, []chatimpl.RouteSpec{g.route("r")}, nil)
	s, l := e.connect(bg, "")
	const workers, each = 8, 25
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				msg := fmt.Sprintf("w%d-%d", w, i)
				var err error
				if i%2 == 0 {
					err = s.Chat(bg, msg)
				} else {
					ctx, cancel := context.WithTimeout(bg, 5*time.Second)
					err = s.ChatAsync(bg, msg).Wait(ctx)
					cancel()
				}
				if err != nil {
					t.Errorf("%s: %v", msg, err)
					return
				}
				// Its events were delivered before it returned.
				if !l.has("Message:done " + msg) {
					t.Errorf("%s returned before its event arrived", msg)
				}
			}
		})
	}
	wg.Wait()
	if g.overlap.Load() {
		t.Fatal("requests of one session overlapped")
	}
	if n := len(g.messages()); n != workers*each {
		t.Fatalf("%d requests ran, want %d", n, workers*each)
	}
	if n := len(l.take()); n != workers*each {
		t.Fatalf("%d events, want %d", n, workers*each)
	}
}

func TestChatAsyncRunsInArrivalOrder(t *testing.T) {
	g := newGated()
	e := newEnv(t, []chatimpl.RouteSpec{g.route("r")}, nil)
	s, l := e.connect(bg, "")
	first := s.ChatAsync(bg, "block-0")
	recv(t, g.entered, "the blocking request") // the rest queue behind it
	var calls []*chat.Call
	var want []string
	for i := 1; i <= 50; i++ {
		msg := fmt.Sprint("m", i)
		calls = append(calls, s.ChatAsync(bg, msg))
		want = append(want, msg)
	}
	for _, c := range calls {
		select {
		case <-c.Done():
			t.Fatal("a queued call finished while the first one runs")
		default:
		}
		if c.Err() != nil {
			t.Fatal("Err before Done")
		}
	}
	// A synchronous Chat waits its turn behind them.
	lastDone := make(chan error, 1)
	go func() { lastDone <- s.Chat(bg, "last") }()
	time.Sleep(10 * time.Millisecond)
	close(g.release)
	wantNoErr(t, recv(t, lastDone, "the last Chat"))
	// Chat returned after all earlier calls finished.
	for i, c := range calls {
		select {
		case <-c.Done():
		default:
			t.Fatalf("call %d not done when a later Chat returned", i+1)
		}
		wantNoErr(t, c.Err())
	}
	wantNoErr(t, wait(t, first))
	want = append([]string{"block-0"}, append(want, "last")...)
	wantEvents(t, g.messages(), want...)
	var wantEvs []string
	for _, m := range want {
		wantEvs = append(wantEvs, "Message:done "+m)
	}
	wantEvents(t, l.take(), wantEvs...)
}

func TestSessionsRunInParallel(t *testing.T) {
	const n = 8
	var arrived atomic.Int32
	all := make(chan struct{})
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("barrier", func(ctx context.Context, msg string) (string, error) {
			if arrived.Add(1) == n {
				close(all)
			}
			select {
			case <-all:
				return "through " + msg, nil
			case <-time.After(5 * time.Second):
				return "", errors.New("sessions do not run in parallel")
			}
		}),
	}, nil)
	var wg sync.WaitGroup
	for i := range n {
		s, l := e.connect(bg, "")
		wg.Go(func() {
			msg := fmt.Sprint("s", i)
			if err := s.Chat(bg, msg); err != nil {
				t.Errorf("%s: %v", msg, err)
				return
			}
			if got := l.take(); !slices.Equal(got, []string{"Message:through " + msg}) {
				t.Errorf("%s: events %q", msg, got)
			}
		})
	}
	wg.Wait()
}

func TestCallWaitWithACancelledContext(t *testing.T) {
	g := newGated()
	e := newEnv(t, []chatimpl.RouteSpec{g.route("r")}, nil)
	s, l := e.connect(bg, "")
	first := s.ChatAsync(bg, "block")
	recv(t, g.entered, "the blocking request")
	second := s.ChatAsync(bg, "second")
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if err := second.Wait(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a cancelled ctx: %v", err)
	}
	dctx, dcancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer dcancel()
	if err := first.Wait(dctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past its deadline: %v", err)
	}
	// The requests go on.
	close(g.release)
	wantNoErr(t, wait(t, first))
	wantNoErr(t, wait(t, second))
	wantEvents(t, l.take(), "Message:done block", "Message:done second")
}

func TestCancelledRequestsDoNotRun(t *testing.T) {
	g := newGated()
	e := newEnv(t, []chatimpl.RouteSpec{g.route("r")}, nil)
	s, l := e.connect(bg, "")
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	// On an idle session.
	if err := s.Chat(cancelled, "idle"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Chat with a cancelled ctx: %v", err)
	}
	// Queued.
	first := s.ChatAsync(bg, "block")
	recv(t, g.entered, "the blocking request")
	qctx, qcancel := context.WithCancel(bg)
	queued := s.ChatAsync(qctx, "queued")
	syncDone := make(chan error, 1)
	sctx, scancel := context.WithCancel(bg)
	go func() { syncDone <- s.Chat(sctx, "sync") }()
	after := s.ChatAsync(bg, "after")
	time.Sleep(10 * time.Millisecond) // let the sync Chat queue
	qcancel()
	scancel()
	if err := recv(t, syncDone, "the queued Chat"); !errors.Is(err, context.Canceled) {
		t.Fatalf("queued Chat after cancel: %v", err)
	}
	close(g.release)
	wantNoErr(t, wait(t, first))
	if err := wait(t, queued); !errors.Is(err, context.Canceled) {
		t.Fatalf("queued call after cancel: %v", err)
	}
	wantNoErr(t, wait(t, after))
	wantEvents(t, g.messages(), "block", "after")
	wantEvents(t, l.take(), "Message:done block", "Message:done after")
}

func TestSessionCloseFailsQueuedCalls(t *testing.T) {
	g := newGated()
	j := &journal{}
	bean := closerBean(j, chat.KindChat)
	gr := g.route("r")
	e := newEnv(t, []chatimpl.RouteSpec{{Name: "r", Handle: func(ctx context.Context) error {
		if _, err := bean.Lookup(ctx); err != nil {
			return err
		}
		return gr.Handle(ctx)
	}}}, nil)
	s, l := e.connect(bg, "")
	first := s.ChatAsync(bg, "block")
	recv(t, g.entered, "the blocking request")
	queued := []*chat.Call{s.ChatAsync(bg, "q1"), s.SendAsync(bg, map[string]any{"userMessage": "q2"})}
	syncDone := make(chan error, 1)
	go func() { syncDone <- s.Chat(bg, "q3") }()
	time.Sleep(10 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	for _, c := range queued {
		if err := wait(t, c); !errors.Is(err, chat.ErrSessionClosed) {
			t.Fatalf("queued call: %v, want ErrSessionClosed", err)
		}
	}
	if err := recv(t, syncDone, "the queued Chat"); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("queued Chat: %v, want ErrSessionClosed", err)
	}
	// Close waits for the request in progress, which completes.
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a request runs", err)
	case <-first.Done():
		t.Fatal("the running request ended early")
	case <-time.After(10 * time.Millisecond):
	}
	close(g.release)
	wantNoErr(t, wait(t, first))
	wantNoErr(t, recv(t, closed, "Close"))
	wantEvents(t, j.take(), "new bean@0", "close bean@0")
	wantEvents(t, g.messages(), "block")
	wantEvents(t, l.take(), "Message:done block")
	// Closed for good.
	if err := s.Chat(bg, "x"); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("Chat after Close: %v", err)
	}
	if err := s.Send(bg, map[string]any{}); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
	if err := wait(t, s.ChatAsync(bg, "x")); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("ChatAsync after Close: %v", err)
	}
	wantNoErr(t, s.Close())
	if st := e.router.Stats(); st != (chat.Stats{}) {
		t.Fatalf("stats %+v", st)
	}
}

func TestSendAsyncWithUnencodableData(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{textRoute("r", func(ctx context.Context, msg string) (string, error) { return msg, nil })}, nil)
	s, l := e.connect(bg, "")
	c := s.SendAsync(bg, map[string]any{"f": func() {}})
	if err := wait(t, c); err == nil || !strings.Contains(err.Error(), "encoding request data") {
		t.Fatalf("SendAsync: %v", err)
	}
	if err := s.Send(bg, []string{"not an object"}); !errors.Is(err, chat.ErrBadRequest) {
		t.Fatalf("Send: %v", err)
	}
	wantEvents(t, l.take())
}

func TestClientCloseEndsEverySession(t *testing.T) {
	j := &journal{}
	bean := closerBean(j, chat.KindPerChat)
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("r", func(ctx context.Context, msg string) (string, error) {
			if msg == "push" {
				if err := chat.Push(ctx); err != nil {
					return "", err
				}
			}
			_, err := bean.Lookup(ctx)
			return "", err
		}),
	}, nil)
	var sessions []chat.Session
	for i := range 3 {
		s, _ := e.connect(bg, "")
		wantNoErr(t, s.Chat(bg, "hi"))
		if i == 2 {
			wantNoErr(t, s.Chat(bg, "push"))
		}
		sessions = append(sessions, s)
	}
	if st := e.router.Stats(); st.Conversations != 3 || st.Scopes != 4 {
		t.Fatalf("stats %+v", st)
	}
	j.take()
	wantNoErr(t, e.client.Close())
	got := j.take()
	slices.Sort(got)
	wantEvents(t, got, "close bean@0", "close bean@0", "close bean@0", "close bean@1")
	if st := e.router.Stats(); st != (chat.Stats{}) {
		t.Fatalf("stats after Close %+v", st)
	}
	for _, s := range sessions {
		if err := s.Chat(bg, "hi"); !errors.Is(err, chat.ErrSessionClosed) {
			t.Fatalf("Chat after Client.Close: %v", err)
		}
	}
	if _, err := e.client.Builder().Connect(bg, ""); !errors.Is(err, chat.ErrSessionClosed) {
		t.Fatalf("Connect after Client.Close: %v", err)
	}
	wantNoErr(t, e.client.Close())
	if st := e.router.Stats(); st != (chat.Stats{}) {
		t.Fatalf("a refused connect left %+v", st)
	}
}

func TestNoLeaksAfterClientClose(t *testing.T) {
	baseline := runtime.NumGoroutine()
	var built, closed atomic.Int32
	bean := chat.NewBean("example.com/app.counted", &chat.BeanOptions{Kind: chat.KindPerChat}, func(ctx context.Context) (*countedBean, error) {
		built.Add(1)
		return &countedBean{closed: &closed}, nil
	})
	release := make(chan struct{})
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("r", func(ctx context.Context, msg string) (string, error) {
			if _, err := bean.Lookup(ctx); err != nil {
				return "", err
			}
			switch msg {
			case "push":
				if err := chat.Push(ctx); err != nil {
					return "", err
				}
				_, err := bean.Lookup(ctx)
				return "pushed", err
			case "pop":
				return "popped", chat.Pop(ctx)
			case "block":
				<-release
			case "fail":
				return "", errors.New("fail")
			case "panic":
				panic("leak test")
			}
			return "ok", nil
		}),
	}, nil)
	var pending []*chat.Call
	for i := range 6 {
		s, _ := e.connect(bg, "")
		for k, msg := range []string{"push", "hi", "push", "fail", "pop", "panic", "push"} {
			if (i+k)%2 == 0 {
				if err := s.Chat(bg, msg); err != nil && msg != "fail" && msg != "panic" {
					t.Fatal(err)
				}
			} else {
				pending = append(pending, s.ChatAsync(bg, msg))
			}
		}
		if i%2 == 0 { // a blocked request with more queued behind it
			pending = append(pending, s.ChatAsync(bg, "block"), s.ChatAsync(bg, "hi"), s.ChatAsync(bg, "push"))
		}
	}
	closeDone := make(chan error, 1)
	go func() { closeDone <- e.client.Close() }()
	time.Sleep(10 * time.Millisecond)
	close(release)
	wantNoErr(t, recv(t, closeDone, "Client.Close"))
	for _, c := range pending {
		if err := wait(t, c); err != nil && !errors.Is(err, chat.ErrSessionClosed) {
			var f *chat.Failure
			if !errors.As(err, &f) {
				t.Fatalf("pending call: %v", err)
			}
		}
	}
	if st := e.router.Stats(); st != (chat.Stats{}) {
		t.Fatalf("stats after Close %+v", st)
	}
	if built.Load() == 0 || built.Load() != closed.Load() {
		t.Fatalf("%d beans built, %d closed", built.Load(), closed.Load())
	}
	// Generous: the goroutines of a closed client end soon, but a loaded
	// machine may take long to run them; a leaked one never ends.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, baseline %d; all goroutines:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type countedBean struct{ closed *atomic.Int32 }

func (b *countedBean) Close() { b.closed.Add(1) }

// One builder connecting two sessions: each session keeps the handlers it
// was connected with (Quarkus's JS client shares them, breaking the first
// session).
func TestBuilderGivesEachSessionItsOwnHandlers(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("r", func(ctx context.Context, msg string) (string, error) {
			_ = chat.Response(ctx).Thinking("thinking " + msg)
			return "re " + msg, nil
		}),
	}, nil)
	var first, second, shared evlog
	b := e.client.Builder().OnThinking(func(s string) { shared.add(chat.Event{Type: "Thinking", Data: s}) })
	b.OnMessage(func(s string) { first.add(chat.Event{Type: "Message", Data: s}) })
	s1, err := b.Connect(bg, "")
	wantNoErr(t, err)
	b.OnMessage(func(s string) { second.add(chat.Event{Type: "Message", Data: s}) })
	s2, err := b.Connect(bg, "")
	wantNoErr(t, err)
	if s1.ScopeID() == s2.ScopeID() {
		t.Fatal("two sessions share a scope")
	}
	var wg sync.WaitGroup
	for _, s := range []chat.Session{s1, s2} {
		wg.Go(func() {
			for i := range 20 {
				if err := s.Chat(bg, fmt.Sprint(i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprint("Message:re ", i))
	}
	wantEvents(t, first.take(), want...)
	wantEvents(t, second.take(), want...)
	if n := len(shared.take()); n != 40 {
		t.Fatalf("%d thinking events, want 40", n)
	}
}

// A text event reaches a text handler (OnMessage…) as its text, and an
// On or OnDefault handler as an Event whose Data is the string the route
// sent; the handler registered last for a type wins.
func TestHandlersOfTextEvents(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{{Name: "r", Handle: func(ctx context.Context) error {
		res := chat.Response(ctx)
		for _, err := range []error{
			res.Message("m"), res.Thinking("t"), res.Console("c"), res.Error("e"),
			chat.Response(ctx).Stream(func(yield func(string) bool) { yield("s") }),
			res.Event("Custom", "x"),
			chat.SendValue(ctx, "v"),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	}}}, nil)
	var got []string
	var dataTypes []string
	record := func(ev chat.Event) {
		got = append(got, "event "+ev.Type+":"+ev.Text())
		dataTypes = append(dataTypes, fmt.Sprintf("%T", ev.Data))
	}
	s, err := e.client.Builder().
		On(protocol.EventThinking, record). // replaced below
		OnThinking(func(text string) { got = append(got, "thinking "+text) }).
		OnMessage(func(text string) { got = append(got, "message "+text) }).
		On(protocol.EventMessage, record). // replaces OnMessage
		OnStream(func(text string) { got = append(got, "stream "+text) }).
		On("Custom", record).
		OnDefault(record).
		Connect(bg, "")
	wantNoErr(t, err)
	wantNoErr(t, s.Chat(bg, "go"))
	wantEvents(t, got,
		"event Message:m", "thinking t", "event Console:c", "event Error:e",
		"stream s", "event Custom:x", "event Message:v")
	if !slices.Equal(dataTypes, []string{"string", "string", "string", "string", "string"}) {
		t.Fatalf("event data types %v, want strings", dataTypes)
	}
}

// Handlers.Dispatch, which client transports call, routes events the same
// way.
func TestHandlersDispatch(t *testing.T) {
	var got []string
	var conn connector
	b := chat.NewSessionBuilder(&conn).
		OnMessage(func(text string) { got = append(got, "message "+text) }).
		On("Custom", func(ev chat.Event) { got = append(got, "custom "+ev.Text()) }).
		OnDefault(func(ev chat.Event) { got = append(got, "default "+ev.Type) })
	if _, err := b.Connect(bg, ""); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []chat.Event{
		chat.Event{Type: protocol.EventMessage, Data: json.RawMessage(`"hi"`)},
		{Type: "Custom", Data: 1},
		{Type: protocol.EventThinking, Data: "t"},
	} {
		conn.h.Dispatch(ev)
	}
	wantEvents(t, got, "message hi", "custom 1", "default Thinking")
}

// connector is a chat.Connector that keeps the handlers it was given.
type connector struct{ h *chat.Handlers }

func (c *connector) Connect(_ context.Context, _ string, h *chat.Handlers) (chat.Session, error) {
	c.h = h
	return nil, nil
}
