package chat_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// hookedEnv is newEnv with route hooks.
func hookedEnv(t *testing.T, hooks []chat.RouteHook, routes []chatimpl.RouteSpec, catches []chatimpl.CatchSpec) *env {
	t.Helper()
	p := chatimpl.NewPackage("example.com/app")
	for _, r := range routes {
		p.AddRoute(r)
	}
	for _, c := range catches {
		p.AddCatch(c)
	}
	lc := &logCapture{}
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: lc.logger(), RouteHooks: hooks}, p)
	if err != nil {
		t.Fatal(err)
	}
	client := chat.NewLocalClient(r)
	t.Cleanup(func() { _ = client.Close() })
	return &env{t: t, router: r, client: client, log: lc}
}

// outcome names a request's outcome as a hook sees it.
func outcome(err error) string {
	if f := chat.FailureOf(err); f != nil {
		return f.Reason
	}
	return "ok"
}

// tracer is a hook recording, in a journal, when it is entered and left,
// with the route, the user's message and the outcome.
func tracer(name string, j *journal) chat.RouteHook {
	return func(next chat.RouteHandler) chat.RouteHandler {
		return func(ctx context.Context, route string, req *chat.RouteRequest) error {
			j.add(fmt.Sprintf("%s> %s %q", name, route, req.UserMessage()))
			err := next(ctx, route, req)
			j.add(fmt.Sprintf("%s< %s", name, outcome(err)))
			return err
		}
	}
}

type ctxKey struct{}

// TestRouteHooksOrderAndOutcome: hooks nest in the order given, the first
// outermost; they see the route, the request and the outcome after the
// error handlers; the context they pass on reaches the route.
func TestRouteHooksOrderAndOutcome(t *testing.T) {
	j := &journal{}
	tag := func(next chat.RouteHandler) chat.RouteHandler {
		return func(ctx context.Context, route string, req *chat.RouteRequest) error {
			return next(context.WithValue(ctx, ctxKey{}, "tagged"), route, req)
		}
	}
	var errHandled = errors.New("handled")
	e := hookedEnv(t, []chat.RouteHook{tracer("outer", j), tracer("inner", j), tag},
		[]chatimpl.RouteSpec{
			asDefault(textRoute("echo", func(ctx context.Context, msg string) (string, error) {
				switch msg {
				case "fail":
					return "", errors.New("boom")
				case "handled":
					return "", errHandled
				case "bad":
					return "", &chat.BadRequestError{Param: "x", Err: errors.New("no")}
				case "elsewhere":
					return "", chat.Route(ctx, "nowhere")
				}
				j.add("route " + msg + " " + ctx.Value(ctxKey{}).(string))
				return "echo " + msg, nil
			})),
		},
		[]chatimpl.CatchSpec{catchFor("", "error", true, func(ctx context.Context, err error) error {
			if errors.Is(err, errHandled) {
				return chat.Response(ctx).Message("sorry")
			}
			return err
		})},
	)
	s, l := e.connect(context.Background(), "")
	wantNoErr(t, s.Chat(context.Background(), "hi"))
	wantEvents(t, l.take(), "Message:echo hi")
	wantEvents(t, j.take(), `outer> echo "hi"`, `inner> echo "hi"`, "route hi tagged", "inner< ok", "outer< ok")

	wantFailure(t, s.Chat(context.Background(), "fail"), "ServerError")
	wantEvents(t, j.take(), `outer> echo "fail"`, `inner> echo "fail"`, "inner< ServerError", "outer< ServerError")

	wantNoErr(t, s.Chat(context.Background(), "handled"))
	wantEvents(t, l.take(), "Message:sorry")
	wantEvents(t, j.take(), `outer> echo "handled"`, `inner> echo "handled"`, "inner< ok", "outer< ok")

	wantFailure(t, s.Chat(context.Background(), "bad"), "BadRequest")
	wantEvents(t, j.take(), `outer> echo "bad"`, `inner> echo "bad"`, "inner< BadRequest", "outer< BadRequest")

	// Switching to a route that does not exist fails at the call (an
	// ordinary route error, here unhandled) and the conversation stays on
	// its route.
	wantFailure(t, s.Chat(context.Background(), "elsewhere"), "ServerError")
	wantEvents(t, j.take(), `outer> echo "elsewhere"`, `inner> echo "elsewhere"`, "inner< ServerError", "outer< ServerError")
	wantNoErr(t, s.Chat(context.Background(), "x"))
	wantEvents(t, l.take(), "Message:echo x")
	j.take()

	// A hook passing on a route that does not exist: hooks see it fail.
	e2 := hookedEnv(t, []chat.RouteHook{tracer("outer", j), func(next chat.RouteHandler) chat.RouteHandler {
		return func(ctx context.Context, route string, req *chat.RouteRequest) error {
			return next(ctx, "nowhere", req)
		}
	}}, []chatimpl.RouteSpec{asDefault(textRoute("echo", func(ctx context.Context, msg string) (string, error) {
		return msg, nil
	}))}, nil)
	s2, _ := e2.connect(context.Background(), "")
	wantFailure(t, s2.Chat(context.Background(), "x"), "RouteNotFound")
	wantEvents(t, j.take(), `outer> echo "x"`, "outer< RouteNotFound")
}

