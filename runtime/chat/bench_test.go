package chat_test

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// echo is the user's route method for text turns:
//
//	//chat:route echo
//	func echo(ctx context.Context, userMessage string) string
func echo(ctx context.Context, userMessage string) string {
	_ = ctx
	return userMessage
}

// echoCount is the user's route method for data turns: it also takes a
// parameter decoded from the request data.
func echoCount(ctx context.Context, userMessage string, count int) string {
	_ = ctx
	_ = count
	return userMessage
}

// typedEchoRoute is the registration chatgen generates for echo.
func typedEchoRoute() chatimpl.RouteSpec {
	return chatimpl.RouteSpec{
		Name: "echo",
		Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			return chat.SendValue(ctx, echo(ctx, req.UserMessage()))
		},
	}
}

// typedEchoCountRoute is the registration chatgen generates for echoCount.
func typedEchoCountRoute() chatimpl.RouteSpec {
	return chatimpl.RouteSpec{
		Name: "echo",
		Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			var arg2 int
			if err := req.Decode("count", &arg2); err != nil {
				return err
			}
			res := echoCount(ctx, req.UserMessage(), arg2)
			return chat.SendValue(ctx, res)
		},
	}
}

// reflectRoute dispatches to method the way a reflection-based framework
// does: each parameter value is built with reflect.New from the method's
// type and decoded from the request data by parameter name (ctx is
// injected), the method is called with reflect.Value.Call and its result
// is boxed again and sent.
func reflectRoute(method any, names ...string) chatimpl.RouteSpec {
	fn := reflect.ValueOf(method)
	ft := fn.Type()
	ctxType := reflect.TypeFor[context.Context]()
	return chatimpl.RouteSpec{
		Name: "echo",
		Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			args := make([]reflect.Value, ft.NumIn())
			for i := range args {
				pt := ft.In(i)
				if pt == ctxType {
					args[i] = reflect.ValueOf(ctx)
					continue
				}
				p := reflect.New(pt)
				if err := req.Decode(names[i], p.Interface()); err != nil {
					return err
				}
				args[i] = p.Elem()
			}
			out := fn.Call(args)
			return chat.SendValue(ctx, out[0].Interface())
		},
	}
}

func benchSession(b testing.TB, spec chatimpl.RouteSpec) chat.Session {
	b.Helper()
	p := chatimpl.NewPackage("example.com/bench")
	p.AddRoute(spec)
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.DiscardHandler)}, p)
	if err != nil {
		b.Fatal(err)
	}
	client := chat.NewLocalClient(r)
	b.Cleanup(func() { _ = client.Close() })
	var got string
	s, err := client.Builder().OnMessage(func(text string) { got = text }).Connect(context.Background(), "")
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Chat(context.Background(), "ping"); err != nil || got != "ping" {
		b.Fatalf("warm-up turn: %v, got %q", err, got)
	}
	return s
}

func benchText(b *testing.B, spec chatimpl.RouteSpec) {
	s := benchSession(b, spec)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Chat(ctx, "hello"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchData(b *testing.B, spec chatimpl.RouteSpec) {
	s := benchSession(b, spec)
	ctx := context.Background()
	data := map[string]any{protocol.KeyUserMessage: "hello", "count": 3}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Send(ctx, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLocalTurn is one chat turn (text) on an echo route through the
// local client, dispatched as generated code does.
func BenchmarkLocalTurn(b *testing.B) { benchText(b, typedEchoRoute()) }

// A text turn through the local client allocates one object: the
// request's state, which holds its context, data and response channel.
func TestLocalTurnAllocatesOnce(t *testing.T) {
	s := benchSession(t, typedEchoRoute())
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() { _ = s.Chat(ctx, "hello") }); n > 1 {
		t.Fatalf("%v allocations per turn, want 1", n)
	}
}

// BenchmarkLocalTurnReflect is the same turn dispatched with reflection.
func BenchmarkLocalTurnReflect(b *testing.B) {
	benchText(b, reflectRoute(echo, "ctx", protocol.KeyUserMessage))
}

// BenchmarkLocalTurnData is one turn whose request is a data map
// ({"userMessage": …, "count": 3}), dispatched as generated code does.
func BenchmarkLocalTurnData(b *testing.B) { benchData(b, typedEchoCountRoute()) }

// BenchmarkLocalTurnDataReflect is the same data turn dispatched with
// reflection.
func BenchmarkLocalTurnDataReflect(b *testing.B) {
	benchData(b, reflectRoute(echoCount, "ctx", protocol.KeyUserMessage, "count"))
}

// minimalRouter is the floor a local turn is compared with: a hand-written
// session router with none of chat's semantics (no scopes, no request
// context, no error handlers, no wipes). A turn is a map lookup under a
// session mutex and two indirect calls, the route and the reply handler,
// delivering the same string reply as BenchmarkLocalTurn.
type minimalRouter struct {
	routes map[string]func(ctx context.Context, text string, reply func(string)) error
}

type minimalSession struct {
	router  *minimalRouter
	mu      sync.Mutex
	route   string
	onReply func(string)
}

var errMinimalNoRoute = errors.New("no such route")

func (s *minimalSession) Chat(ctx context.Context, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.router.routes[s.route]
	if h == nil {
		return errMinimalNoRoute
	}
	return h(ctx, text, s.onReply)
}

// BenchmarkLocalTurnPeerMinimalRouter is BenchmarkLocalTurn's turn on
// minimalRouter: the ratio of the two is what chat's semantics cost. The
// machine-independent ratio is in instructions: run the test binary under
// valgrind --tool=callgrind with GOMAXPROCS=1 and
// GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off (GOGC=off leaves out the
// collector) for -test.benchtime Nx and 2Nx; the difference divided by N
// is the cost of a turn.
func BenchmarkLocalTurnPeerMinimalRouter(b *testing.B) {
	r := &minimalRouter{routes: map[string]func(context.Context, string, func(string)) error{
		"echo": func(ctx context.Context, text string, reply func(string)) error {
			reply(echo(ctx, text))
			return nil
		},
	}}
	var got string
	s := &minimalSession{router: r, route: "echo", onReply: func(text string) { got = text }}
	ctx := context.Background()
	if err := s.Chat(ctx, "ping"); err != nil || got != "ping" {
		b.Fatalf("warm-up turn: %v, got %q", err, got)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Chat(ctx, "hello"); err != nil {
			b.Fatal(err)
		}
	}
}
