package boltstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// queued returns how many writes wait for the committer.
func (g *committer) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// hold holds g's committer in a write transaction until the returned
// function is called; that function then checks the held write's result.
func hold(t *testing.T, g *committer) (letGo func()) {
	t.Helper()
	entered, release := make(chan struct{}), make(chan struct{})
	holding := make(chan error, 1)
	go func() {
		holding <- g.update(func(*bolt.Tx, *arena) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered
	return func() {
		t.Helper()
		close(release)
		if err := <-holding; err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupCommitOneTransaction holds the committer in a transaction while
// twenty saves of different conversations, a save from a stale version, a
// save under a lease another node has since taken, and a write that fails
// after writing queue up behind it; then it lets go. The twenty saves
// commit in one transaction; the three failures fail alone, each with its
// own error, and leave nothing of theirs in the file.
func TestGroupCommitOneTransaction(t *testing.T) {
	ctx := t.Context()
	s, err := Open(filepath.Join(t.TempDir(), "chat.db"), &Options{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 20
	states := make([]*chatstore.ConversationState, n)
	leases := make([]chatstore.Lease, n)
	for i := range n {
		states[i] = chatstoretest.State(fmt.Sprint("c", i))
		if leases[i], err = s.Acquire(ctx, states[i].ID, "node-a", time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	stale := chatstoretest.State("stale")
	staleLease, err := s.Acquire(ctx, stale.ID, "node-a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, stale, staleLease, nil); err != nil {
		t.Fatal(err)
	}
	stale.Version = 0 // a save from the version before: a conflict
	taken := chatstoretest.State("taken")
	lostLease, err := s.Acquire(ctx, taken.ID, "node-a", time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for time.Now().Before(lostLease.Expires) {
		time.Sleep(time.Millisecond)
	}
	if _, err := s.Acquire(ctx, taken.ID, "node-b", time.Hour); err != nil {
		t.Fatal(err)
	}

	letGo := hold(t, s.commits)
	before := s.commits.txs.Load()

	// saveTurn saves st with a batch that adds a message to its memory.
	saveTurn := func(st *chatstore.ConversationState, l chatstore.Lease) error {
		b := chatstore.NewBatch()
		mid := st.Scopes[1].Memories[0]
		err := s.Memories().Apply(chatstore.WithBatch(ctx, b), mid, memory.Change{Tail: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, st.ID)}})
		if err != nil {
			return err
		}
		return s.Save(ctx, st, l, b)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = saveTurn(states[i], leases[i]) })
	}
	var staleErr, lostErr, failErr error
	wg.Go(func() { staleErr = saveTurn(stale, staleLease) })
	wg.Go(func() { lostErr = saveTurn(taken, lostLease) })
	boom := errors.New("boom")
	var failRuns atomic.Int32
	wg.Go(func() {
		failErr = s.commits.update(func(tx *bolt.Tx, _ *arena) error {
			failRuns.Add(1)
			if err := tx.Bucket(bucketMeta).Put([]byte("written by a failed write"), []byte("x")); err != nil {
				return err
			}
			return boom
		})
	})
	for s.commits.queued() < n+3 {
		runtime.Gosched()
	}
	letGo()
	wg.Wait()

	for i, err := range errs {
		if err != nil {
			t.Fatalf("save of %s: %v", states[i].ID, err)
		}
		got, err := s.Load(ctx, states[i].ID)
		if err != nil || got.Version != 1 {
			t.Fatalf("%s after its save: %+v, %v", states[i].ID, got, err)
		}
		m, err := s.Memories().Get(ctx, states[i].Scopes[1].Memories[0])
		if err != nil || len(m) != 1 {
			t.Fatalf("%s's memory after its save: %v, %v", states[i].ID, m, err)
		}
	}
	if !errors.Is(staleErr, chatstore.ErrVersionConflict) {
		t.Fatalf("save from a stale version = %v, want ErrVersionConflict", staleErr)
	}
	if !errors.Is(lostErr, chatstore.ErrLeaseLost) {
		t.Fatalf("save under a lease taken over = %v, want ErrLeaseLost", lostErr)
	}
	if !errors.Is(failErr, boom) || failRuns.Load() < 2 {
		t.Fatalf("failing write = %v after %d runs, want boom after running in the group and alone", failErr, failRuns.Load())
	}
	// The holder's transaction, then one for the twenty saves; the three
	// failures rolled back.
	if got := s.commits.txs.Load() - before; got != 2 {
		t.Fatalf("%d transactions committed, want 2 (the holder's and the group's)", got)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get([]byte("written by a failed write")); v != nil {
			return errors.New("the failed write's key is in the file")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Load(ctx, stale.ID); err != nil || got.Version != 1 {
		t.Fatalf("the stale save's conversation: %+v, %v; want version 1", got, err)
	}
	if m, err := s.Memories().Get(ctx, stale.Scopes[1].Memories[0]); err != nil || len(m) != 0 {
		t.Fatalf("the stale save's memory: %v, %v; want none", m, err)
	}
	if _, err := s.Load(ctx, taken.ID); !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("the conversation saved under a lost lease: %v, want not found", err)
	}
	if m, err := s.Memories().Get(ctx, taken.Scopes[1].Memories[0]); err != nil || len(m) != 0 {
		t.Fatalf("the memory saved under a lost lease: %v, %v; want none", m, err)
	}
}

// TestClosedCommitter shows that a write after Close fails at once, as
// bbolt's own does on a closed file.
func TestClosedCommitter(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "chat.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(t.Context(), "c", "node", time.Minute)
	if !errors.Is(err, berrors.ErrDatabaseNotOpen) {
		t.Fatalf("Acquire after Close = %v, want ErrDatabaseNotOpen", err)
	}
}

// TestPanickingWrite shows that a write that panics fails with an error
// and leaves the committer serving the writes after it.
func TestPanickingWrite(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "chat.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.commits.update(func(*bolt.Tx, *arena) error { panic("a bug") })
	if err == nil || !strings.Contains(err.Error(), "a bug") {
		t.Fatalf("panicking write = %v, want an error saying it panicked", err)
	}
	if _, err := s.Acquire(t.Context(), "c", "node", time.Minute); err != nil {
		t.Fatalf("Acquire after a panicking write: %v", err)
	}
}

// TestGatherOnlyUnderLoad builds a group of twenty writes behind a held
// committer: after their commit the committer lets the next group gather,
// but a write that comes after the committer idled does not wait for one.
func TestGatherOnlyUnderLoad(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "chat.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := s.commits
	put := func(k string) error {
		return g.update(func(tx *bolt.Tx, a *arena) error {
			return tx.Bucket(bucketData).Put(dataKey(a, k, kindList), []byte("v"))
		})
	}
	letGo := hold(t, g)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := put(fmt.Sprint("k", i)); err != nil {
				t.Error(err)
			}
		})
	}
	for g.queued() < n {
		runtime.Gosched()
	}
	letGo()
	wg.Wait()
	// After the group of twenty, the committer waits a little for the
	// next group (none comes) before it finds the queue empty.
	for deadline := time.Now().Add(10 * time.Second); g.gathered.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("after a group of twenty, the committer did not let the next group gather")
		}
		time.Sleep(time.Millisecond)
	}
	// Idle for longer than any commit here takes: the next write is not
	// under load, and does not wait.
	time.Sleep(500 * time.Millisecond)
	before := g.gathered.Load()
	if err := put("alone"); err != nil {
		t.Fatal(err)
	}
	if got := g.gathered.Load(); got != before {
		t.Fatalf("a lone write after the committer idled waited for a group (%d gathers, %d before)", got, before)
	}
}
