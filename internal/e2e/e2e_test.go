package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// transcript records what a session's handlers received, in order.
type transcript struct {
	mu     sync.Mutex
	events []string
}

func (tr *transcript) add(s string) {
	tr.mu.Lock()
	tr.events = append(tr.events, s)
	tr.mu.Unlock()
}

func (tr *transcript) take() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := tr.events
	tr.events = nil
	return out
}

type fixture struct {
	router *chat.Router
	client *chat.LocalClient
	log    *bytes.Buffer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	var log bytes.Buffer
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))}, Register())
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{router: r, client: chat.NewLocalClient(r), log: &log}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (f *fixture) connect(t *testing.T, ctx context.Context, route string) (chat.Session, *transcript) {
	t.Helper()
	tr := &transcript{}
	s, err := f.client.Builder().
		OnMessage(func(m string) { tr.add("message: " + m) }).
		OnThinking(func(m string) { tr.add("thinking: " + m) }).
		OnError(func(m string) { tr.add("error: " + m) }).
		OnStream(func(c string) { tr.add("stream: " + c) }).
		OnObject(func(ev chat.Event) { tr.add("object: " + ev.Text()) }).
		On("weapon", func(ev chat.Event) {
			var w Weapon
			if err := ev.Decode(&w); err != nil {
				t.Error(err)
			}
			tr.add(fmt.Sprintf("weapon: %s/%d", w.Name, w.Damage))
		}).
		Connect(ctx, route)
	if err != nil {
		t.Fatal(err)
	}
	return s, tr
}

func expect(t *testing.T, tr *transcript, want ...string) {
	t.Helper()
	if got := tr.take(); !slices.Equal(got, want) {
		t.Fatalf("events:\n  got  %q\n  want %q", got, want)
	}
}

func expectFailure(t *testing.T, err error, reason *chat.Failure) {
	t.Helper()
	var f *chat.Failure
	if !errors.As(err, &f) || !errors.Is(err, reason) {
		t.Fatalf("error %v, want a %s failure", err, reason.Reason)
	}
}

func TestMainMenuPattern(t *testing.T) {
	f := newFixture(t)
	defer f.client.Close()
	ctx := context.Background()
	s, tr := f.connect(t, ctx, "")
	top := s.ScopeID()

	if err := s.Chat(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, "message: menu 1: hello")

	// The menu pushes the builder and executes it within the same request.
	if err := s.Chat(ctx, "build sword"); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, "thinking: opening the builder", "weapon: sword/0")
	nested := s.ScopeID()
	if nested == top {
		t.Fatal("scope id did not follow the push")
	}

	// The next requests go to the builder, with typed data.
	if err := s.Send(ctx, map[string]any{"userMessage": "build flame sword", "damage": 7}); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, "weapon: flame sword/7")
	if s.ScopeID() != nested {
		t.Fatal("scope changed without push or pop")
	}

	// done pops back to the menu, which remembers its own route and state.
	if err := s.Chat(ctx, "done"); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, "message: saved flame sword")
	if s.ScopeID() != top {
		t.Fatalf("after pop scope %s, want the top scope %s", s.ScopeID(), top)
	}
	if err := s.Chat(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, "message: menu 3: again")

	// A second trip gets a fresh builder: the popped one was destroyed.
	if err := s.Chat(ctx, "build axe"); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, "thinking: opening the builder", "weapon: axe/0")
}

