// Package chatstoretest is a conformance suite for implementations of
// [chatstore.ConversationStore] and of the memory.Store that keeps their
// conversations' chat memories. A store passes if
//
//	func TestMyStore(t *testing.T) {
//		chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store { return newMyStore(t, 0) })
//		chatstoretest.RunExpiry(t, func(t *testing.T, ttl time.Duration) chatstoretest.Store {
//			return newMyStore(t, ttl)
//		})
//	}
//
// passes, under -race. Run checks every sentence of the contract documented
// on [chatstore.ConversationStore]: creation at version 0, the optimistic version
// check, leases and their fencing tokens, release, deletion, the memories a
// save drops, the atomic commit of a [chatstore.Batch] with the state, values
// that are never aliased, concurrent savers, and the store's memory side
// (package memory's storetest suite, run once directly and once through a
// batch, plus a model-based walk of staged memory changes committed by
// saves). RunExpiry checks that idle conversations expire with their
// memories.
package chatstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/memory/storetest"
	"github.com/tmc/langchaingo/llms"
)

// A Store is what the suite tests: a conversation store and the memory
// store of its conversations' chat memories.
type Store struct {
	Conversations chatstore.ConversationStore
	Memories      memory.Store
}

// Run runs the suite. newStore must return a new store for each call, in
// which no conversation and no memory exists yet; the suite calls it once
// per subtest. The store may have a time to live, as long as it is longer
// than a minute.
func Run(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"LoadUnknown", testLoadUnknown},
		{"CreateAndLoad", testCreateAndLoad},
		{"RoundTrip", testRoundTrip},
		{"VersionConflict", testVersionConflict},
		{"SaveDeleted", testSaveDeleted},
		{"LeaseAcquireRenewHeld", testLeaseAcquireRenewHeld},
		{"LeaseExpiryTakeover", testLeaseExpiryTakeover},
		{"LeaseExpiredNotTakenOver", testLeaseExpiredNotTakenOver},
		{"Release", testRelease},
		{"Delete", testDelete},
		{"DroppedMemories", testDroppedMemories},
		{"BatchAtomic", testBatchAtomic},
		{"BatchReadYourWrites", testBatchReadYourWrites},
		{"BatchKnownLength", testBatchKnownLength},
		{"BatchModel", testBatchModel},
		{"NoAliasing", testNoAliasing},
		{"ConcurrentSavers", testConcurrentSavers},
		{"ConcurrentConversations", testConcurrentConversations},
		{"EvictingMemories", testEvictingMemories},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newStore(t))
		})
	}
	t.Run("Memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) memory.Store { return newStore(t).Memories })
	})
	t.Run("MemoryInBatch", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) memory.Store { return batched(newStore(t).Memories) })
	})
}

// RunExpiry checks that conversations expire, with their memories, once
// idle for longer than the store's time to live. newStore must return a new
// store whose time to live is ttl (and which sweeps expired data within a
// few seconds, if it sweeps). The test waits for the expiry, polling for up
// to a minute.
func RunExpiry(t *testing.T, newStore func(t *testing.T, ttl time.Duration) Store) {
	t.Helper()
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, newStore(t, 300*time.Millisecond)) })
}

// State returns a conversation state with two scopes, durable beans, a
// memory per scope, a resume token hash and transport state: the shape the
// runtime saves after a turn in a nested scope. Version is 0.
func State(id string) *chatstore.ConversationState {
	created := time.Date(2026, 11, 24, 12, 0, 0, 123456789, time.UTC)
	return &chatstore.ConversationState{
		ID:        id,
		Principal: "alice",
		Created:   created,
		Used:      created.Add(90 * time.Second),
		Scopes: []chatstore.ScopeState{
			{
				ID:       id,
				Route:    "example.com/app.MainMenu",
				Beans:    map[string][]byte{"example.com/app.Cart": []byte(`{"items":["sword"],"total":12.5}`)},
				Memories: []string{id + "#example.com/app.Assistant.Chat"},
			},
			{
				ID:       id + "-builder",
				Route:    "example.com/app.Builder",
				Wipe:     true,
				Beans:    map[string][]byte{"example.com/app.Weapon": []byte(`{"blade":"steel","hilt":null}`)},
				Memories: []string{id + "-builder#example.com/app.Builder.Chat"},
			},
		},
		ResumeTokenHash: bytes.Repeat([]byte{0xab}, 32),
		Extra:           map[string][]byte{"ws": []byte("\x00\x01binary\xff")},
	}
}

