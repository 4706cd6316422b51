package chat_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

type runCounter struct{ n int }

// TestConversationRun: a function run with Conversation.Run sees the
// scope's beans and sends events as a route does; the scope's roles hold;
// its error fails the request; Scopes and Peek show the stack and beans
// without creating one.
func TestConversationRun(t *testing.T) {
	bean := chat.NewBean("example.com/run.runCounter", nil, func(context.Context) (*runCounter, error) { return &runCounter{}, nil })
	p := chatimpl.NewPackage("example.com/run")
	p.AddRoute(chatimpl.RouteSpec{Name: "count", Default: true, Handle: func(ctx context.Context) error {
		c, err := bean.Lookup(ctx)
		if err != nil {
			return err
		}
		c.n++
		if chat.Request(ctx).UserMessage() == "nest" {
			return chat.PushRoute(ctx, "inner")
		}
		return nil
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "inner", Handle: func(ctx context.Context) error { return nil }})
	p.AddRoute(chatimpl.RouteSpec{Name: "admin", Roles: []string{"admin"}, Handle: func(ctx context.Context) error { return nil }})
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conv, err := r.Connect(ctx, "count")
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close(ctx)

	var events []string
	sink := func(ev chat.Event) error { events = append(events, ev.Type+":"+ev.Text()); return nil }
	peeked := func(ctx context.Context) (int, bool) {
		c, ok := bean.Peek(ctx)
		if !ok {
			return 0, false
		}
		return c.n, true
	}
	_, f := conv.Run(ctx, conv.ScopeID(), nil, sink, func(ctx context.Context) error {
		if _, ok := peeked(ctx); ok {
			t.Error("Peek found a bean before any was made")
		}
		if err := chat.Execute(ctx); err != nil {
			return err
		}
		n, ok := peeked(ctx)
		return chat.Response(ctx).Message(fmtCount(n, ok))
	})
	if f != nil {
		t.Fatal(f)
	}
	if !slices.Equal(events, []string{"Message:1 true"}) {
		t.Fatalf("events %q", events)
	}
	if _, f := conv.Handle(ctx, conv.ScopeID(), chat.NewTextRequest("nest"), sink); f != nil {
		t.Fatal(f)
	}
	type scopeInfo struct{ ID, Route string }
	var stack []scopeInfo
	_, f = conv.Run(ctx, conv.ScopeID(), nil, sink, func(ctx context.Context) error {
		for id, route := range chat.Scopes(ctx) {
			stack = append(stack, scopeInfo{id, route})
		}
		return errors.New("it failed")
	})
	if f == nil || f.Reason != "ServerError" {
		t.Fatalf("a failing function: %v", f)
	}
	if len(stack) != 2 || stack[0].ID != conv.ID() || stack[0].Route != "count" || stack[1].Route != "inner" || stack[1].ID != conv.ScopeID() {
		t.Fatalf("the stack: %+v (conversation %s, scope %s)", stack, conv.ID(), conv.ScopeID())
	}
	for id := range chat.Scopes(ctx) {
		t.Errorf("Scopes outside a conversation yields %q", id)
	}

	admin, err := r.Connect(chat.WithPrincipal(ctx, chat.User{ID: "root", Roles: []string{"admin"}}), "admin")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	ran := false
	if _, f := admin.Run(chat.WithPrincipal(ctx, chat.User{ID: "eve"}), admin.ScopeID(), nil, sink, func(context.Context) error { ran = true; return nil }); f == nil || f.Reason != "Forbidden" || ran {
		t.Fatalf("a function on a route the principal may not use: %v (ran %v)", f, ran)
	}
}

func fmtCount(n int, ok bool) string {
	if !ok {
		return "none"
	}
	return string(rune('0'+n)) + " true"
}