func TestResultMappings(t *testing.T) {
	f := newFixture(t)
	defer f.client.Close()
	ctx := context.Background()

	s, tr := f.connect(t, ctx, "echo")
	if err := s.Chat(ctx, "ping"); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, "message: ping")
	if err := s.Chat(ctx, ""); err != nil {
		t.Fatal(err)
	}
	expect(t, tr) // an empty string sends nothing

	s, tr = f.connect(t, ctx, "count")
	if err := s.Send(ctx, struct {
		Count int    `json:"count"`
		Label string `json:"label"`
	}{21, "x"}); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, `object: {"double":42,"label":"x"}`)
	// Missing keys are zero values.
	if err := s.Send(ctx, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, `object: {"double":0,"label":""}`)
	// A value of the wrong type fails the request with BadRequest naming the
	// parameter in the log; the session keeps working.
	expectFailure(t, s.Send(ctx, map[string]any{"count": "many"}), chat.ErrBadRequest)
	expect(t, tr)
	if !strings.Contains(f.log.String(), `parameter \"count\"`) {
		t.Fatalf("log does not name the parameter:\n%s", f.log.String())
	}
	if err := s.Send(ctx, map[string]any{"count": 1}); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, `object: {"double":2,"label":""}`)

	s, tr = f.connect(t, ctx, "stream")
	if err := s.Chat(ctx, "one two three"); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, "stream: one", "stream: two", "stream: three")
	expectFailure(t, s.Chat(ctx, "one fail two"), chat.ErrStreamingFailure)
	expect(t, tr, "stream: one")
}

func TestFailuresKeepTheConversation(t *testing.T) {
	f := newFixture(t)
	defer f.client.Close()
	ctx := context.Background()

	s, _ := f.connect(t, ctx, "panic")
	scope := s.ScopeID()
	expectFailure(t, s.Chat(ctx, "boom"), chat.ErrServerError)
	expectFailure(t, s.Chat(ctx, "again"), chat.ErrServerError)
	if s.ScopeID() != scope {
		t.Fatal("a failure changed the scope")
	}
	if !strings.Contains(f.log.String(), "route panicked: boom") || !strings.Contains(f.log.String(), scope) {
		t.Fatalf("the log lacks the panic or the scope id:\n%s", f.log.String())
	}

	s, tr := f.connect(t, ctx, "shop")
	// Handled by the shop's own handler: Completed, with its Error event.
	if err := s.Chat(ctx, "sword"); err != nil {
		t.Fatalf("handled error: %v", err)
	}
	expect(t, tr, "error: sorry, no sword")
	// Unhandled: ServerError, and the internal text stays on the server.
	err := s.Chat(ctx, "axe")
	expectFailure(t, err, chat.ErrServerError)
	if strings.Contains(err.Error(), "database") {
		t.Fatalf("internal error text reached the client: %v", err)
	}
	if !strings.Contains(f.log.String(), "database down") {
		t.Fatal("internal error not logged")
	}
	if err := s.Chat(ctx, "shield"); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, "message: bought shield")

	// Unknown route on connect.
	if _, err := f.client.Builder().Connect(ctx, "nowhere"); !errors.Is(err, chat.ErrRouteNotFound) {
		t.Fatalf("connect to an unknown route: %v", err)
	}

	// A route that ends the conversation: that request and the next fail
	// with SessionNotActive.
	s, _ = f.connect(t, ctx, "bye")
	expectFailure(t, s.Chat(ctx, "bye"), chat.ErrSessionNotActive)
	expectFailure(t, s.Chat(ctx, "hello?"), chat.ErrSessionNotActive)
}

