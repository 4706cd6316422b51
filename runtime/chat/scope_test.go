package chat_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
)

type recorder struct {
	mu  sync.Mutex
	ids map[string]string // scope id -> short name
	evs []string
}

func (r *recorder) observe(_ context.Context, ev chat.ScopeEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]string{}
	}
	name, ok := r.ids[ev.ScopeID]
	if !ok {
		name = fmt.Sprintf("s%d", len(r.ids))
		r.ids[ev.ScopeID] = name
	}
	r.evs = append(r.evs, ev.Kind.String()+" "+name)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.evs
	r.evs = nil
	return out
}

func TestLifecycleEventOrder(t *testing.T) {
	var rec recorder
	ctx, err := chat.Begin(context.Background(), &chat.BeginOptions{Observer: rec.observe})
	if err != nil {
		t.Fatal(err)
	}
	check := func(step string, want ...string) {
		t.Helper()
		if got := rec.take(); !slices.Equal(got, want) {
			t.Errorf("%s: events %q, want %q", step, got, want)
		}
	}
	check("begin", "Started s0", "Activated s0")
	if err := chat.Push(ctx); err != nil {
		t.Fatal(err)
	}
	check("push", "Deactivated s0", "Started s1", "Activated s1")
	if err := chat.Push(ctx); err != nil {
		t.Fatal(err)
	}
	check("push", "Deactivated s1", "Started s2", "Activated s2")
	if err := chat.Pop(ctx); err != nil {
		t.Fatal(err)
	}
	check("pop", "Deactivated s2", "Ended s2", "Activated s1")
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
	check("end", "Deactivated s1", "Ended s1", "Ended s0")

	ctx, _ = chat.Begin(context.Background(), &chat.BeginOptions{Observer: rec.observe})
	rec.take()
	if err := chat.Pop(ctx); err != nil {
		t.Fatal(err)
	}
	check("pop top", "Deactivated s3", "Ended s3")
	if chat.Active(ctx) {
		t.Error("Active after popping the top scope")
	}
}

func TestNotActive(t *testing.T) {
	ctx := context.Background()
	if chat.Active(ctx) {
		t.Fatal("Active on a bare context")
	}
	if _, err := chat.ID(ctx); !errors.Is(err, chat.ErrNotActive) {
		t.Errorf("ID: %v, want ErrNotActive", err)
	}
	for name, fn := range map[string]func(context.Context) error{
		"Push": chat.Push, "Pop": chat.Pop, "End": chat.End,
		"PushRoute": func(ctx context.Context) error { return chat.PushRoute(ctx, "r") },
	} {
		if err := fn(ctx); !errors.Is(err, chat.ErrNotActive) {
			t.Errorf("%s on bare context: %v, want ErrNotActive", name, err)
		}
	}
	ctx, _ = chat.Begin(ctx, nil)
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
	for name, fn := range map[string]func(context.Context) error{"Push": chat.Push, "Pop": chat.Pop, "End": chat.End} {
		if err := fn(ctx); !errors.Is(err, chat.ErrNotActive) {
			t.Errorf("%s after End: %v, want ErrNotActive", name, err)
		}
	}
}

func TestBeginTwice(t *testing.T) {
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chat.Begin(ctx, nil); !errors.Is(err, chat.ErrActive) {
		t.Fatalf("second Begin: %v, want ErrActive", err)
	}
	_ = chat.End(ctx)
	// An ended conversation does not block a new one.
	ctx2, err := chat.Begin(ctx, nil)
	if err != nil {
		t.Fatalf("Begin after End: %v", err)
	}
	_ = chat.End(ctx2)
}

func TestIDsAreDistinctAndFollowTheStack(t *testing.T) {
	ctx, _ := chat.Begin(context.Background(), nil)
	top, _ := chat.ID(ctx)
	_ = chat.Push(ctx)
	child, _ := chat.ID(ctx)
	if top == child || len(top) < 32 {
		t.Fatalf("ids %q and %q: want distinct random ids", top, child)
	}
	if d, _ := chat.Depth(ctx); d != 1 {
		t.Errorf("depth %d, want 1", d)
	}
	_ = chat.Pop(ctx)
	if got, _ := chat.ID(ctx); got != top {
		t.Errorf("after pop id %q, want %q", got, top)
	}
}

func TestObserverMayChangeTheStack(t *testing.T) {
	// An observer runs outside locks: pushing from it must not deadlock.
	pushed := false
	var ctx context.Context
	obs := func(_ context.Context, ev chat.ScopeEvent) {
		if ev.Kind == chat.ScopeActivated && ev.Depth == 0 && !pushed && ctx != nil {
			pushed = true
			if err := chat.Push(ctx); err != nil {
				t.Error(err)
			}
		}
	}
	ctx, _ = chat.Begin(context.Background(), &chat.BeginOptions{Observer: obs})
	_ = chat.Push(ctx)
	_ = chat.Pop(ctx) // activates the top scope: the observer pushes
	if d, _ := chat.Depth(ctx); d != 1 || !pushed {
		t.Fatalf("depth %d pushed %v, want the observer's push", d, pushed)
	}
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestConversationsAreIsolated(t *testing.T) {
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			ctx, err := chat.Begin(context.Background(), nil)
			if err != nil {
				t.Error(err)
				return
			}
			c := mustLookup(t, ctx, counterBean)
			for range i {
				c.n++
			}
			for range 3 {
				_ = chat.Push(ctx)
			}
			if got := mustLookup(t, ctx, counterBean).n; got != i {
				t.Errorf("conversation %d sees counter %d", i, got)
			}
			_ = chat.End(ctx)
		})
	}
	wg.Wait()
}
