package redisstore_test

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
)

// turnMessages returns n messages of a typical turn, alternately the
// user's and the AI's.
func turnMessages(n int) []llms.MessageContent {
	msgs := make([]llms.MessageContent, n)
	for i := range msgs {
		if i%2 == 0 {
			msgs[i] = llms.TextParts(llms.ChatMessageTypeHuman, "Make the blade longer and give it a steel hilt, please.")
		} else {
			msgs[i] = llms.TextParts(llms.ChatMessageTypeAI, strings.Repeat("The blade is now 90 cm long, with a steel hilt. ", 6))
		}
	}
	return msgs
}

func newStore(t testing.TB, c redis.UniversalClient, ttl time.Duration) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(t, c, "chatgen-test"), TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func pair(s *redisstore.Store) chatstoretest.Store {
	return chatstoretest.Store{Conversations: s, Memories: s.Memories()}
}

func TestConformance(t *testing.T) {
	c := redistest.Client(t)
	chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store { return pair(newStore(t, c, time.Hour)) })
}

func TestConformanceNoTTL(t *testing.T) {
	c := redistest.Client(t)
	chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store { return pair(newStore(t, c, 0)) })
}

func TestExpiry(t *testing.T) {
	c := redistest.Client(t)
	chatstoretest.RunExpiry(t, func(t *testing.T, ttl time.Duration) chatstoretest.Store {
		return pair(newStore(t, c, ttl))
	})
}