func TestRoles(t *testing.T) {
	f := newFixture(t)
	defer f.client.Close()
	ctx := context.Background()
	s, _ := f.connect(t, ctx, "admin")
	expectFailure(t, s.Chat(ctx, "hi"), chat.ErrForbidden)

	admin := chat.WithPrincipal(ctx, chat.User{ID: "ada", Roles: []string{"admin"}})
	s, tr := f.connect(t, admin, "admin")
	if err := s.Chat(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	expect(t, tr, "message: welcome, admin")
}

func TestConcurrentSessions(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	base := runtime.NumGoroutine()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			s, tr := f.connect(t, ctx, "")
			for j := range 5 {
				msg := fmt.Sprintf("s%d-%d", i, j)
				if err := s.Chat(ctx, msg); err != nil {
					t.Error(err)
					return
				}
				if got := tr.take(); len(got) != 1 || got[0] != fmt.Sprintf("message: menu %d: %s", j+1, msg) {
					t.Errorf("session %d turn %d: %q", i, j, got)
				}
			}
			if err := s.Chat(ctx, "build bow"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if st := f.router.Stats(); st.Conversations != 20 || st.Scopes != 40 {
		t.Fatalf("stats %+v, want 20 conversations with 2 scopes each", st)
	}
	if err := f.client.Close(); err != nil {
		t.Fatal(err)
	}
	if st := f.router.Stats(); st != (chat.Stats{}) {
		t.Fatalf("after Close: %+v, want nothing left", st)
	}
	// Generous: a loaded machine may take long to run the ending
	// goroutines; a leaked one never ends.
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines left, baseline %d; all goroutines:\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

// BenchmarkLocalTurn is one chat turn on the generated echo route through
// the local client.
func BenchmarkLocalTurn(b *testing.B) {
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.DiscardHandler)}, Register())
	if err != nil {
		b.Fatal(err)
	}
	benchmarkTurn(b, r)
}

// BenchmarkLocalTurnReflect is the same turn dispatched the way a
// reflection-based framework would: JSON into reflect.New values and
// reflect.Value.Call.
func BenchmarkLocalTurnReflect(b *testing.B) {
	p := chatimpl.NewPackage("example.com/reflect")
	fn := reflect.ValueOf(Echo)
	names := []string{"userMessage"}
	p.AddRoute(chatimpl.RouteSpec{Name: "echo", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		args := make([]reflect.Value, fn.Type().NumIn())
		for i := range args {
			v := reflect.New(fn.Type().In(i))
			raw, err := json.Marshal(req.UserMessage())
			if err != nil {
				return err
			}
			if err := json.Unmarshal(raw, v.Interface()); err != nil {
				return &chat.BadRequestError{Param: names[i], Err: err}
			}
			args[i] = v.Elem()
		}
		out := fn.Call(args)
		return chat.SendValue(ctx, out[0].Interface())
	}})
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.DiscardHandler)}, p)
	if err != nil {
		b.Fatal(err)
	}
	benchmarkTurn(b, r)
}

func benchmarkTurn(b *testing.B, r *chat.Router) {
	client := chat.NewLocalClient(r)
	defer client.Close()
	var got string
	s, err := client.Builder().OnMessage(func(m string) { got = m }).Connect(context.Background(), "echo")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Chat(ctx, "hello"); err != nil {
			b.Fatal(err)
		}
	}
	if got != "hello" {
		b.Fatalf("echo got %q", got)
	}
}

// TestPanicStackNamesTheRoute checks that a route's panic stack names the
// generated route function, not an anonymous closure of Register.
func TestPanicStackNamesTheRoute(t *testing.T) {
	stacks := make(chan string, 1)
	catcher := chatimpl.NewPackage("example.com/catcher")
	catcher.AddCatch(chatimpl.CatchSpec{Type: "*chat.PanicError", Handle: func(_ context.Context, err error) (bool, error) {
		pe, ok := err.(*chat.PanicError)
		if ok {
			stacks <- string(pe.Stack)
		}
		return ok, nil
	}})
	r, err := chat.NewRouter(nil, Register(), catcher)
	if err != nil {
		t.Fatal(err)
	}
	client := chat.NewLocalClient(r)
	defer client.Close()
	ctx := context.Background()
	s, err := client.Builder().Connect(ctx, "panic")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(ctx, "boom"); err != nil {
		t.Fatalf("the catch-all handled the panic: %v", err)
	}
	stack := <-stacks
	if !strings.Contains(stack, "e2e.chatRoutePanic(") || strings.Contains(stack, "Register.func") {
		t.Fatalf("the stack does not name the route function:\n%s", stack)
	}
}
