package ai_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// echo answers every request with "re: <last user text>".
func echo() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: "re: " + req.LastUserText()}, nil
	})
}

// echoTools answers "call:<tool> <args>" with that tool call, and
// everything else like echo.
func echoTools() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		text := req.LastUserText()
		if len(req.LastToolResults()) == 0 {
			if name, args, ok := strings.Cut(strings.TrimPrefix(text, "call:"), " "); ok && strings.HasPrefix(text, "call:") {
				return calls(call(name, args)), nil
			}
		}
		return llmtest.Reply{Text: "re: " + text}, nil
	})
}

func TestWipesAcrossNestedScopes(t *testing.T) {
	f := newServerFixture(t, echo(), &ai.Config{})
	ctx := begin(t)
	top := memID(t, ctx)
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("top 1")))

	// A nested scope has a memory of its own.
	if err := chat.Push(ctx); err != nil {
		t.Fatal(err)
	}
	child := memID(t, ctx)
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("child 1")))
	wantStrings(t, "child's first request", describe(f.requests()[1].Messages), "system: You are terse.", "human: child 1")
	wantStrings(t, "ids", f.ids(), sorted(top, child)...)

	// ClearMemory clears the current scope's memory only.
	if err := chat.ClearMemory(ctx); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "child after ClearMemory", f.memory(ctx, child))
	wantStrings(t, "top after the child's ClearMemory", f.memory(ctx, top), "system: You are terse.", "human: top 1", "ai: re: top 1")
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("child 2")))
	wantStrings(t, "child after a new turn", f.memory(ctx, child), "system: You are terse.", "human: child 2", "ai: re: child 2")

	// A second level, through PushRoute.
	if err := chat.PushRoute(ctx, "deeper"); err != nil {
		t.Fatal(err)
	}
	grandchild := memID(t, ctx)
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("grandchild 1")))
	wantStrings(t, "ids", f.ids(), sorted(top, child, grandchild)...)

	// Pop destroys the scope and deletes its memory.
	if err := chat.Pop(ctx); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "ids after Pop", f.ids(), sorted(top, child)...)
	if err := chat.Pop(ctx); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "ids after the second Pop", f.ids(), top)
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("top 2")))
	wantStrings(t, "top's second request", describe(f.requests()[len(f.requests())-1].Messages),
		"system: You are terse.", "human: top 1", "ai: re: top 1", "human: top 2")

	// ClearMemory at the top, then End leaves nothing.
	if err := chat.Push(ctx); err != nil {
		t.Fatal(err)
	}
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("child again")))
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "ids after End", f.ids())
	if _, err := f.svc.Chat(ctx, f.req("after the end")); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("after End: %v", err)
	}
}

func TestPerChatAndTwoMethods(t *testing.T) {
	f := newModelFixture(t, echo(), &ai.Config{})
	ctx := begin(t)
	a := f.req("a")
	b := f.req("b")
	b.Method.Name, b.Method.Kind = "Other", chat.KindPerChat
	must[*ai.Reply](t)(f.svc.Chat(ctx, a))
	must[*ai.Reply](t)(f.svc.Chat(ctx, b))
	scope := must[string](t)(chat.ID(ctx))
	wantStrings(t, "ids", f.ids(), sorted(scope+"#"+svcName+".Ask", scope+"#"+svcName+".Other")...)
	if err := chat.ClearMemory(ctx); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "ids after ClearMemory", f.ids())
}

func TestClearDuringTurnWins(t *testing.T) {
	f := newModelFixture(t, echoTools(), &ai.Config{})
	ctx := begin(t)
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("hello")))
	f.box.hooks["note"] = chat.ClearMemory
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req(`call:note {"text":"forget everything"}`)))
	if r.ModelCalls != 2 {
		t.Fatalf("reply %+v", r)
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)))
	// The memory is in use again from the next turn.
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("again")))
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)), "system: You are terse.", "human: again", "ai: re: again")
}

func TestPopDuringTurn(t *testing.T) {
	// A tool ends the scope whose memory the turn uses (the builder's
	// "done" tool): the turn completes, its memory is gone for good.
	f := newModelFixture(t, echoTools(), &ai.Config{})
	ctx := begin(t)
	if err := chat.Push(ctx); err != nil {
		t.Fatal(err)
	}
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("hello")))
	f.box.hooks["note"] = chat.Pop
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req(`call:note {"text":"done"}`)))
	if r.Content != `re: call:note {"text":"done"}` {
		t.Fatalf("reply %+v", r)
	}
	wantStrings(t, "ids", f.ids())
}

