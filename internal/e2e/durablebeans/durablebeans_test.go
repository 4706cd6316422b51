package durablebeans

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// readJournal returns the lines the beans wrote to path so far.
func readJournal(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func wantJournal(t *testing.T, step, path string, want ...string) {
	t.Helper()
	if got := readJournal(t, path); !slices.Equal(got, want) {
		t.Fatalf("%s: the beans wrote %q, want %q", step, got, want)
	}
}

// node is one process serving the package's generated registration over
// the bbolt file at path.
type node struct {
	store  *boltstore.Store
	client *chat.LocalClient
}

func startNode(t *testing.T, name, path string) *node {
	t.Helper()
	store, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: name}, Register())
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	return &node{store: store, client: chat.NewLocalClient(r)}
}

// A conversation whose durable beans (one without a constructor, one whose
// constructor takes no dependencies) were used on node a, left a
// (Detach: DetachBean runs, Close does not), and ended on node b — a
// restart on the same bbolt file — without b using the beans after the
// resume: b restores each from its saved state and closes it, exactly
// once. The generated Register must provide both for b's router to know
// them.
func TestCloseRunsOnceOnTheEndingNode(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, journal := filepath.Join(dir, "conversations.db"), filepath.Join(dir, "journal")

	a := startNode(t, "a", db)
	var answers []string
	s, err := a.client.Builder().OnMessage(func(m string) { answers = append(answers, m) }).Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(ctx, "open 42 sword "+journal); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(answers, []string{"opened 42"}) {
		t.Fatalf("answers %q", answers)
	}
	wantJournal(t, "a request on a", journal)
	id, token := s.ConversationID(), s.ResumeToken()
	if err := a.client.Detach(); err != nil {
		t.Fatal(err)
	}
	wantJournal(t, "Detach on a", journal, "detach ticket 42")
	if err := a.store.Close(); err != nil {
		t.Fatal(err)
	}

	b := startNode(t, "b", db)
	defer b.store.Close()
	s2, err := b.client.Builder().Resume(ctx, id, token)
	if err != nil {
		t.Fatal(err)
	}
	wantJournal(t, "the resume on b", journal, "detach ticket 42")
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	// Neither bean was used on b since the resume: both are restored from
	// their saved state to be closed, in name order.
	wantJournal(t, "the end on b", journal, "detach ticket 42", "close hold sword", "close ticket 42")

	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.client.Close(); err != nil {
		t.Fatal(err)
	}
	wantJournal(t, "closing again", journal, "detach ticket 42", "close hold sword", "close ticket 42")
}
