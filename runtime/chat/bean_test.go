package chat_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

type counter struct {
	n      int
	closed *[]string
	name   string
}

func (c *counter) Close() error {
	if c.closed != nil {
		*c.closed = append(*c.closed, c.name)
	}
	return nil
}

var (
	counterBean    = chat.NewBean("example.com/t.counter", nil, func(context.Context) (*counter, error) { return &counter{}, nil })
	perChatBean    = chat.NewBean("example.com/t.perChat", &chat.BeanOptions{Kind: chat.KindPerChat}, func(context.Context) (*counter, error) { return &counter{}, nil })
	invocationBean = chat.NewBean("example.com/t.inv", &chat.BeanOptions{Kind: chat.KindInvocation}, func(context.Context) (*counter, error) { return &counter{}, nil })
	depsBean       = chat.NewBean[*counter]("example.com/t.deps", nil, nil)
)

func mustLookup[T any](t testing.TB, ctx context.Context, b *chat.Bean[T]) T {
	t.Helper()
	v, err := b.Lookup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestChatScopedInheritance(t *testing.T) {
	ctx, _ := chat.Begin(context.Background(), nil)
	top := mustLookup(t, ctx, counterBean)
	top.n = 2
	_ = chat.Push(ctx)
	if got := mustLookup(t, ctx, counterBean); got != top {
		t.Fatal("nested scope did not inherit the chat-scoped bean")
	}
	_ = chat.End(ctx)

	// A bean first touched in a child dies with the child.
	ctx, _ = chat.Begin(context.Background(), nil)
	_ = chat.Push(ctx)
	child := mustLookup(t, ctx, counterBean)
	child.n = 5
	_ = chat.Pop(ctx)
	if got := mustLookup(t, ctx, counterBean); got == child || got.n != 0 {
		t.Fatal("top scope sees the popped child's bean")
	}
	_ = chat.End(ctx)
}

func TestPerChatNeverInherited(t *testing.T) {
	ctx, _ := chat.Begin(context.Background(), nil)
	top := mustLookup(t, ctx, perChatBean)
	_ = chat.Push(ctx)
	if mustLookup(t, ctx, perChatBean) == top {
		t.Fatal("per-chat bean inherited")
	}
	_ = chat.Pop(ctx)
	if mustLookup(t, ctx, perChatBean) != top {
		t.Fatal("top scope lost its per-chat bean")
	}
	_ = chat.End(ctx)
}

func TestLookupWithoutScope(t *testing.T) {
	_, err := counterBean.Lookup(context.Background())
	var be *chat.BeanError
	if !errors.Is(err, chat.ErrNotActive) || !errors.As(err, &be) || be.Bean != "example.com/t.counter" {
		t.Fatalf("Lookup without scope: %v", err)
	}
	_, err = invocationBean.Lookup(context.Background())
	if !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("invocation Lookup outside an invocation: %v", err)
	}
	defer func() {
		r := recover()
		if err, ok := r.(error); !ok || !errors.Is(err, chat.ErrNotActive) {
			t.Fatalf("MustLookup panicked with %v, want an ErrNotActive error", r)
		}
	}()
	counterBean.MustLookup(context.Background())
}

func TestCloseOrderInnermostFirst(t *testing.T) {
	var closed []string
	mk := func(name string) *chat.Bean[*counter] {
		return chat.NewBean(name, &chat.BeanOptions{Kind: chat.KindPerChat}, func(context.Context) (*counter, error) {
			return &counter{closed: &closed, name: name}, nil
		})
	}
	a, b, c := mk("a"), mk("b"), mk("c")
	ctx, _ := chat.Begin(context.Background(), nil)
	mustLookup(t, ctx, a)
	mustLookup(t, ctx, b)
	_ = chat.Push(ctx)
	mustLookup(t, ctx, c)
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"c", "b", "a"}; !slices.Equal(closed, want) {
		t.Fatalf("closed %v, want %v", closed, want)
	}
}

type failingCloser struct{}

func (failingCloser) Close() error { return errors.New("disk on fire") }

type panickingCloser struct{}

func (panickingCloser) Destroy() { panic("boom") }

func TestCloseErrorsAreReturnedAndPanicsRecovered(t *testing.T) {
	fb := chat.NewBean("f", nil, func(context.Context) (failingCloser, error) { return failingCloser{}, nil })
	pb := chat.NewBean("p", nil, func(context.Context) (panickingCloser, error) { return panickingCloser{}, nil })
	ctx, _ := chat.Begin(context.Background(), nil)
	mustLookup(t, ctx, fb)
	mustLookup(t, ctx, pb)
	err := chat.End(ctx)
	if err == nil || !containsAll(err.Error(), "disk on fire", "boom") {
		t.Fatalf("End: %v, want both close failures", err)
	}
	if chat.Active(ctx) {
		t.Fatal("conversation still active after a failing End")
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func TestProviders(t *testing.T) {
	ctx, _ := chat.Begin(context.Background(), nil)
	if _, err := depsBean.Lookup(ctx); !errors.Is(err, chat.ErrNoProvider) {
		t.Fatalf("Lookup without provider: %v, want ErrNoProvider", err)
	}
	pkg := chatimpl.NewPackage("example.com/t")
	chatimpl.Provide(pkg, depsBean, func(context.Context) (*counter, error) { return &counter{n: 42}, nil })
	pctx := chat.WithPackages(ctx, pkg)
	if got := mustLookup(t, pctx, depsBean); got.n != 42 {
		t.Fatalf("provided bean n=%d, want 42", got.n)
	}
	// A constructor error is wrapped.
	boom := errors.New("boom")
	bad := chat.NewBean("bad", nil, func(context.Context) (*counter, error) { return nil, boom })
	if _, err := bad.Lookup(ctx); !errors.Is(err, boom) {
		t.Fatalf("constructor error: %v", err)
	}
	_ = chat.End(ctx)
}

func TestInvocationScope(t *testing.T) {
	ctx := context.Background()
	ictx, end := chat.BeginInvocation(ctx)
	a := mustLookup(t, ictx, invocationBean)
	nctx, nend := chat.BeginInvocation(ictx) // nested call shares it
	if mustLookup(t, nctx, invocationBean) != a {
		t.Fatal("nested invocation got a new bean")
	}
	nend()
	if mustLookup(t, ictx, invocationBean) != a {
		t.Fatal("nested end destroyed the invocation")
	}
	end()
	if _, err := invocationBean.Lookup(ictx); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("lookup after end: %v", err)
	}
	ictx2, end2 := chat.BeginInvocation(ctx)
	defer end2()
	if mustLookup(t, ictx2, invocationBean) == a {
		t.Fatal("a second top-level call reused the bean")
	}
}

func TestConcurrentCreationInOneScope(t *testing.T) {
	var built atomic.Int32
	b := chat.NewBean("race", nil, func(context.Context) (*counter, error) {
		built.Add(1)
		return &counter{}, nil
	})
	ctx, _ := chat.Begin(context.Background(), nil)
	var wg sync.WaitGroup
	got := make([]*counter, 8)
	for i := range got {
		wg.Go(func() { got[i] = mustLookup(t, ctx, b) })
	}
	wg.Wait()
	for _, g := range got {
		if g != got[0] {
			t.Fatal("concurrent lookups in one scope returned different beans")
		}
	}
	_ = chat.End(ctx)
}

func BenchmarkLookupDepth3(b *testing.B) {
	ctx, _ := chat.Begin(context.Background(), nil)
	mustLookup(b, ctx, counterBean)
	_ = chat.Push(ctx)
	_ = chat.Push(ctx)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := counterBean.Lookup(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