// Equal reports whether a and b are the same state: times are compared
// with time.Time.Equal, and nil and empty slices and maps are equal.
func Equal(a, b *chatstore.ConversationState) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.ID != b.ID || a.Version != b.Version || a.Principal != b.Principal ||
		!a.Created.Equal(b.Created) || !a.Used.Equal(b.Used) ||
		!bytes.Equal(a.ResumeTokenHash, b.ResumeTokenHash) || !equalBytesMap(a.Extra, b.Extra) ||
		len(a.Scopes) != len(b.Scopes) {
		return false
	}
	for i := range a.Scopes {
		x, y := a.Scopes[i], b.Scopes[i]
		if x.ID != y.ID || x.Route != y.Route || x.Wipe != y.Wipe || !equalBytesMap(x.Beans, y.Beans) ||
			!slices.Equal(x.Memories, y.Memories) {
			return false
		}
	}
	return true
}

func equalBytesMap(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

func show(st *chatstore.ConversationState) string {
	if st == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v", *st)
}

func requireState(t *testing.T, what string, got, want *chatstore.ConversationState) {
	t.Helper()
	if !Equal(got, want) {
		t.Fatalf("%s:\n got: %s\nwant: %s", what, show(got), show(want))
	}
}

// clone returns a deep copy of st.
func clone(st *chatstore.ConversationState) *chatstore.ConversationState {
	c := *st
	c.ResumeTokenHash = slices.Clone(st.ResumeTokenHash)
	c.Extra = cloneBytesMap(st.Extra)
	c.Scopes = slices.Clone(st.Scopes)
	for i := range c.Scopes {
		c.Scopes[i].Beans = cloneBytesMap(c.Scopes[i].Beans)
		c.Scopes[i].Memories = slices.Clone(c.Scopes[i].Memories)
	}
	return &c
}

func cloneBytesMap(m map[string][]byte) map[string][]byte {
	if m == nil {
		return nil
	}
	c := make(map[string][]byte, len(m))
	for k, v := range m {
		c[k] = slices.Clone(v)
	}
	return c
}

func load(t *testing.T, s chatstore.ConversationStore, id string) *chatstore.ConversationState {
	t.Helper()
	st, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatalf("Load(%q): %v", id, err)
	}
	return st
}

func acquire(t *testing.T, s chatstore.ConversationStore, id, owner string) chatstore.Lease {
	t.Helper()
	l, err := s.Acquire(t.Context(), id, owner, time.Minute)
	if err != nil {
		t.Fatalf("Acquire(%q, %q): %v", id, owner, err)
	}
	if l.Token == 0 || l.Owner != owner {
		t.Fatalf("Acquire(%q, %q) = %+v: want a token > 0 and the owner", id, owner, l)
	}
	return l
}

func save(t *testing.T, s chatstore.ConversationStore, st *chatstore.ConversationState, l chatstore.Lease, b *chatstore.Batch) {
	t.Helper()
	want := st.Version + 1
	if err := s.Save(t.Context(), st, l, b); err != nil {
		t.Fatalf("Save(%q, version %d): %v", st.ID, st.Version, err)
	}
	if st.Version != want {
		t.Fatalf("after Save, Version = %d, want %d", st.Version, want)
	}
}

// create saves State(id) for the first time under a new lease of "node-a".
func create(t *testing.T, s chatstore.ConversationStore, id string) (*chatstore.ConversationState, chatstore.Lease) {
	t.Helper()
	l := acquire(t, s, id, "node-a")
	st := State(id)
	save(t, s, st, l, nil)
	return st, l
}

func requireNotFound(t *testing.T, s chatstore.ConversationStore, id string) {
	t.Helper()
	st, err := s.Load(t.Context(), id)
	if !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("Load(%q) = %s, %v; want an error matching ErrConversationNotFound", id, show(st), err)
	}
}

func msgs(texts ...string) []llms.MessageContent {
	out := make([]llms.MessageContent, len(texts))
	for i, s := range texts {
		out[i] = llms.TextParts(llms.ChatMessageTypeHuman, s)
	}
	return out
}

func getMem(t *testing.T, ctx context.Context, ms memory.Store, id string) []llms.MessageContent {
	t.Helper()
	got, err := ms.Get(ctx, id)
	if err != nil {
		t.Fatalf("memory Get(%q): %v", id, err)
	}
	return got
}

func requireMem(t *testing.T, what string, ctx context.Context, ms memory.Store, id string, want []llms.MessageContent) {
	t.Helper()
	if got := getMem(t, ctx, ms, id); !storetest.Equal(got, want) {
		t.Fatalf("%s: memory %q = %v, want %v", what, id, got, want)
	}
}

func updateMem(t *testing.T, ctx context.Context, ms memory.Store, id string, m []llms.MessageContent) {
	t.Helper()
	if err := ms.Update(ctx, id, m); err != nil {
		t.Fatalf("memory Update(%q): %v", id, err)
	}
}

