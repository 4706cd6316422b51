package memory_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/memory/storetest"
)

// A writer that crashed between creating its temporary file and renaming
// it leaves the file behind: the next NewFileStore on the directory
// removes it, but not a temporary file a live writer may still be filling,
// and not the stored memories.
func TestFileStoreReclaimsCrashedWritersTemps(t *testing.T) {
	dir := t.TempDir()
	if err := newFileStore(t, dir).Update(t.Context(), "kept", storetest.Conversation()); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, ".tmp-123456")
	fresh := filepath.Join(dir, ".tmp-654321")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte(`{"version":1,"id":"torn`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-memory.StaleTempAge - time.Second)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}

	s := newFileStore(t, dir)
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale temporary file is still there (stat: %v)", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temporary file was removed: %v", err)
	}
	got, err := s.Get(t.Context(), "kept")
	if err != nil || len(got) != len(storetest.Conversation()) {
		t.Errorf("Get(kept) = %d messages, %v; want the %d stored", len(got), err, len(storetest.Conversation()))
	}
}
