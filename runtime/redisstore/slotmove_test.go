package redisstore_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/tmc/langchaingo/llms"
)

// TestClusterSlotMove moves the hash slot of a conversation from one
// master of a Redis Cluster of the test's own to the other, step by step
// as redis-cli --cluster reshard does (CLUSTER SETSLOT IMPORTING and
// MIGRATING, MIGRATE of some of the slot's keys, then of the rest, SETSLOT
// NODE), and calls the store between the steps. A call whose keys are
// split between the two masters, or that needs a key neither holds, is
// refused by Redis (TRYAGAIN) until the move ends: the store retries it,
// and, past its RetryTimeout, fails with ErrClusterChanging, having
// written nothing. The move then ends without a clash (MIGRATE fails with
// BUSYKEY when the target holds a key already) and the conversation is
// whole, every turn in it.
func TestClusterSlotMove(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	cl := redistest.StartCluster(t, 2, 0)
	cc := cl.Client(t)
	ctx := t.Context()

	// Two stores of one prefix, as two processes: one gives up retrying
	// soon, the other waits as long as the test needs.
	stores := func(t *testing.T) (quick, patient *redisstore.Store) {
		p := redistest.Prefix(t, cc, "chatgen-test")
		var err error
		if quick, err = redisstore.New(cc, &redisstore.Options{Prefix: p, TTL: time.Hour, RetryTimeout: 200 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if patient, err = redisstore.New(cc, &redisstore.Options{Prefix: p, TTL: time.Hour, RetryTimeout: 2 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		return quick, patient
	}
	// Each subtest has a conversation of its own, in a slot of its own.
	conv := func(t *testing.T) string { return "c-" + t.Name() }
	// startMove starts moving the slot of conversation id to the master
	// that does not serve it.
	startMove := func(t *testing.T, s *redisstore.Store, id string) *redistest.SlotMove {
		t.Helper()
		key := s.Prefix() + "c{" + id + "}:conv"
		from, err := cl.MasterOf(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		to := cl.Nodes()[0]
		if to == from {
			to = cl.Nodes()[1]
		}
		m, err := cl.StartSlotMove(ctx, redistest.KeySlot(key), to)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	stateKeys := func(s *redisstore.Store, id string) []string {
		p := s.Prefix() + "c{" + id + "}:"
		return []string{p + "conv", p + "mids", p + "lease", p + "fence"}
	}
	memKey := func(s *redisstore.Store, v *saver) string { return s.Prefix() + "c{" + v.st.ID + "}:mem:" + v.mem }
	requireRefused := func(t *testing.T, what string, err error) {
		t.Helper()
		if !errors.Is(err, redisstore.ErrClusterChanging) {
			t.Fatalf("%s while the slot's keys are split between two masters: %v, want an error matching ErrClusterChanging", what, err)
		}
		if !strings.Contains(err.Error(), "TRYAGAIN") {
			t.Fatalf("%s: %v, want Redis's TRYAGAIN in it", what, err)
		}
	}
	// finishWhile ends the move m while call runs, and returns call's
	// error.
	finishWhile := func(t *testing.T, m *redistest.SlotMove, call func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- call() }()
		if err := m.Finish(ctx); err != nil {
			t.Fatalf("ending the slot's move: %v", err)
		}
		return <-done
	}
	requireTurns := func(t *testing.T, s *redisstore.Store, v *saver, n int) {
		t.Helper()
		requireConsistentOf(t, s, v.st.ID, v.mem, uint64(n))
		m, err := s.Memories().Get(ctx, v.mem)
		if err != nil {
			t.Fatal(err)
		}
		for i, msg := range m {
			if got, want := msg.Parts[0].(llms.TextContent).Text, fmt.Sprint("turn ", i+1); got != want {
				t.Fatalf("message %d of %d is %q, want %q", i, len(m), got, want)
			}
		}
		if len(m) != n {
			t.Fatalf("the memory holds %d turns, want %d", len(m), n)
		}
	}

	for _, tc := range []struct {
		name  string
		moved func(s *redisstore.Store, v *saver) []string
	}{
		// The case: the state went first, the memory's list is
		// still on the source.
		{"StateFirst", func(s *redisstore.Store, v *saver) []string { return stateKeys(s, v.st.ID) }},
		{"MemoryFirst", func(s *redisstore.Store, v *saver) []string { return []string{memKey(s, v)} }},
		{"Lease", func(s *redisstore.Store, v *saver) []string { return stateKeys(s, v.st.ID)[2:3] }},
	} {
		t.Run("Save"+tc.name, func(t *testing.T) {
			quick, patient := stores(t)
			v := startSaverOf(t, quick, conv(t))
			m := startMove(t, quick, v.st.ID)
			if err := m.MoveKeys(ctx, tc.moved(quick, v)...); err != nil {
				t.Fatal(err)
			}
			requireRefused(t, "Save", v.turn(ctx))
			// The save that waits succeeds once the move is over.
			v.s = patient
			if err := finishWhile(t, m, func() error { return v.turn(ctx) }); err != nil {
				t.Fatalf("Save while the move ends: %v", err)
			}
			requireTurns(t, patient, v, 6)
			if err := v.turn(ctx); err != nil {
				t.Fatal(err)
			}
			requireTurns(t, quick, v, 7)
		})
	}

	t.Run("SaveAllMoved", func(t *testing.T) {
		// Every key of the conversation is on the target, the slot not
		// yet: the source redirects the save there (ASK), where it runs.
		quick, _ := stores(t)
		v := startSaverOf(t, quick, conv(t))
		m := startMove(t, quick, v.st.ID)
		if err := m.MoveKeys(ctx, append(stateKeys(quick, v.st.ID), memKey(quick, v))...); err != nil {
			t.Fatal(err)
		}
		if err := v.turn(ctx); err != nil {
			t.Fatalf("Save with all its keys on the target: %v", err)
		}
		if err := m.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		requireTurns(t, quick, v, 6)
	})

	t.Run("SaveNewMemory", func(t *testing.T) {
		// Nothing moved yet, but the turn writes a memory that has no
		// list yet: its key is on neither master, which Redis cannot
		// tell from a key moved away.
		quick, patient := stores(t)
		v := startSaverOf(t, quick, conv(t))
		m := startMove(t, quick, v.st.ID)
		other := v.st.ID + "#other"
		turn := func(s *redisstore.Store) error {
			b := chatstore.NewBatch()
			bctx := chatstore.WithBatch(ctx, b)
			if err := s.Memories().Apply(bctx, v.mem, memory.Change{Tail: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "turn 6")}}); err != nil {
				return err
			}
			if err := s.Memories().Update(bctx, other, turnMessages(2)); err != nil {
				return err
			}
			st := *v.st
			st.Principal = "turn 6"
			st.Scopes = []chatstore.ScopeState{{ID: st.ID, Memories: []string{v.mem, other}}}
			if err := s.Save(ctx, &st, v.l, b); err != nil {
				return err
			}
			*v.st = st
			return nil
		}
		requireRefused(t, "Save", turn(quick))
		if err := finishWhile(t, m, func() error { return turn(patient) }); err != nil {
			t.Fatalf("Save while the move ends: %v", err)
		}
		requireTurns(t, quick, v, 6)
		if got, err := quick.Memories().Get(ctx, other); err != nil || len(got) != 2 {
			t.Fatalf("the new memory: %d messages, %v", len(got), err)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		quick, patient := stores(t)
		v := startSaverOf(t, quick, conv(t))
		m := startMove(t, quick, v.st.ID)
		if err := m.MoveKeys(ctx, stateKeys(quick, v.st.ID)...); err != nil {
			t.Fatal(err)
		}
		requireRefused(t, "Delete", quick.Delete(ctx, v.st.ID))
		if err := finishWhile(t, m, func() error { return patient.Delete(ctx, v.st.ID) }); err != nil {
			t.Fatalf("Delete while the move ends: %v", err)
		}
		// Nothing of the conversation is left, its memory's list neither.
		for _, k := range redistest.Keys(t, cc, quick.Prefix()) {
			if !strings.HasSuffix(k, "}:home") {
				t.Errorf("key %s is left after Delete", k)
			}
		}
		if got, err := patient.Memories().Get(ctx, v.mem); err != nil || len(got) != 0 {
			t.Fatalf("the memory after Delete: %d messages, %v", len(got), err)
		}
	})

	t.Run("Acquire", func(t *testing.T) {
		// A new conversation's lease and token counter exist nowhere.
		quick, patient := stores(t)
		id := conv(t)
		m := startMove(t, quick, id)
		_, err := quick.Acquire(ctx, id, "node-a", time.Minute)
		requireRefused(t, "Acquire", err)
		err = finishWhile(t, m, func() error {
			_, err := patient.Acquire(ctx, id, "node-a", time.Minute)
			return err
		})
		if err != nil {
			t.Fatalf("Acquire while the move ends: %v", err)
		}
		startSaverOf(t, quick, id)
	})

	t.Run("MemoryOutsideRequest", func(t *testing.T) {
		// A memory written outside any request: its list is replaced or
		// changed where it is, the slot migrating, without a moment where
		// the list does not exist (a command of a script on a key the
		// source does not hold fails the script, after what it wrote).
		quick, _ := stores(t)
		v := startSaverOf(t, quick, conv(t))
		m := startMove(t, quick, v.st.ID)
		ms := quick.Memories()
		msgs := func(from, to int) []llms.MessageContent {
			var out []llms.MessageContent
			for i := from; i <= to; i++ {
				out = append(out, llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprint("turn ", i)))
			}
			return out
		}
		if err := ms.Update(ctx, v.mem, msgs(1, 5)); err != nil {
			t.Fatalf("Update of a list on the source: %v", err)
		}
		if err := ms.Apply(ctx, v.mem, memory.Change{Drop: 5, Head: msgs(1, 2), Tail: msgs(3, 5)}); err != nil {
			t.Fatalf("Apply of a change that drops the whole list on the source: %v", err)
		}
		if err := m.Finish(ctx); err != nil {
			t.Fatal(err)
		}
		requireTurns(t, quick, v, 5)
	})

	t.Run("EmptyID", func(t *testing.T) {
		// An empty conversation id has no hash tag: its keys would be in
		// different slots (CROSSSLOT). The store refuses it first.
		s, _ := stores(t)
		requireEmptyIDRefused(t, s)
	})
}

// requireEmptyIDRefused calls every method of s with an empty id: each
// fails with an error matching ErrEmptyID.
func requireEmptyIDRefused(t *testing.T, s *redisstore.Store) {
	t.Helper()
	ctx := t.Context()
	l := chatstore.Lease{Owner: "node-a", Token: 1}
	b := chatstore.NewBatch()
	bctx := chatstore.WithBatch(ctx, b)
	ms := s.Memories()
	calls := map[string]func() error{
		"Load":   func() error { _, err := s.Load(ctx, ""); return err },
		"Save":   func() error { return s.Save(ctx, &chatstore.ConversationState{}, l, nil) },
		"Delete": func() error { return s.Delete(ctx, "") },
		"Acquire": func() error {
			_, err := s.Acquire(ctx, "", "node-a", time.Minute)
			return err
		},
		"Release":       func() error { return s.Release(ctx, "", l) },
		"memory Get":    func() error { _, err := ms.Get(ctx, ""); return err },
		"memory Update": func() error { return ms.Update(ctx, "", turnMessages(1)) },
		"memory Delete": func() error { return ms.Delete(ctx, "") },
		"memory Apply": func() error {
			return ms.Apply(ctx, "", memory.Change{Tail: turnMessages(1)})
		},
		"staged Get":    func() error { _, err := ms.Get(bctx, ""); return err },
		"staged Update": func() error { return ms.Update(bctx, "", turnMessages(1)) },
		"staged Delete": func() error { return ms.Delete(bctx, "") },
		"staged Apply": func() error {
			return ms.Apply(bctx, "", memory.Change{Tail: turnMessages(1)})
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, redisstore.ErrEmptyID) {
			t.Errorf("%s with an empty id: %v, want an error matching ErrEmptyID", name, err)
		}
	}
	if b.Len() != 0 {
		t.Errorf("the batch holds %d writes after calls with an empty id", b.Len())
	}
}

// TestEmptyID calls every method with an empty id, on one Redis.
func TestEmptyID(t *testing.T) {
	c := redistest.Client(t)
	requireEmptyIDRefused(t, newStore(t, c, time.Hour))
}