func memIDs(t *testing.T, ms memory.Store) []string {
	t.Helper()
	ids, err := ms.IDs(t.Context())
	if err != nil {
		t.Fatalf("memory IDs: %v", err)
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

func testLoadUnknown(t *testing.T, x Store) {
	s := x.Conversations
	requireNotFound(t, s, "unknown")
	if err := s.Delete(t.Context(), "unknown"); err != nil {
		t.Fatalf("Delete of an unknown conversation: %v", err)
	}
	if err := s.Release(t.Context(), "unknown", chatstore.Lease{Owner: "node-a", Token: 1}); err != nil {
		t.Fatalf("Release of a lease never granted: %v", err)
	}
}

func testCreateAndLoad(t *testing.T, x Store) {
	s := x.Conversations
	st, l := create(t, s, "c1")
	want := State("c1")
	want.Version = 1
	requireState(t, "Load after the first Save", load(t, s, "c1"), want)

	// Version 0 means "must not exist yet".
	again := State("c1")
	again.Principal = "mallory"
	err := s.Save(t.Context(), again, l, nil)
	if !errors.Is(err, chatstore.ErrVersionConflict) {
		t.Fatalf("Save at version 0 of an existing conversation = %v, want ErrVersionConflict", err)
	}
	if again.Version != 0 {
		t.Fatalf("a failed Save set Version to %d", again.Version)
	}
	requireState(t, "Load after a refused creation", load(t, s, "c1"), want)

	// The next save writes version 2.
	st.Scopes = st.Scopes[:1]
	st.Used = st.Used.Add(time.Minute)
	save(t, s, st, l, nil)
	requireState(t, "Load after the second Save", load(t, s, "c1"), st)
	requireNotFound(t, s, "c2")
}

func testRoundTrip(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	cases := []*chatstore.ConversationState{
		State("full"),
		{ID: "bare"}, // zero times, no scopes, no maps
		{
			ID:        "odd €\x00/#:*?{x}",
			Principal: "ünïcode \"quoted\"",
			Created:   time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("X", -7*3600)),
			Used:      time.Date(2100, 1, 1, 0, 0, 0, 1, time.UTC),
			Scopes: []chatstore.ScopeState{{
				ID: "s", Route: "r",
				Beans:    map[string][]byte{"empty": {}, "text": []byte("not json at all")},
				Memories: []string{"m1", "m2", "m3"},
			}},
			ResumeTokenHash: []byte{0},
			Extra:           map[string][]byte{"": []byte("empty key"), "k": nil},
		},
	}
	for _, want := range cases {
		l := acquire(t, s, want.ID, "node-a")
		st := clone(want)
		if err := s.Save(ctx, st, l, nil); err != nil {
			t.Fatalf("Save(%q): %v", want.ID, err)
		}
		want.Version = 1
		requireState(t, fmt.Sprintf("Load(%q)", want.ID), load(t, s, want.ID), want)
	}
}

func testVersionConflict(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	ms := x.Memories
	st, l := create(t, s, "c")
	mem := st.Scopes[0].Memories[0]
	first, second := load(t, s, "c"), load(t, s, "c")

	b := chatstore.NewBatch()
	updateMem(t, chatstore.WithBatch(ctx, b), ms, mem, msgs("from the first writer"))
	first.Principal = "first"
	save(t, s, first, l, b)

	// The second writer's state is stale: its save writes nothing, neither
	// the state nor its batch.
	b2 := chatstore.NewBatch()
	bctx := chatstore.WithBatch(ctx, b2)
	updateMem(t, bctx, ms, mem, msgs("from the second writer"))
	updateMem(t, bctx, ms, "new-memory", msgs("also from the second writer"))
	second.Principal = "second"
	second.Scopes[0].Memories = append(second.Scopes[0].Memories, "new-memory")
	err := s.Save(ctx, second, l, b2)
	if !errors.Is(err, chatstore.ErrVersionConflict) {
		t.Fatalf("Save of a stale version = %v, want ErrVersionConflict", err)
	}
	if second.Version != 1 {
		t.Fatalf("a failed Save changed Version to %d", second.Version)
	}
	requireState(t, "Load after the conflict", load(t, s, "c"), first)
	requireMem(t, "after the conflict", ctx, ms, mem, msgs("from the first writer"))
	requireMem(t, "after the conflict", ctx, ms, "new-memory", nil)

	// Reloaded, the second writer saves.
	second = load(t, s, "c")
	second.Principal = "second"
	save(t, s, second, l, nil)
	if second.Version != 3 {
		t.Fatalf("Version = %d after three saves", second.Version)
	}
}

func testSaveDeleted(t *testing.T, x Store) {
	s := x.Conversations
	st, _ := create(t, s, "gone")
	if err := s.Delete(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	l := acquire(t, s, "gone", "node-a")
	err := s.Save(t.Context(), st, l, nil)
	if !errors.Is(err, chatstore.ErrVersionConflict) || !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("Save of a deleted conversation = %v, want ErrVersionConflict and ErrConversationNotFound", err)
	}
	if st.Version != 1 {
		t.Fatalf("a failed Save changed Version to %d", st.Version)
	}
	requireNotFound(t, s, "gone")
}

func testLeaseAcquireRenewHeld(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	// The conversation need not exist.
	a := acquire(t, s, "c", "node-a")
	if a.Expires.Before(time.Now().Add(30 * time.Second)) {
		t.Fatalf("a lease for a minute expires at %v", a.Expires)
	}
	renewed, err := s.Acquire(ctx, "c", "node-a", 2*time.Minute)
	if err != nil {
		t.Fatalf("renewal: %v", err)
	}
	if renewed.Token != a.Token || renewed.Owner != "node-a" || !renewed.Expires.After(a.Expires) {
		t.Fatalf("renewal of %+v = %+v: want the same token, a later expiry", a, renewed)
	}
	_, err = s.Acquire(ctx, "c", "node-b", time.Minute)
	if !errors.Is(err, chatstore.ErrLeaseHeld) {
		t.Fatalf("Acquire of a held lease = %v, want ErrLeaseHeld", err)
	}
	// Leases are per conversation.
	other := acquire(t, s, "other", "node-b")
	// A save under the lease of another conversation is refused.
	if err := s.Save(ctx, State("c"), other, nil); !errors.Is(err, chatstore.ErrLeaseLost) {
		t.Fatalf("Save under another conversation's lease = %v, want ErrLeaseLost", err)
	}
	// So is a save under no lease.
	if err := s.Save(ctx, State("c"), chatstore.Lease{}, nil); !errors.Is(err, chatstore.ErrLeaseLost) {
		t.Fatalf("Save under the zero lease = %v, want ErrLeaseLost", err)
	}
	// Or under a forged one: the right token, the wrong owner.
	if err := s.Save(ctx, State("c"), chatstore.Lease{Owner: "node-b", Token: a.Token, Expires: a.Expires}, nil); !errors.Is(err, chatstore.ErrLeaseLost) {
		t.Fatalf("Save under a lease with another owner = %v, want ErrLeaseLost", err)
	}
	requireNotFound(t, s, "c")
	save(t, s, State("c"), renewed, nil)
}

// waitExpired waits until l has expired, by the clock of this process and
// with a margin for the store's.
func waitExpired(l chatstore.Lease) {
	time.Sleep(time.Until(l.Expires) + 50*time.Millisecond)
}

func testLeaseExpiryTakeover(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	ms := x.Memories
	st, _ := create(t, s, "c")
	// Renewed for a short time.
	a, err := s.Acquire(ctx, "c", "node-a", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	waitExpired(a)
	b, err := s.Acquire(ctx, "c", "node-b", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after the holder's lease expired: %v", err)
	}
	if b.Token <= a.Token {
		t.Fatalf("the new holder's token %d is not greater than the old one's %d", b.Token, a.Token)
	}
	// The old holder's late write is fenced off, batch included.
	mem := st.Scopes[0].Memories[0]
	batch := chatstore.NewBatch()
	updateMem(t, chatstore.WithBatch(ctx, batch), ms, mem, msgs("late"))
	late := clone(st)
	late.Principal = "late"
	if err := s.Save(ctx, late, a, batch); !errors.Is(err, chatstore.ErrLeaseLost) {
		t.Fatalf("Save under a lease taken over = %v, want ErrLeaseLost", err)
	}
	if late.Version != st.Version {
		t.Fatalf("a failed Save changed Version to %d", late.Version)
	}
	requireState(t, "after the late write", load(t, s, "c"), st)
	requireMem(t, "after the late write", ctx, ms, mem, nil)
	// The old holder cannot take it back while the new lease runs.
	if _, err := s.Acquire(ctx, "c", "node-a", time.Minute); !errors.Is(err, chatstore.ErrLeaseHeld) {
		t.Fatalf("the old holder's Acquire = %v, want ErrLeaseHeld", err)
	}
	// The new holder saves.
	next := load(t, s, "c")
	next.Principal = "b"
	save(t, s, next, b, nil)
}

func testLeaseExpiredNotTakenOver(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	st, _ := create(t, s, "c")
	a, err := s.Acquire(ctx, "c", "node-a", 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	waitExpired(a)
	// Nobody took the conversation over: the lease is still the current
	// one, and renewing it keeps its token.
	save(t, s, st, a, nil)
	again := acquire(t, s, "c", "node-a")
	if again.Token != a.Token {
		t.Fatalf("renewal of an expired lease nobody took over: token %d, want %d", again.Token, a.Token)
	}
}

func testRelease(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	st, a := create(t, s, "c")
	if err := s.Release(ctx, "c", a); err != nil {
		t.Fatalf("Release: %v", err)
	}
	// A released lease writes nothing.
	late := clone(st)
	late.Principal = "late"
	if err := s.Save(ctx, late, a, nil); !errors.Is(err, chatstore.ErrLeaseLost) {
		t.Fatalf("Save under a released lease = %v, want ErrLeaseLost", err)
	}
	requireState(t, "after a save under a released lease", load(t, s, "c"), st)
	// Another node takes over at once, with a greater token.
	b := acquire(t, s, "c", "node-b")
	if b.Token <= a.Token {
		t.Fatalf("token after release %d, not greater than %d", b.Token, a.Token)
	}
	// Releasing a lease that is no longer the current one does nothing.
	if err := s.Release(ctx, "c", a); err != nil {
		t.Fatalf("Release of a stale lease: %v", err)
	}
	if err := s.Release(ctx, "c", chatstore.Lease{Owner: "node-b", Token: b.Token + 1}); err != nil {
		t.Fatalf("Release of a lease never granted: %v", err)
	}
	if _, err := s.Acquire(ctx, "c", "node-c", time.Minute); !errors.Is(err, chatstore.ErrLeaseHeld) {
		t.Fatalf("Acquire after releasing stale leases = %v, want ErrLeaseHeld", err)
	}
	save(t, s, st, b, nil)
	// And a node that releases and acquires again gets a new token.
	if err := s.Release(ctx, "c", b); err != nil {
		t.Fatal(err)
	}
	if b2 := acquire(t, s, "c", "node-b"); b2.Token <= b.Token {
		t.Fatalf("token after re-acquiring %d, not greater than %d", b2.Token, b.Token)
	}
}

func testDelete(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	ms := x.Memories
	l := acquire(t, s, "c", "node-a")
	st := State("c")
	b := chatstore.NewBatch()
	bctx := chatstore.WithBatch(ctx, b)
	for _, sc := range st.Scopes {
		updateMem(t, bctx, ms, sc.Memories[0], msgs("hello", sc.ID))
	}
	save(t, s, st, l, b)
	updateMem(t, ctx, ms, "unrelated", msgs("stays"))
	keep := State("keep")
	save(t, s, keep, acquire(t, s, "keep", "node-a"), nil)

	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	requireNotFound(t, s, "c")
	for _, sc := range st.Scopes {
		requireMem(t, "after Delete", ctx, ms, sc.Memories[0], nil)
	}
	if got := memIDs(t, ms); !slices.Equal(got, []string{"unrelated"}) {
		t.Fatalf("memory IDs after Delete = %q, want only %q", got, "unrelated")
	}
	// The lease went with it: another node acquires at once.
	acquire(t, s, "c", "node-b")
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	requireState(t, "another conversation", load(t, s, "keep"), keep)
	// The id can be used again.
	save(t, s, State("c"), acquire(t, s, "c", "node-c"), nil)
}

func testDroppedMemories(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	ms := x.Memories
	l := acquire(t, s, "c", "node-a")
	st := State("c")
	top, nested := st.Scopes[0].Memories[0], st.Scopes[1].Memories[0]
	// One memory written at once, one through the batch.
	updateMem(t, ctx, ms, top, msgs("top"))
	b := chatstore.NewBatch()
	updateMem(t, chatstore.WithBatch(ctx, b), ms, nested, msgs("nested"))
	save(t, s, st, l, b)
	requireMem(t, "after the first save", ctx, ms, top, msgs("top"))
	requireMem(t, "after the first save", ctx, ms, nested, msgs("nested"))

	// The nested scope ends: its memory goes with the save.
	st.Scopes = st.Scopes[:1]
	save(t, s, st, l, nil)
	requireMem(t, "after the nested scope ended", ctx, ms, nested, nil)
	requireMem(t, "after the nested scope ended", ctx, ms, top, msgs("top"))

	// A memory detached and written in the same request is deleted too.
	st.Scopes[0].Memories = nil
	b = chatstore.NewBatch()
	updateMem(t, chatstore.WithBatch(ctx, b), ms, top, msgs("top", "more"))
	save(t, s, st, l, b)
	requireMem(t, "after detaching the top memory", ctx, ms, top, nil)
	if got := memIDs(t, ms); len(got) != 0 {
		t.Fatalf("memory IDs = %q, want none", got)
	}
	// A memory moved from one scope to another is kept.
	st.Scopes = append(st.Scopes, chatstore.ScopeState{ID: "s2", Route: "r", Memories: []string{"moving"}})
	updateMem(t, ctx, ms, "moving", msgs("moves"))
	save(t, s, st, l, nil)
	st.Scopes[1].Memories = nil
	st.Scopes[0].Memories = []string{"moving"}
	save(t, s, st, l, nil)
	requireMem(t, "after moving a memory", ctx, ms, "moving", msgs("moves"))
}

func testBatchAtomic(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	ms := x.Memories
	st, l := create(t, s, "c")
	top, nested := st.Scopes[0].Memories[0], st.Scopes[1].Memories[0]
	updateMem(t, ctx, ms, top, msgs("t1"))
	updateMem(t, ctx, ms, nested, msgs("n1"))

	b := chatstore.NewBatch()
	bctx := chatstore.WithBatch(ctx, b)
	updateMem(t, bctx, ms, top, msgs("t1", "t2"))
	if err := ms.Delete(bctx, nested); err != nil {
		t.Fatal(err)
	}
	// Nothing is written before the save.
	requireMem(t, "before the save", ctx, ms, top, msgs("t1"))
	requireMem(t, "before the save", ctx, ms, nested, msgs("n1"))
	if got := memIDs(t, ms); !slices.Equal(got, []string{nested, top}) && !slices.Equal(got, []string{top, nested}) {
		t.Fatalf("memory IDs before the save = %q", got)
	}
	st.Used = st.Used.Add(time.Minute)
	save(t, s, st, l, b)
	requireMem(t, "after the save", ctx, ms, top, msgs("t1", "t2"))
	requireMem(t, "after the save", ctx, ms, nested, nil)
	requireState(t, "after the save", load(t, s, "c"), st)
}

func testBatchReadYourWrites(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	ms := x.Memories
	is, ok := ms.(memory.IncrementalStore)
	updateMem(t, ctx, ms, "m", msgs("1", "2", "3"))
	updateMem(t, ctx, ms, "gone", msgs("x"))
	b := chatstore.NewBatch()
	bctx := chatstore.WithBatch(ctx, b)
	requireMem(t, "in a new batch", bctx, ms, "m", msgs("1", "2", "3"))
	if ok {
		if err := is.Apply(bctx, "m", memory.Change{Drop: 1, Tail: msgs("4")}); err != nil {
			t.Fatal(err)
		}
		requireMem(t, "after a staged Apply", bctx, ms, "m", msgs("2", "3", "4"))
		if err := is.Apply(bctx, "m", memory.Change{Drop: 4}); err == nil {
			t.Fatal("a staged Apply dropping 4 of 3 messages succeeded")
		}
		requireMem(t, "after a failed staged Apply", bctx, ms, "m", msgs("2", "3", "4"))
	} else {
		updateMem(t, bctx, ms, "m", msgs("2", "3", "4"))
	}
	if err := ms.Delete(bctx, "gone"); err != nil {
		t.Fatal(err)
	}
	updateMem(t, bctx, ms, "new", msgs("n"))
	requireMem(t, "staged deletion", bctx, ms, "gone", nil)
	requireMem(t, "staged creation", bctx, ms, "new", msgs("n"))
	ids, err := ms.IDs(bctx)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"m", "new"}) {
		t.Fatalf("IDs in the batch = %q, want [m new]", ids)
	}
	// Outside the batch, nothing happened.
	requireMem(t, "outside the batch", ctx, ms, "m", msgs("1", "2", "3"))
	requireMem(t, "outside the batch", ctx, ms, "gone", msgs("x"))
	requireMem(t, "outside the batch", ctx, ms, "new", nil)
	if b.Len() == 0 {
		t.Fatal("the store staged nothing in the batch")
	}
	// The save commits what the batch showed.
	st := &chatstore.ConversationState{ID: "c", Scopes: []chatstore.ScopeState{{ID: "c", Memories: []string{"m", "new"}}}}
	save(t, s, st, acquire(t, s, "c", "node-a"), b)
	requireMem(t, "after the save", ctx, ms, "m", msgs("2", "3", "4"))
	requireMem(t, "after the save", ctx, ms, "gone", nil)
	requireMem(t, "after the save", ctx, ms, "new", msgs("n"))
}

// testBatchModel runs turns of random memory changes staged in a batch
// and committed by a save, checked against a model before and after each
// save, through the batch and directly.
// testBatchKnownLength stages changes that tell the list's length
// (memory.Change.Len) instead of leaving the store to read it: one made
// against the length the list has commits; one made against another
// length fails the save with ErrVersionConflict, changing nothing, even
// when the list holds enough messages for its drop.
func testBatchKnownLength(t *testing.T, x Store) {
	is, ok := x.Memories.(memory.IncrementalStore)
	if !ok {
		t.Skip("the memory store is not a memory.IncrementalStore")
	}
	s := x.Conversations
	ctx := t.Context()
	st, l := create(t, s, "c")
	mid := st.Scopes[0].Memories[0]
	updateMem(t, ctx, is, mid, msgs("1", "2", "3"))

	b := chatstore.NewBatch()
	bctx := chatstore.WithBatch(ctx, b)
	if err := is.Apply(bctx, mid, memory.Change{Drop: 1, Tail: msgs("4"), Len: 3}); err != nil {
		t.Fatal(err)
	}
	// A second change in the batch: Len counts what the batch leaves.
	if err := is.Apply(bctx, mid, memory.Change{Drop: 2, Tail: msgs("5"), Len: 3}); err != nil {
		t.Fatal(err)
	}
	requireMem(t, "in the batch", bctx, is, mid, msgs("4", "5"))
	save(t, s, st, l, b)
	requireMem(t, "after the save", ctx, is, mid, msgs("4", "5"))

	b = chatstore.NewBatch()
	bctx = chatstore.WithBatch(ctx, b)
	if err := is.Apply(bctx, mid, memory.Change{Drop: 1, Tail: msgs("6"), Len: 5}); err != nil {
		t.Fatal(err)
	}
	st.Used = st.Used.Add(time.Minute)
	err := s.Save(ctx, st, l, b)
	if !errors.Is(err, chatstore.ErrVersionConflict) {
		t.Fatalf("Save of a change made against 5 messages, of a list of 2 = %v, want ErrVersionConflict", err)
	}
	requireMem(t, "after the failed save", ctx, is, mid, msgs("4", "5"))
	got := load(t, s, "c")
	if got.Version != st.Version {
		t.Fatalf("after the failed save, the conversation is at version %d, want %d", got.Version, st.Version)
	}
}

func testBatchModel(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	ms := x.Memories
	is, incremental := ms.(memory.IncrementalStore)
	r := rand.New(rand.NewPCG(3, 4))
	l := acquire(t, s, "c", "node-a")
	st := &chatstore.ConversationState{ID: "c", Scopes: []chatstore.ScopeState{{ID: "c", Route: "r"}}}
	ids := []string{"m0", "m1", "m2"}
	model := map[string][]llms.MessageContent{}
	next := 0
	msg := func() llms.MessageContent {
		next++
		return llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprint(next))
	}
	check := func(what string, ctx context.Context) {
		t.Helper()
		for _, id := range ids {
			requireMem(t, what, ctx, ms, id, model[id])
		}
	}
	for turn := range 40 {
		b := chatstore.NewBatch()
		bctx := chatstore.WithBatch(ctx, b)
		before := maps.Clone(model)
		for range 1 + r.IntN(6) {
			id := ids[r.IntN(len(ids))]
			cur := model[id]
			switch op := r.IntN(10); {
			case op == 0:
				if err := ms.Delete(bctx, id); err != nil {
					t.Fatal(err)
				}
				delete(model, id)
			case op == 1 || !incremental:
				m := []llms.MessageContent{msg(), msg()}
				updateMem(t, bctx, ms, id, m)
				model[id] = m
			default:
				var c memory.Change
				c.Drop = r.IntN(len(cur) + 1)
				if r.IntN(5) == 0 {
					c.Drop = len(cur) + 1 + r.IntN(2) // too many: must fail
				}
				for range r.IntN(3) {
					c.Head = append(c.Head, msg())
				}
				for range r.IntN(4) {
					c.Tail = append(c.Tail, msg())
				}
				err := is.Apply(bctx, id, c)
				if c.Drop > len(cur) {
					if err == nil {
						t.Fatalf("turn %d: staged Apply dropping %d of %d messages succeeded", turn, c.Drop, len(cur))
					}
					break
				}
				if err != nil {
					t.Fatalf("turn %d: staged Apply: %v", turn, err)
				}
				model[id] = slices.Concat(c.Head, cur[c.Drop:], c.Tail)
				if len(model[id]) == 0 {
					delete(model, id)
				}
			}
			check(fmt.Sprintf("turn %d, through the batch", turn), bctx)
		}
		now := model
		model = before
		check(fmt.Sprintf("turn %d, before the save", turn), ctx)
		model = now
		st.Scopes[0].Memories = ids
		save(t, s, st, l, b)
		check(fmt.Sprintf("turn %d, after the save", turn), ctx)
	}
}

