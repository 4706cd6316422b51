package memory_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/memory/storetest"
	"github.com/tmc/langchaingo/llms"
)

func TestInMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) memory.Store { return memory.NewInMemoryStore() })
}

func TestFileStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) memory.Store { return newFileStore(t, t.TempDir()) })
}

func newFileStore(t *testing.T, dir string) *memory.FileStore {
	t.Helper()
	s, err := memory.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoresHonourCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	msgs := storetest.Conversation()
	for name, s := range map[string]memory.Store{
		"memory": memory.NewInMemoryStore(),
		"file":   newFileStore(t, t.TempDir()),
	} {
		if _, err := s.Get(ctx, "x"); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Get = %v", name, err)
		}
		if err := s.Update(ctx, "x", msgs); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Update = %v", name, err)
		}
		if err := s.Delete(ctx, "x"); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Delete = %v", name, err)
		}
		if _, err := s.IDs(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: IDs = %v", name, err)
		}
	}
	if err := memory.NewInMemoryStore().Apply(ctx, "x", memory.Change{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply = %v", err)
	}
}

func TestFileStoreSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	id := "scope#github.com/chatscopes/chatgen/examples/weaponbuilder.Assistant.Chat"
	if err := newFileStore(t, dir).Update(t.Context(), id, storetest.Conversation()); err != nil {
		t.Fatal(err)
	}
	s := newFileStore(t, dir)
	got, err := s.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !storetest.Equal(got, storetest.Conversation()) {
		t.Fatalf("after reopening: %v", got)
	}
}

func TestFileStoreFiles(t *testing.T) {
	dir := t.TempDir()
	s := newFileStore(t, dir)
	ctx := t.Context()
	long := strings.Repeat("x", 300)
	for _, id := range []string{"a", "A", long} {
		if err := s.Update(ctx, id, storetest.Conversation()); err != nil {
			t.Fatal(err)
		}
	}
	// Leftovers of a crash and foreign files are ignored.
	for _, name := range []string{".tmp-123", "notes.txt", "m-!!.json", "h-0.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "m-dir.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		if n := len(e.Name()); n > 255 {
			t.Errorf("file name of %d bytes", n)
		}
		if e.Name() != strings.ToLower(e.Name()) && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), "notes") {
			t.Errorf("file name %q is not lower case", e.Name())
		}
	}
	ids, err := s.IDs(ctx)
	if err != nil {
		t.Fatalf("IDs with foreign files: %v (files %q)", err, names)
	}
	if want := []string{"A", "a", long}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("IDs = %q, want %q", ids, want)
	}
}

func TestFileStoreRejectsCorruptFile(t *testing.T) {
	dir := t.TempDir()
	s := newFileStore(t, dir)
	ctx := t.Context()
	if err := s.Update(ctx, "a", storetest.Conversation()); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files: %v", entries)
	}
	path := filepath.Join(dir, entries[0].Name())
	if err := os.WriteFile(path, []byte(`{"version":1,"id":"a","messages":[{"role":"human","parts":[{"type":"nope"}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("Get of a corrupt file = %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"version":2,"id":"a","messages":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("Get of a file of an unknown version = %v", err)
	}
	if err := os.WriteFile(path, []byte(`{"version":1,"id":"b","messages":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); err == nil {
		t.Fatal("Get of a file holding another id succeeded")
	}
}

// TestInMemoryStoreLongRun runs window-like changes through many
// compactions of the stored list.
func TestInMemoryStoreLongRun(t *testing.T) {
	s := memory.NewInMemoryStore()
	ctx := t.Context()
	sys := llms.TextParts(llms.ChatMessageTypeSystem, "s")
	if err := s.Apply(ctx, "w", memory.Change{Head: []llms.MessageContent{sys}}); err != nil {
		t.Fatal(err)
	}
	for i := range 10_000 {
		c := memory.Change{Tail: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "m")}}
		if i >= 5 {
			c.Drop, c.Head = 2, []llms.MessageContent{sys}
		}
		if err := s.Apply(ctx, "w", c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Get(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 6 || got[0].Role != llms.ChatMessageTypeSystem {
		t.Fatalf("got %d messages, first %v", len(got), got[0])
	}
}
