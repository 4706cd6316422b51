package memory_test

import (
	"errors"
	"testing"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

func TestManagerForgetKeepsTheStore(t *testing.T) {
	ctx := t.Context()
	store := memory.NewInMemoryStore()
	mgr := memory.NewManager(&memory.ManagerOptions{Store: store})
	old, err := mgr.Memory(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	add(t, old, human("1"))
	mgr.Forget("a")
	mgr.Forget("never used") // nothing to forget: no error, no effect

	// Another process wrote the id meanwhile: the next memory reads it.
	if err := store.Update(ctx, "a", []llms.MessageContent{human("1"), human("2")}); err != nil {
		t.Fatal(err)
	}
	fresh, err := mgr.Memory(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if fresh == old {
		t.Fatal("Forget kept the memory")
	}
	check(t, fresh, store, "human:1 human:2")
	// The forgotten memory cannot write over it.
	if err := old.Add(ctx, human("stale")); !errors.Is(err, memory.ErrDeleted) {
		t.Fatalf("Add on a forgotten memory: %v, want ErrDeleted", err)
	}
	check(t, fresh, store, "human:1 human:2")
}
