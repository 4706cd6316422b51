package boltstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

func open(t *testing.T, path string, opts *boltstore.Options) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func newStore(t *testing.T, ttl time.Duration) chatstoretest.Store {
	s := open(t, filepath.Join(t.TempDir(), "chat.db"), &boltstore.Options{TTL: ttl, SweepInterval: 50 * time.Millisecond})
	return chatstoretest.Store{Conversations: s, Memories: s.Memories()}
}

func TestConformance(t *testing.T) {
	chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store { return newStore(t, time.Hour) })
}

func TestConformanceNoTTL(t *testing.T) {
	chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store { return newStore(t, 0) })
}

func TestExpiry(t *testing.T) {
	chatstoretest.RunExpiry(t, newStore)
}

// TestReopen shows what survives a restart: conversations and memories;
// leases do not, since the process that held them is gone.
func TestReopen(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chat.db")
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Acquire(ctx, "c", "node-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	st := chatstoretest.State("c")
	b := chatstore.NewBatch()
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}
	if err := s.Memories().Update(chatstore.WithBatch(ctx, b), st.Scopes[0].Memories[0], msgs); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, st, l, b); err != nil {
		t.Fatal(err)
	}
	// A second process (here: a second Open) cannot use the file.
	if _, err := boltstore.Open(path, &boltstore.Options{OpenTimeout: 50 * time.Millisecond}); err == nil {
		t.Fatal("a second Open of a file in use succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	s = open(t, path, nil)
	got, err := s.Load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if !chatstoretest.Equal(got, st) {
		t.Fatalf("after reopening: %+v, want %+v", got, st)
	}
	m, err := s.Memories().Get(ctx, st.Scopes[0].Memories[0])
	if err != nil || len(m) != 1 {
		t.Fatalf("memory after reopening: %v, %v", m, err)
	}
	// The old process's lease ended with it: another node takes over at
	// once, with a greater token, and the old lease writes nothing.
	l2, err := s.Acquire(ctx, "c", "node-b", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after reopening: %v", err)
	}
	if l2.Token <= l.Token {
		t.Fatalf("token after reopening %d, not greater than %d", l2.Token, l.Token)
	}
	if err := s.Save(ctx, got, l, nil); !errors.Is(err, chatstore.ErrLeaseLost) {
		t.Fatalf("Save under the old process's lease = %v, want ErrLeaseLost", err)
	}
}

// TestSweep shows the sweeper's work done by hand: expired conversations,
// their memories and their leases leave the file.
func TestSweep(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "chat.db"), &boltstore.Options{TTL: 100 * time.Millisecond, SweepInterval: time.Hour})
	for _, id := range []string{"a", "b"} {
		l, err := s.Acquire(ctx, id, "node", 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		st := chatstoretest.State(id)
		b := chatstore.NewBatch()
		if err := s.Memories().Update(chatstore.WithBatch(ctx, b), st.Scopes[0].Memories[0],
			[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, id)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, st, l, b); err != nil {
			t.Fatal(err)
		}
	}
	// A lease on a conversation never saved.
	if _, err := s.Acquire(ctx, "never", "node", 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond) // past the TTL, and past the leases' expiry by a TTL
	n, err := s.Sweep()
	if err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2 conversations", n, err)
	}
	if ids, err := s.Memories().IDs(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("memory ids after the sweep: %q, %v", ids, err)
	}
	// The leases went too: a new lease of "never" gets a new token, which
	// it would not if node's expired lease were still there.
	l, err := s.Acquire(ctx, "never", "node", time.Minute)
	if err != nil || l.Token != 4 {
		t.Fatalf("Acquire after the sweep = %+v, %v; want token 4", l, err)
	}
	if n, err := s.Sweep(); err != nil || n != 0 {
		t.Fatalf("second Sweep = %d, %v", n, err)
	}
}

// TestCrash kills a process in the middle of saving turns (state and
// memory in one batch) and checks that the file holds the state and the
// memory of one and the same turn, at least the last one the process
// reported saved.
func TestCrash(t *testing.T) {
	if path := os.Getenv("BOLTSTORE_CRASH_CHILD"); path != "" {
		crashChild(path)
		return
	}
	if testing.Short() {
		t.Skip("starts a process")
	}
	path := filepath.Join(t.TempDir(), "chat.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$")
	cmd.Env = append(os.Environ(), "BOLTSTORE_CRASH_CHILD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	last := 0
	for sc.Scan() && last < 30 {
		if last, err = strconv.Atoi(sc.Text()); err != nil {
			t.Fatalf("child printed %q", sc.Text())
		}
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred cleanup runs
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if last < 30 {
		t.Fatalf("the child saved %d turns before it stopped", last)
	}

	s := open(t, path, nil)
	st, err := s.Load(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if st.Version < uint64(last) {
		t.Fatalf("version %d after the crash, but the child reported %d saved", st.Version, last)
	}
	m, err := s.Memories().Get(t.Context(), "c#memory")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprint("turn ", st.Version)
	if st.Principal != want || len(m) != int(st.Version) || m[len(m)-1].Parts[0].(llms.TextContent).Text != want {
		t.Fatalf("after the crash: state %q at version %d, memory of %d messages ending %v", st.Principal, st.Version, len(m), m[len(m)-1])
	}
}

// crashChild saves turns until it is killed, printing the number of each
// turn saved.
func crashChild(path string) {
	ctx := context.Background()
	s, err := boltstore.Open(path, nil)
	if err != nil {
		panic(err)
	}
	l, err := s.Acquire(ctx, "c", "child", time.Hour)
	if err != nil {
		panic(err)
	}
	st := &chatstore.ConversationState{ID: "c", Scopes: []chatstore.ScopeState{{ID: "c", Memories: []string{"c#memory"}}}}
	for {
		turn := fmt.Sprint("turn ", st.Version+1)
		b := chatstore.NewBatch()
		err := s.Memories().Apply(chatstore.WithBatch(ctx, b), "c#memory", memory.Change{
			Tail: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, turn)},
		})
		if err != nil {
			panic(err)
		}
		st.Principal = turn
		if err := s.Save(ctx, st, l, b); err != nil {
			panic(err)
		}
		fmt.Println(st.Version)
	}
}