// TestTTLs checks the expiry of every key of a saved conversation.
func TestTTLs(t *testing.T) {
	c := redistest.Client(t)
	ctx := t.Context()
	s := newStore(t, c, time.Hour)
	l, err := s.Acquire(ctx, "c", "node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	st := chatstoretest.State("c")
	b := chatstore.NewBatch()
	for _, sc := range st.Scopes {
		if err := s.Memories().Update(chatstore.WithBatch(ctx, b), sc.Memories[0], turnMessages(2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Save(ctx, st, l, b); err != nil {
		t.Fatal(err)
	}
	ks := redistest.Keys(t, c, s.Prefix())
	if len(ks) != 8 { // conv, mids, lease, fence, two memories and their home pointers
		t.Fatalf("keys %q, want 8", ks)
	}
	for _, k := range ks {
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		want := time.Hour
		if strings.HasSuffix(k, "}:home") {
			want = 2 * time.Hour // a home pointer outlives its conversation
		}
		if ttl <= want-10*time.Minute || ttl > want {
			t.Errorf("%s expires in %v, want about %v", k, ttl, want)
		}
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if ks := redistest.Keys(t, c, s.Prefix()); len(ks) != 0 {
		t.Fatalf("keys after Delete: %q", ks)
	}
}

// TestRoundTripsPerTurn counts the round trips of turns as the runtime
// makes them: a memory that gets the user's message and the AI's answer
// (and, once full, evicts the oldest messages), staged in the request's
// batch, then the save.
func TestRoundTripsPerTurn(t *testing.T) {
	c := redistest.Client(t)
	var cnt redistest.RoundTrips
	c.AddHook(&cnt)
	requireTurnRoundTrips(t, newStore(t, c, time.Hour), &cnt)
}

// TestOneSlotPerConversation shows the keys of a conversation and its
// memories in one hash slot, which a save needs on a Redis Cluster, and
// the keys of different conversations in different slots.
func TestOneSlotPerConversation(t *testing.T) {
	c := redistest.Client(t)
	ctx := t.Context()
	s := newStore(t, c, time.Hour)
	slots := map[string]map[int]bool{}
	for _, id := range []string{"c", "d", "odd {x} }%7D"} {
		l, err := s.Acquire(ctx, id, "node", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		st := chatstoretest.State(id)
		b := chatstore.NewBatch()
		for _, sc := range st.Scopes {
			if err := s.Memories().Update(chatstore.WithBatch(ctx, b), sc.Memories[0], turnMessages(2)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Save(ctx, st, l, b); err != nil {
			t.Fatal(err)
		}
		slots[id] = map[int]bool{}
		for _, k := range redistest.Keys(t, c, s.Prefix()) {
			if strings.HasSuffix(k, "}:home") {
				continue // a memory's home pointer is in the memory's slot
			}
			// (TestCluster checks KeySlot against Redis Cluster's.)
			slots[id][redistest.KeySlot(k)] = true
		}
		if err := s.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
		if len(slots[id]) != 1 {
			t.Fatalf("the keys of conversation %q are in %d slots, want 1", id, len(slots[id]))
		}
	}
	if maps.Equal(slots["c"], slots["d"]) {
		t.Fatalf("conversations c and d share their slot %v", slots["c"])
	}
	if _, err := redisstore.New(c, &redisstore.Options{Prefix: "{chatgen}:"}); err == nil {
		t.Fatal("New accepted a prefix with a hash tag")
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := redisstore.New(nil, nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, ttl := range []time.Duration{-time.Second, time.Microsecond} {
		if _, err := redisstore.New(c, &redisstore.Options{TTL: ttl}); err == nil {
			t.Errorf("New with TTL %v succeeded", ttl)
		}
	}
}

// TestUnreachable shows the errors of a store whose Redis is not there:
// each names the operation and wraps the network error.
func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	s, err := redisstore.New(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var opErr *net.OpError
	_, err = s.Load(ctx, "c")
	if !errors.As(err, &opErr) || !strings.Contains(err.Error(), `redisstore: loading conversation "c"`) {
		t.Errorf("Load: %v", err)
	}
	if errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Errorf("Load of an unreachable store reports the conversation not found: %v", err)
	}
	err = s.Save(ctx, chatstoretest.State("c"), chatstore.Lease{Owner: "n", Token: 1}, nil)
	if !errors.As(err, &opErr) || !strings.Contains(err.Error(), `redisstore: saving conversation "c"`) {
		t.Errorf("Save: %v", err)
	}
	if _, err := s.Acquire(ctx, "c", "n", time.Second); !errors.As(err, &opErr) {
		t.Errorf("Acquire: %v", err)
	}
	if _, err := s.Memories().Get(ctx, "m"); !errors.As(err, &opErr) {
		t.Errorf("memory Get: %v", err)
	}
}

// TestForeignMemory shows a save refused, writing nothing, when it lists a
// memory of another conversation: the two are in different hash slots.
func TestForeignMemory(t *testing.T) {
	c := redistest.Client(t)
	ctx := t.Context()
	s := newStore(t, c, time.Hour)
	for i, id := range []string{"c", "d"} {
		l, err := s.Acquire(ctx, id, "node", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		st := &chatstore.ConversationState{ID: id, Scopes: []chatstore.ScopeState{{ID: id, Memories: []string{"shared"}}}}
		b := chatstore.NewBatch()
		if err := s.Memories().Update(chatstore.WithBatch(ctx, b), "shared", turnMessages(1+i)); err != nil {
			t.Fatal(err)
		}
		err = s.Save(ctx, st, l, b)
		if i == 0 {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if !errors.Is(err, redisstore.ErrForeignMemory) || !strings.Contains(err.Error(), `"c"`) {
			t.Fatalf("a save listing conversation c's memory = %v, want ErrForeignMemory naming c", err)
		}
		if _, err := s.Load(ctx, id); !errors.Is(err, chatstore.ErrConversationNotFound) {
			t.Fatalf("Load after the refused save: %v, want not found", err)
		}
		if m, err := s.Memories().Get(ctx, "shared"); err != nil || len(m) != 1 {
			t.Fatalf("the memory after the refused save: %d messages, %v; want conversation c's one", len(m), err)
		}
	}

	// A memory that conversation c wrote without listing it keeps its
	// pointer to c when c is deleted: the pointer is stale, and another
	// conversation may take the memory.
	l, err := s.Acquire(ctx, "c2", "node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b := chatstore.NewBatch()
	if err := s.Memories().Update(chatstore.WithBatch(ctx, b), "unlisted", turnMessages(1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, &chatstore.ConversationState{ID: "c2"}, l, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "c2"); err != nil {
		t.Fatal(err)
	}
	l, err = s.Acquire(ctx, "d2", "node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	b = chatstore.NewBatch()
	if err := s.Memories().Update(chatstore.WithBatch(ctx, b), "unlisted", turnMessages(3)); err != nil {
		t.Fatal(err)
	}
	st := &chatstore.ConversationState{ID: "d2", Scopes: []chatstore.ScopeState{{ID: "d2", Memories: []string{"unlisted"}}}}
	if err := s.Save(ctx, st, l, b); err != nil {
		t.Fatalf("a save taking a memory of a deleted conversation: %v", err)
	}
	if m, err := s.Memories().Get(ctx, "unlisted"); err != nil || len(m) != 3 {
		t.Fatalf("the memory taken over: %d messages, %v; want 3", len(m), err)
	}
}

// TestWaitReplicasUnmet saves with WaitReplicas 1 to a Redis that has no
// replica: the save is applied, but its caller is told that no replica has
// it, and a Load tells that it happened.
func TestWaitReplicasUnmet(t *testing.T) {
	c := redistest.Client(t)
	ctx := t.Context()
	s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(t, c, "chatgen-test"),
		WaitReplicas: 1, WaitTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.Acquire(ctx, "c", "node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	st := chatstoretest.State("c")
	err = s.Save(ctx, st, l, nil)
	if !errors.Is(err, redisstore.ErrNotReplicated) || !strings.Contains(err.Error(), "0 of 1 replicas") {
		t.Fatalf("Save without a replica = %v, want ErrNotReplicated", err)
	}
	if st.Version != 0 {
		t.Fatalf("a save that returned an error set Version to %d", st.Version)
	}
	got, err := s.Load(ctx, "c")
	if err != nil || got.Version != 1 {
		t.Fatalf("Load after the unreplicated save: %+v, %v; want version 1", got, err)
	}
	for _, bad := range []redisstore.Options{{WaitReplicas: -1}, {WaitTimeout: -time.Second}} {
		if _, err := redisstore.New(c, &bad); err == nil {
			t.Errorf("New(%+v) succeeded", bad)
		}
	}
}

// TestMemoryRoundTrips counts the round trips of calls on memories outside
// a request: one per call for a memory of no conversation; for a memory of
// a conversation, one more on the first call of a process (a new Store),
// which learns where the memory lives.
func TestMemoryRoundTrips(t *testing.T) {
	c := redistest.Client(t)
	var cnt redistest.RoundTrips
	c.AddHook(&cnt)
	ctx := t.Context()
	s := newStore(t, c, time.Hour)
	ms := s.Memories()
	count := func(what string, want int64, call func() error) {
		t.Helper()
		before := cnt.N()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := cnt.N() - before; n != want {
			t.Errorf("%s: %d round trips, want %d", what, n, want)
		}
	}
	// Load the scripts.
	if err := ms.Update(ctx, "warm", turnMessages(2)); err != nil {
		t.Fatal(err)
	}
	if err := ms.Apply(ctx, "warm", memory.Change{Drop: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.Get(ctx, "warm"); err != nil {
		t.Fatal(err)
	}
	count("Update of a memory of no conversation", 1, func() error { return ms.Update(ctx, "solo", turnMessages(2)) })
	count("Apply", 1, func() error { return ms.Apply(ctx, "solo", memory.Change{Drop: 1, Tail: turnMessages(1)}) })
	count("Get", 1, func() error {
		m, err := ms.Get(ctx, "solo")
		if err == nil && len(m) != 2 {
			err = fmt.Errorf("%d messages, want 2", len(m))
		}
		return err
	})
	count("Delete", 1, func() error { return ms.Delete(ctx, "solo") })

	l, err := s.Acquire(ctx, "c", "node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	st := &chatstore.ConversationState{ID: "c", Scopes: []chatstore.ScopeState{{ID: "c", Memories: []string{"c#m"}}}}
	b := chatstore.NewBatch()
	if err := ms.Update(chatstore.WithBatch(ctx, b), "c#m", turnMessages(2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, st, l, b); err != nil {
		t.Fatal(err)
	}
	count("Get of a memory of a conversation, in the process that saved it", 1, func() error { _, err := ms.Get(ctx, "c#m"); return err })
	other, err := redisstore.New(c, &redisstore.Options{Prefix: s.Prefix(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	count("Get in another process, first", 2, func() error { _, err := other.Memories().Get(ctx, "c#m"); return err })
	count("Get in another process, then", 1, func() error {
		m, err := other.Memories().Get(ctx, "c#m")
		if err == nil && len(m) != 2 {
			err = fmt.Errorf("%d messages, want 2", len(m))
		}
		return err
	})
	count("Apply in another process", 1, func() error {
		return other.Memories().Apply(ctx, "c#m", memory.Change{Tail: turnMessages(1)})
	})
}

// TestAddChecksLength stages a change that only adds messages to a memory,
// made against the length the memory knew (memory.Change.Len): a save
// finding the list of another length (written meanwhile outside the
// request, or, on a Redis Cluster, not where the conversation's state is)
// fails with ErrVersionConflict, writing nothing, as a change that drops
// messages does; one finding the length commits.
func TestAddChecksLength(t *testing.T) {
	c := redistest.Client(t)
	ctx := t.Context()
	s := newStore(t, c, time.Hour)
	l, err := s.Acquire(ctx, "c", "node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	st := &chatstore.ConversationState{ID: "c", Scopes: []chatstore.ScopeState{{ID: "c", Memories: []string{"m"}}}}
	if err := s.Save(ctx, st, l, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Memories().Update(ctx, "m", turnMessages(3)); err != nil {
		t.Fatal(err)
	}
	add := func(seen int) error {
		b := chatstore.NewBatch()
		if err := s.Memories().Apply(chatstore.WithBatch(ctx, b), "m", memory.Change{Tail: turnMessages(1), Len: seen}); err != nil {
			return err
		}
		return s.Save(ctx, st, l, b)
	}
	if err := add(2); !errors.Is(err, chatstore.ErrVersionConflict) {
		t.Fatalf("a save adding to a list of 3 messages, staged against 2: %v, want ErrVersionConflict", err)
	}
	if m, err := s.Memories().Get(ctx, "m"); err != nil || len(m) != 3 {
		t.Fatalf("the memory after the refused save: %d messages, %v; want 3", len(m), err)
	}
	if got, err := s.Load(ctx, "c"); err != nil || got.Version != 1 {
		t.Fatalf("the conversation after the refused save: %+v, %v; want version 1", got, err)
	}
	if err := add(3); err != nil {
		t.Fatalf("a save adding to a list of 3 messages, staged against 3: %v", err)
	}
	if m, err := s.Memories().Get(ctx, "m"); err != nil || len(m) != 4 {
		t.Fatalf("the memory after the save: %d messages, %v; want 4", len(m), err)
	}
}

// TestDropUnseenMemory saves, in one process, a state that drops a memory
// another process's save listed: the save deletes its list, though the
// process never saw the state that listed it (the script, which must be
// given every key it touches, names it, and runs again with it).
func TestDropUnseenMemory(t *testing.T) {
	c := redistest.Client(t)
	ctx := t.Context()
	a := newStore(t, c, time.Hour)
	b, err := redisstore.New(c, &redisstore.Options{Prefix: a.Prefix(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l, err := a.Acquire(ctx, "c", "node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	st := &chatstore.ConversationState{ID: "c", Scopes: []chatstore.ScopeState{{ID: "c", Memories: []string{"m1", "m2", "m3"}}}}
	batch := chatstore.NewBatch()
	for _, m := range st.Scopes[0].Memories {
		if err := a.Memories().Update(chatstore.WithBatch(ctx, batch), m, turnMessages(2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Save(ctx, st, l, batch); err != nil {
		t.Fatal(err)
	}
	st.Scopes[0].Memories = []string{"m1"}
	if err := b.Save(ctx, st, l, nil); err != nil {
		t.Fatalf("a save dropping memories another process listed: %v", err)
	}
	for _, m := range []string{"m2", "m3"} {
		if got, err := b.Memories().Get(ctx, m); err != nil || len(got) != 0 {
			t.Fatalf("dropped memory %s: %d messages, %v", m, len(got), err)
		}
	}
	if got, err := b.Memories().Get(ctx, "m1"); err != nil || len(got) != 2 {
		t.Fatalf("memory m1: %d messages, %v", len(got), err)
	}
	for _, k := range redistest.Keys(t, c, a.Prefix()) {
		if strings.Contains(k, ":mem:m2") || strings.Contains(k, ":mem:m3") {
			t.Errorf("key %s is left", k)
		}
	}
	// The other way round, and a delete of what the process did not see.
	st.Scopes[0].Memories = []string{"m1", "m4"}
	batch = chatstore.NewBatch()
	if err := b.Memories().Update(chatstore.WithBatch(ctx, batch), "m4", turnMessages(1)); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(ctx, st, l, batch); err != nil {
		t.Fatal(err)
	}
	fresh, err := redisstore.New(c, &redisstore.Options{Prefix: a.Prefix(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	for _, k := range redistest.Keys(t, c, a.Prefix()) {
		if !strings.HasSuffix(k, "}:home") {
			t.Errorf("key %s is left after Delete", k)
		}
	}
}