func testNoAliasing(t *testing.T, x Store) {
	s := x.Conversations
	l := acquire(t, s, "c", "node-a")
	st := State("c")
	save(t, s, st, l, nil)
	want := clone(st)

	// Mutate everything the caller passed to Save.
	st.Scopes[0].Route = "changed"
	st.Scopes[0].Beans["example.com/app.Cart"][0] = 'X'
	st.Scopes[0].Beans["new"] = []byte("new")
	st.Scopes[1].Memories[0] = "changed"
	st.ResumeTokenHash[0] = 0
	st.Extra["ws"][0] = 'X'
	st.Extra["new"] = nil
	requireState(t, "after mutating the state passed to Save", load(t, s, "c"), want)

	// Mutate what Load returned.
	got := load(t, s, "c")
	got.Scopes[0].Beans["example.com/app.Cart"][1] = 'X'
	got.Scopes[1].Memories[0] = "changed"
	got.Scopes = append(got.Scopes[:1], chatstore.ScopeState{ID: "x"})
	got.ResumeTokenHash[0] = 1
	got.Extra["ws"][1] = 'X'
	requireState(t, "after mutating a loaded state", load(t, s, "c"), want)
}

func testConcurrentSavers(t *testing.T, x Store) {
	s := x.Conversations
	const (
		savers = 8
		rounds = 5
	)
	ctx := t.Context()
	ms := x.Memories
	_, l := create(t, s, "c")
	for round := range rounds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []int
		base := load(t, s, "c")
		for g := range savers {
			wg.Go(func() {
				st := clone(base)
				st.Principal = fmt.Sprint("saver ", g)
				b := chatstore.NewBatch()
				if err := ms.Update(chatstore.WithBatch(ctx, b), "shared", msgs(st.Principal)); err != nil {
					t.Error(err)
					return
				}
				st.Scopes[0].Memories = []string{"shared"}
				err := s.Save(ctx, st, l, b)
				switch {
				case err == nil:
					mu.Lock()
					won = append(won, g)
					mu.Unlock()
				case !errors.Is(err, chatstore.ErrVersionConflict):
					t.Errorf("saver %d: %v, want nil or ErrVersionConflict", g, err)
				}
			})
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("round %d: %d savers won (%v), want exactly one", round, len(won), won)
		}
		got := load(t, s, "c")
		winner := fmt.Sprint("saver ", won[0])
		if got.Version != base.Version+1 || got.Principal != winner {
			t.Fatalf("round %d: stored version %d by %q, want %d by %q", round, got.Version, got.Principal, base.Version+1, winner)
		}
		// The winner's batch, and only it, was committed.
		requireMem(t, fmt.Sprint("round ", round), ctx, ms, "shared", msgs(winner))
	}
}

