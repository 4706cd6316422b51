package boltstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
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

// TestConformanceNoGroupCommit runs the suite on a store whose writes
// each have a transaction of their own.
func TestConformanceNoGroupCommit(t *testing.T) {
	chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store {
		s := open(t, filepath.Join(t.TempDir(), "chat.db"), &boltstore.Options{TTL: time.Hour, NoGroupCommit: true})
		return chatstoretest.Store{Conversations: s, Memories: s.Memories()}
	})
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

// crashWriters is how many conversations the crash test's child saves at
// the same time: with group commit, their saves share transactions.
const crashWriters = 8

// TestCrash kills a process in the middle of saving turns of several
// conversations at once (each turn's state and memory in one batch) and
// checks that the file holds, for each conversation, the state and the
// memory of one and the same turn, at least the last one the process
// reported saved. It runs with group commit (saves sharing transactions)
// and without.
func TestCrash(t *testing.T) {
	if path := os.Getenv("BOLTSTORE_CRASH_CHILD"); path != "" {
		crashChild(path, os.Getenv("BOLTSTORE_CRASH_NOGROUP") != "")
		return
	}
	if testing.Short() {
		t.Skip("starts a process")
	}
	for _, noGroup := range []bool{false, true} {
		t.Run(fmt.Sprint("NoGroupCommit=", noGroup), func(t *testing.T) { testCrash(t, noGroup) })
	}
}

func testCrash(t *testing.T, noGroup bool) {
	path := filepath.Join(t.TempDir(), "chat.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrash$")
	cmd.Env = append(os.Environ(), "BOLTSTORE_CRASH_CHILD="+path)
	if noGroup {
		cmd.Env = append(cmd.Env, "BOLTSTORE_CRASH_NOGROUP=1")
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	last := make([]uint64, crashWriters)
	for n := 0; n < 30*crashWriters && sc.Scan(); n++ {
		var i int
		var v uint64
		if _, err := fmt.Sscan(sc.Text(), &i, &v); err != nil || i < 0 || i >= crashWriters {
			t.Fatalf("child printed %q", sc.Text())
		}
		last[i] = v
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred cleanup runs
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if slices.Contains(last, 0) {
		t.Fatalf("the child stopped early: turns saved per conversation %v", last)
	}

	s := open(t, path, nil)
	for i, reported := range last {
		id := crashID(i)
		st, err := s.Load(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.Version < reported {
			t.Fatalf("%s: version %d after the crash, but the child reported %d saved", id, st.Version, reported)
		}
		m, err := s.Memories().Get(t.Context(), id+"#memory")
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprint("turn ", st.Version)
		if st.Principal != want || len(m) != int(st.Version) || m[len(m)-1].Parts[0].(llms.TextContent).Text != want {
			t.Fatalf("%s after the crash: state %q at version %d, memory of %d messages ending %v", id, st.Principal, st.Version, len(m), m[len(m)-1])
		}
	}
}

func crashID(i int) string { return fmt.Sprint("c", i) }

// crashChild saves turns of crashWriters conversations at once until it is
// killed, printing the conversation's number and the number of each turn
// saved.
func crashChild(path string, noGroup bool) {
	ctx := context.Background()
	s, err := boltstore.Open(path, &boltstore.Options{NoGroupCommit: noGroup})
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex // one line at a time on stdout
	var wg sync.WaitGroup
	for i := range crashWriters {
		id := crashID(i)
		l, err := s.Acquire(ctx, id, "child", time.Hour)
		if err != nil {
			panic(err)
		}
		wg.Go(func() {
			st := &chatstore.ConversationState{ID: id, Scopes: []chatstore.ScopeState{{ID: id, Memories: []string{id + "#memory"}}}}
			for {
				turn := fmt.Sprint("turn ", st.Version+1)
				b := chatstore.NewBatch()
				err := s.Memories().Apply(chatstore.WithBatch(ctx, b), id+"#memory", memory.Change{
					Tail: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, turn)},
				})
				if err != nil {
					panic(err)
				}
				st.Principal = turn
				if err := s.Save(ctx, st, l, b); err != nil {
					panic(err)
				}
				mu.Lock()
				fmt.Println(i, st.Version)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}