func TestInvocationMemory(t *testing.T) {
	f := newModelFixture(t, echo(), &ai.Config{})
	req := func(user string) *ai.Request {
		r := f.req(user)
		r.Method.Kind = chat.KindInvocation
		return r
	}
	for i := range 2 {
		ctx, end := chat.BeginInvocation(context.Background())
		inv, _ := chat.InvocationID(ctx)
		must[*ai.Reply](t)(f.svc.Chat(ctx, req(fmt.Sprint("first ", i))))
		// A nested call made with the handed ctx shares the invocation
		// and its memory.
		nested, endNested := chat.BeginInvocation(ctx)
		must[*ai.Reply](t)(f.svc.Chat(nested, req(fmt.Sprint("second ", i))))
		endNested()
		wantStrings(t, "ids", f.ids(), inv+"#"+svcName+".Ask")
		end()
		wantStrings(t, "ids after the invocation", f.ids())
	}
	reqs := f.requests()
	wantStrings(t, "a fresh memory per top-level call", describe(reqs[2].Messages), "system: You are terse.", "human: first 1")
	wantStrings(t, "shared within the call", describe(reqs[3].Messages),
		"system: You are terse.", "human: first 1", "ai: re: first 1", "human: second 1")
}

// routeEnv is a router whose routes call the service, with a local client.
type routeEnv struct {
	f      *fixture
	client *chat.LocalClient
	router *chat.Router
}

func newRouteEnv(t *testing.T, f *fixture, routes ...chatimpl.RouteSpec) *routeEnv {
	t.Helper()
	p := chatimpl.NewPackage("example.com/app")
	for _, r := range routes {
		p.AddRoute(r)
	}
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: f.logs.logger()}, p)
	if err != nil {
		t.Fatal(err)
	}
	client := chat.NewLocalClient(router)
	t.Cleanup(func() { _ = client.Close() })
	return &routeEnv{f: f, client: client, router: router}
}

func TestScheduledWipesThroughRouter(t *testing.T) {
	f := newServerFixture(t, echo(), &ai.Config{})
	// talk answers with the AI service; its words steer the wipes.
	talk := func(ctx context.Context, route, msg string) error {
		r, err := f.svc.Chat(ctx, f.req(msg))
		if err != nil {
			return err
		}
		for _, w := range strings.Fields(msg) {
			switch w {
			case "wipe":
				err = chat.ScheduleWipe(ctx)
			case "abort":
				err = chat.AbortWipe(ctx)
			case "deeper":
				if route != "main" {
					continue
				}
				if err = chat.PushRoute(ctx, "sub"); err == nil {
					err = chat.Execute(ctx)
				}
			case "back":
				err = chat.Pop(ctx)
			}
			if err != nil {
				return err
			}
		}
		return chat.SendValue(ctx, r.Content)
	}
	route := func(name string, def bool) chatimpl.RouteSpec {
		return chatimpl.RouteSpec{Name: name, Default: def, Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			return talk(ctx, name, req.UserMessage())
		}}
	}
	e := newRouteEnv(t, f, route("main", true), route("sub", false))
	var mu sync.Mutex
	var got []string
	s, err := e.client.Builder().OnMessage(func(text string) {
		mu.Lock()
		got = append(got, text)
		mu.Unlock()
	}).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	top := s.ScopeID() + "#" + svcName + ".Ask"
	chatOK := func(msg string) {
		t.Helper()
		if err := s.Chat(context.Background(), msg); err != nil {
			t.Fatalf("%q: %v\n%s", msg, err, f.logs)
		}
	}

	chatOK("hello")
	chatOK("wipe")
	wantStrings(t, "ids after a scheduled wipe", f.ids())
	chatOK("hello again")
	chatOK("wipe abort")
	wantStrings(t, "memory after an aborted wipe", f.memory(context.Background(), top),
		"system: You are terse.", "human: hello again", "ai: re: hello again", "human: wipe abort", "ai: re: wipe abort")

	// The top scope schedules a wipe, then a nested scope answers the
	// same message (Execute) and schedules its own: the end of the
	// request clears both, walking up from the current scope.
	chatOK("wipe deeper")
	sub := s.ScopeID() + "#" + svcName + ".Ask"
	if sub == top {
		t.Fatal("no nested scope")
	}
	wantStrings(t, "ids after nested wipes", f.ids())
	chatOK("sub talk")
	wantStrings(t, "ids", f.ids(), sub)
	// A wipe scheduled in the nested scope only clears it.
	chatOK("wipe")
	wantStrings(t, "ids", f.ids())
	chatOK("more")
	chatOK("back")
	wantStrings(t, "ids after popping the nested scope", f.ids())
	chatOK("top again")
	wantStrings(t, "ids", f.ids(), top)

	// Closing the session leaves nothing behind.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "ids after Close", f.ids())
	if st := e.router.Stats(); st.Scopes != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func sorted(s ...string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