func testConcurrentConversations(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	ms := x.Memories
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			id := fmt.Sprint("conv-", g)
			l, err := s.Acquire(ctx, id, fmt.Sprint("node-", g), time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			st := State(id)
			for i := range 10 {
				b := chatstore.NewBatch()
				if err := ms.Update(chatstore.WithBatch(ctx, b), st.Scopes[0].Memories[0], msgs(fmt.Sprint(id, " turn ", i))); err != nil {
					t.Error(err)
					return
				}
				if err := s.Save(ctx, st, l, b); err != nil {
					t.Errorf("%s turn %d: %v", id, i, err)
					return
				}
			}
			got, err := s.Load(ctx, id)
			if err != nil || got.Version != 10 {
				t.Errorf("%s: Load = %s, %v; want version 10", id, show(got), err)
			}
			m, err := ms.Get(ctx, st.Scopes[0].Memories[0])
			if err != nil || !storetest.Equal(m, msgs(fmt.Sprint(id, " turn 9"))) {
				t.Errorf("%s: memory = %v, %v", id, m, err)
			}
		})
	}
	wg.Wait()
}

func testExpiry(t *testing.T, x Store) {
	s := x.Conversations
	ctx := t.Context()
	ms := x.Memories
	st := State("c")
	b := chatstore.NewBatch()
	bctx := chatstore.WithBatch(ctx, b)
	for _, sc := range st.Scopes {
		updateMem(t, bctx, ms, sc.Memories[0], msgs("hello"))
	}
	save(t, s, st, acquire(t, s, "c", "node-a"), b)
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := s.Load(ctx, "c")
		ids := memIDs(t, ms)
		if errors.Is(err, chatstore.ErrConversationNotFound) && len(ids) == 0 {
			break
		}
		if err != nil && !errors.Is(err, chatstore.ErrConversationNotFound) {
			t.Fatalf("Load while waiting for the expiry: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after a save with a time to live of 300ms: Load error %v, memory ids %q", err, ids)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, sc := range st.Scopes {
		requireMem(t, "after the expiry", ctx, ms, sc.Memories[0], nil)
	}
	// An expired conversation can be created again, and a save of the
	// expired version is refused.
	l := acquire(t, s, "c", "node-a")
	if err := s.Save(ctx, st, l, nil); !errors.Is(err, chatstore.ErrVersionConflict) {
		t.Fatalf("Save of an expired conversation's version = %v, want ErrVersionConflict", err)
	}
	save(t, s, State("c"), l, nil)
}

// batched returns ms with every call made in the context of one batch that
// is never saved: the store's staging of memory writes must behave as a
// memory.Store of its own.
func batched(ms memory.Store) memory.Store {
	b := &batchedStore{ms: ms, b: chatstore.NewBatch()}
	if is, ok := ms.(memory.IncrementalStore); ok {
		return &batchedIncremental{batchedStore: b, is: is}
	}
	return b
}

type batchedStore struct {
	ms memory.Store
	b  *chatstore.Batch
}

func (s *batchedStore) ctx(ctx context.Context) context.Context { return chatstore.WithBatch(ctx, s.b) }

func (s *batchedStore) Get(ctx context.Context, id string) ([]llms.MessageContent, error) {
	return s.ms.Get(s.ctx(ctx), id)
}

func (s *batchedStore) Update(ctx context.Context, id string, m []llms.MessageContent) error {
	return s.ms.Update(s.ctx(ctx), id, m)
}

func (s *batchedStore) Delete(ctx context.Context, id string) error {
	return s.ms.Delete(s.ctx(ctx), id)
}

func (s *batchedStore) IDs(ctx context.Context) ([]string, error) { return s.ms.IDs(s.ctx(ctx)) }

type batchedIncremental struct {
	*batchedStore
	is memory.IncrementalStore
}

func (s *batchedIncremental) Apply(ctx context.Context, id string, c memory.Change) error {
	return s.is.Apply(s.ctx(ctx), id, c)
}
