package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// The scenarios of the Quarkus chat scopes guide (the CounterBean
// examples), over the generated proxies, with the values the guide states.

func expectNotActive(t *testing.T, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		err, _ := recover().(error)
		if !errors.Is(err, chat.ErrNotActive) {
			t.Fatalf("want a panic with an error matching chat.ErrNotActive, got %v", err)
		}
	}()
	fn()
}

func TestChatScopedConversation1(t *testing.T) {
	var counter CounterProxy
	ctx := context.Background()
	// Fails because no chat scope is active.
	expectNotActive(t, func() { counter.Get(ctx) })
	if _, err := CounterFrom(ctx); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("CounterFrom without scope: %v", err)
	}

	ctx, err := chat.Begin(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	counter.Increment(ctx)
	counter.Increment(ctx)
	if got := counter.Get(ctx); got != 2 {
		t.Fatalf("top scope: %d, want 2", got)
	}
	_ = chat.Push(ctx)
	if got := counter.Get(ctx); got != 2 {
		t.Fatalf("nested scope inherits: %d, want 2", got)
	}
	_ = chat.Pop(ctx)
	if got := counter.Get(ctx); got != 2 {
		t.Fatalf("after pop: %d, want 2", got)
	}
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
	expectNotActive(t, func() { counter.Get(ctx) })
}

func TestChatScopedConversation2(t *testing.T) {
	var counter CounterProxy
	ctx, _ := chat.Begin(context.Background(), nil)
	_ = chat.Push(ctx)
	counter.Increment(ctx)
	counter.Increment(ctx)
	if got := counter.Get(ctx); got != 2 {
		t.Fatalf("nested: %d, want 2", got)
	}
	_ = chat.Pop(ctx) // destroys the nested counter
	if got := counter.Get(ctx); got != 0 {
		t.Fatalf("top scope after pop: %d, want 0 (a new bean)", got)
	}
	_ = chat.End(ctx)
}

func TestPerChatScoped(t *testing.T) {
	var counter PerChatCounterProxy
	ctx, _ := chat.Begin(context.Background(), nil)
	counter.Increment(ctx)
	if got := counter.Get(ctx); got != 1 {
		t.Fatalf("top: %d, want 1", got)
	}
	_ = chat.Push(ctx)
	if got := counter.Get(ctx); got != 0 {
		t.Fatalf("nested starts at %d, want 0", got)
	}
	counter.Increment(ctx)
	counter.Increment(ctx)
	counter.Increment(ctx)
	if got := counter.Get(ctx); got != 3 {
		t.Fatalf("nested: %d, want 3", got)
	}
	_ = chat.Pop(ctx)
	if got := counter.Get(ctx); got != 1 {
		t.Fatalf("top after pop: %d, want 1", got)
	}
	_ = chat.End(ctx)
}

func TestInvocationScoped(t *testing.T) {
	var counter InvocationCounterProxy
	ctx := context.Background()
	counter.Increment(ctx)
	if got := counter.Get(ctx); got != 0 {
		t.Fatalf("a new top-level call: %d, want 0", got)
	}
	// Invocation scope needs no chat scope, and works inside one too.
	cctx, _ := chat.Begin(ctx, nil)
	counter.Increment(cctx)
	if got := counter.Get(cctx); got != 0 {
		t.Fatalf("inside a chat scope: %d, want 0", got)
	}
	_ = chat.End(cctx)
	if _, err := InvocationCounterFrom(ctx); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("accessor outside an invocation: %v", err)
	}
}

func TestCalculateBean(t *testing.T) {
	var calc CalculatorProxy
	if got := calc.Add(context.Background()); got != 2 {
		t.Fatalf("Add: %d, want 2", got)
	}
	if got := calc.Add(context.Background()); got != 2 {
		t.Fatalf("second Add: %d, want 2 (fresh invocation)", got)
	}
}

func TestBeanWithDependenciesAndClose(t *testing.T) {
	var buf bytes.Buffer
	var tally TallyProxy
	ctx, _ := chat.Begin(context.Background(), nil)
	// Without the package registration the constructor's dependency is missing.
	if _, err := TallyFrom(ctx); !errors.Is(err, chat.ErrNoProvider) {
		t.Fatalf("TallyFrom without registration: %v", err)
	}
	_ = chat.End(ctx)

	ctx, _ = chat.Begin(chat.WithPackages(context.Background(), Register(Deps{Journal: &Journal{W: &buf}})), nil)
	_ = chat.Push(ctx)
	tally.Add(ctx, "sword")
	_ = chat.Push(ctx)
	tally.Add(ctx, "shield") // inherited from the first nested scope
	if got := strings.Join(tally.Items(ctx), ","); got != "sword,shield" {
		t.Fatalf("items %q", got)
	}
	_ = chat.Pop(ctx)
	if strings.Contains(buf.String(), "closed") {
		t.Fatal("popping a scope closed a bean it did not hold")
	}
	_ = chat.Pop(ctx)
	if !strings.Contains(buf.String(), "(tally closed with 2 items)") {
		t.Fatalf("journal %q: want the tally closed when its scope died", buf.String())
	}
	_ = chat.End(ctx)
}

func TestDemoOutput(t *testing.T) {
	var buf bytes.Buffer
	if err := run(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"top scope: 2", "nested scope sees the parent's counter: 2", "top scope gets a new counter: 0",
		"nested scope starts at: 0", "top scope still: 1", "a new call sees: 0",
		"Calculator.Add shares its invocation: 2", "(tally closed with 2 items)",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, buf.String())
		}
	}
}

// BenchmarkBeanLookup resolves an existing chat-scoped bean from a scope
// three levels deep through its generated proxy.
func BenchmarkBeanLookup(b *testing.B) {
	var counter CounterProxy
	ctx, _ := chat.Begin(context.Background(), nil)
	counter.Increment(ctx) // created in the top scope
	for range 3 {
		_ = chat.Push(ctx)
	}
	b.ReportAllocs()
	for b.Loop() {
		if counter.Get(ctx) != 1 {
			b.Fatal("wrong bean")
		}
	}
}
