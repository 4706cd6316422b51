package memory_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

func TestManagerSharesMemoryPerID(t *testing.T) {
	ctx := t.Context()
	mgr := memory.NewManager(&memory.ManagerOptions{})
	a1, err := mgr.Memory(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := mgr.Memory(ctx, "a")
	b, _ := mgr.Memory(ctx, "b")
	if a1 != a2 {
		t.Fatal("two memories for one id")
	}
	if a1 == b || a1.ID() != "a" || b.ID() != "b" {
		t.Fatal("ids mixed up")
	}
	add(t, a1, human("1"))
	check(t, a2, mgr.Store(), "human:1")
	check(t, b, mgr.Store(), "")
}

func TestManagerDefaults(t *testing.T) {
	for _, opts := range []*memory.ManagerOptions{nil, {}} {
		testManagerDefaults(t, memory.NewManager(opts))
	}
}

func testManagerDefaults(t *testing.T, mgr *memory.Manager) {
	t.Helper()
	if _, ok := mgr.Store().(*memory.InMemoryStore); !ok {
		t.Fatalf("default store is %T", mgr.Store())
	}
	m, _ := mgr.Memory(t.Context(), "a")
	for i := range memory.DefaultMaxMessages + 5 {
		add(t, m, human(string(rune('a'+i))))
	}
	got, _ := m.Messages(t.Context())
	if len(got) != memory.DefaultMaxMessages {
		t.Fatalf("default window holds %d messages, want %d", len(got), memory.DefaultMaxMessages)
	}
}

func TestManagerDelete(t *testing.T) {
	ctx := t.Context()
	s := memory.NewInMemoryStore()
	mgr := memory.NewManager(&memory.ManagerOptions{Store: s, Policy: memory.TokenWindow(100, nil, nil)})
	m, _ := mgr.Memory(ctx, "scope#svc")
	add(t, m, sys("s"), human("1"))
	if err := mgr.Delete(ctx, "scope#svc"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.IDs(ctx); len(ids) != 0 {
		t.Fatalf("store still holds %q", ids)
	}
	// The old memory is dead: a late turn cannot bring the id back.
	if err := m.Add(ctx, human("late")); !errors.Is(err, memory.ErrDeleted) {
		t.Fatalf("Add after Delete = %v, want ErrDeleted", err)
	}
	if _, err := m.Messages(ctx); !errors.Is(err, memory.ErrDeleted) {
		t.Fatalf("Messages after Delete = %v, want ErrDeleted", err)
	}
	if err := m.Clear(ctx); err != nil {
		t.Fatalf("Clear after Delete = %v", err)
	}
	if ids, _ := s.IDs(ctx); len(ids) != 0 {
		t.Fatalf("store holds %q after a late Add", ids)
	}
	// A new memory of the id starts empty.
	m2, _ := mgr.Memory(ctx, "scope#svc")
	if m2 == m {
		t.Fatal("Memory after Delete returned the deleted memory")
	}
	check(t, m2, s, "")
	// Deleting an id the Manager never loaded deletes it from the store.
	if err := s.Update(ctx, "other", []llms.MessageContent{human("x")}); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Delete(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, "other"); len(got) != 0 {
		t.Fatal("Delete left an unloaded id in the store")
	}
}

// slowPolicy counts the memories it builds and fails while fail is set.
type slowPolicy struct {
	built atomic.Int32
	fail  atomic.Bool
	gate  chan struct{}

	started chan struct{} // if not nil, signalled when New is called
}

func (p *slowPolicy) New(ctx context.Context, s memory.Store, id string) (memory.Memory, error) {
	if p.started != nil {
		p.started <- struct{}{}
	}
	<-p.gate
	if p.fail.Load() {
		return nil, errors.New("policy failed")
	}
	p.built.Add(1)
	return memory.Window(5, nil).New(ctx, s, id)
}

func TestManagerConcurrentMemory(t *testing.T) {
	p := &slowPolicy{gate: make(chan struct{})}
	mgr := memory.NewManager(&memory.ManagerOptions{Policy: p})
	var wg sync.WaitGroup
	mems := make([]memory.Memory, 16)
	for i := range mems {
		wg.Go(func() {
			m, err := mgr.Memory(t.Context(), "id")
			if err != nil {
				t.Error(err)
			}
			mems[i] = m
		})
	}
	close(p.gate)
	wg.Wait()
	if n := p.built.Load(); n != 1 {
		t.Fatalf("built %d memories for one id", n)
	}
	for _, m := range mems {
		if m != mems[0] {
			t.Fatal("callers got different memories")
		}
	}
}

func TestManagerRetriesFailedBuild(t *testing.T) {
	p := &slowPolicy{gate: make(chan struct{})}
	close(p.gate)
	p.fail.Store(true)
	mgr := memory.NewManager(&memory.ManagerOptions{Policy: p})
	if _, err := mgr.Memory(t.Context(), "id"); err == nil {
		t.Fatal("Memory succeeded with a failing policy")
	}
	p.fail.Store(false)
	if _, err := mgr.Memory(t.Context(), "id"); err != nil {
		t.Fatalf("Memory after the policy recovered: %v", err)
	}
}

func TestManagerWaitHonoursContext(t *testing.T) {
	p := &slowPolicy{gate: make(chan struct{}), started: make(chan struct{}, 1)}
	mgr := memory.NewManager(&memory.ManagerOptions{Policy: p})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = mgr.Memory(context.Background(), "id") // blocks in the policy
	}()
	<-p.started
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := mgr.Memory(ctx, "id"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Memory while another call builds it, with a canceled context = %v", err)
	}
	close(p.gate)
	<-done
}