// TestRouteHookRefusesAndRewrites: a hook answers without the route, or
// passes the route another request.
func TestRouteHookRefusesAndRewrites(t *testing.T) {
	refused := errors.New("closed for the night")
	hook := func(next chat.RouteHandler) chat.RouteHandler {
		return func(ctx context.Context, route string, req *chat.RouteRequest) error {
			switch req.UserMessage() {
			case "late":
				return refused
			case "shout":
				return next(ctx, route, chat.NewTextRequest(strings.ToUpper(req.UserMessage())))
			case "drop":
				return next(context.Background(), route, req)
			}
			return next(ctx, route, req)
		}
	}
	ran := 0
	e := hookedEnv(t, []chat.RouteHook{hook}, []chatimpl.RouteSpec{
		textRoute("echo", func(ctx context.Context, msg string) (string, error) {
			ran++
			return "echo " + msg + " " + chat.Request(ctx).UserMessage(), nil
		}),
	}, nil)
	s, l := e.connect(context.Background(), "")
	wantFailure(t, s.Chat(context.Background(), "late"), "ServerError")
	if ran != 0 || !strings.Contains(e.log.String(), "closed for the night") {
		t.Fatalf("refused: the route ran %d times; log %s", ran, e.log.String())
	}
	wantNoErr(t, s.Chat(context.Background(), "shout"))
	wantEvents(t, l.take(), "Message:echo SHOUT SHOUT")
	wantFailure(t, s.Chat(context.Background(), "drop"), "ServerError")
	if !strings.Contains(e.log.String(), "not derived from the request") {
		t.Fatalf("log %s", e.log.String())
	}
	wantNoErr(t, s.Chat(context.Background(), "fine"))
	wantEvents(t, l.take(), "Message:echo fine fine")
}

// TestRouteHookPanics: a panicking hook, before or after the route, fails
// the request with ServerError; the conversation goes on, and closing
// leaves nothing behind.
func TestRouteHookPanics(t *testing.T) {
	hook := func(next chat.RouteHandler) chat.RouteHandler {
		return func(ctx context.Context, route string, req *chat.RouteRequest) error {
			if req.UserMessage() == "before" {
				panic("hook broke before")
			}
			err := next(ctx, route, req)
			if req.UserMessage() == "after" {
				panic("hook broke after")
			}
			return err
		}
	}
	e := hookedEnv(t, []chat.RouteHook{hook}, []chatimpl.RouteSpec{
		textRoute("count", func(ctx context.Context, msg string) (string, error) {
			if msg == "push" {
				return "pushed", chat.Push(ctx)
			}
			d, _ := chat.Depth(ctx)
			return fmt.Sprintf("%s at depth %d", msg, d), nil
		}),
	}, nil)
	s, l := e.connect(context.Background(), "")
	wantFailure(t, s.Chat(context.Background(), "before"), "ServerError")
	wantNoErr(t, s.Chat(context.Background(), "push"))
	wantFailure(t, s.Chat(context.Background(), "after"), "ServerError")
	wantNoErr(t, s.Chat(context.Background(), "still"))
	wantEvents(t, l.take(), "Message:pushed", "Message:after at depth 1", "Message:still at depth 1")
	for _, want := range []string{"a route hook panicked: panic: hook broke before", "a route hook panicked: panic: hook broke after"} {
		if !strings.Contains(e.log.String(), want) {
			t.Fatalf("log lacks %q:\n%s", want, e.log.String())
		}
	}
	wantNoErr(t, s.Close())
	if st := e.router.Stats(); st != (chat.Stats{}) {
		t.Fatalf("after close: %+v", st)
	}
}

// TestConversationID: the id of the top scope, whichever scope is current.
func TestConversationID(t *testing.T) {
	if _, err := chat.ConversationID(context.Background()); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("without a conversation: %v", err)
	}
	ctx, err := chat.Begin(context.Background(), nil)
	wantNoErr(t, err)
	top, _ := chat.ID(ctx)
	wantNoErr(t, chat.Push(ctx))
	wantNoErr(t, chat.Push(ctx))
	cur, _ := chat.ID(ctx)
	id, err := chat.ConversationID(ctx)
	if err != nil || id != top || cur == top {
		t.Fatalf("ConversationID = %q, %v; top %q, current %q", id, err, top, cur)
	}
	wantNoErr(t, chat.End(ctx))
	if _, err := chat.ConversationID(ctx); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("after End: %v", err)
	}
}

func TestFailureOf(t *testing.T) {
	if chat.FailureOf(nil) != nil {
		t.Fatal("FailureOf(nil) is not nil")
	}
	for err, want := range map[error]string{
		errors.New("x"): "ServerError",
		fmt.Errorf("w: %w", &chat.StreamError{Err: errors.New("cut")}): "StreamingFailure",
		chat.ErrForbidden: "Forbidden",
	} {
		if got := chat.FailureOf(err); got.Reason != want || !errors.Is(got, err) {
			t.Errorf("FailureOf(%v) = %v, want %s wrapping it", err, got, want)
		}
	}
}
