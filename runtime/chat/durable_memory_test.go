package chat_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// fakeClock is a clock tests move by hand: expiry is tested without
// waiting.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func mustAcquire(t *testing.T, s chatstore.ConversationStore, id, owner string) chatstore.Lease {
	t.Helper()
	l, err := s.Acquire(bg, id, owner, time.Minute)
	if err != nil {
		t.Fatalf("Acquire(%s, %s): %v", id, owner, err)
	}
	return l
}

func TestInMemoryStoreVersions(t *testing.T) {
	s := chat.NewInMemoryConversationStore(nil)
	if _, err := s.Load(bg, "c1"); !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("Load of an unknown conversation: %v, want ErrConversationNotFound", err)
	}
	l := mustAcquire(t, s, "c1", "a")
	st := &chatstore.ConversationState{ID: "c1", Principal: "ann", Scopes: []chatstore.ScopeState{{ID: "c1", Route: "top"}}}
	if err := s.Save(bg, st, l, nil); err != nil {
		t.Fatal(err)
	}
	if st.Version != 1 {
		t.Fatalf("version after the first save: %d, want 1", st.Version)
	}
	// A second "first save" (version 0) conflicts: the conversation exists.
	if err := s.Save(bg, &chatstore.ConversationState{ID: "c1"}, l, nil); !errors.Is(err, chatstore.ErrVersionConflict) {
		t.Fatalf("saving version 0 over version 1: %v, want ErrVersionConflict", err)
	}
	got, err := s.Load(bg, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || got.Principal != "ann" || got.Scopes[0].Route != "top" {
		t.Fatalf("loaded %+v", got)
	}
	// Two writers from version 1: the second fails and writes nothing.
	a, b := *got, *got
	a.Scopes = []chatstore.ScopeState{{ID: "c1", Route: "a"}}
	b.Scopes = []chatstore.ScopeState{{ID: "c1", Route: "b"}}
	if err := s.Save(bg, &a, l, nil); err != nil {
		t.Fatal(err)
	}
	batch := chatstore.NewBatch()
	batch.Put("c1#m", []byte("lost"))
	if err := s.Save(bg, &b, l, batch); !errors.Is(err, chatstore.ErrVersionConflict) {
		t.Fatalf("stale save: %v, want ErrVersionConflict", err)
	}
	if b.Version != 1 {
		t.Fatalf("a failed save changed the caller's version to %d", b.Version)
	}
	got, _ = s.Load(bg, "c1")
	if got.Version != 2 || got.Scopes[0].Route != "a" {
		t.Fatalf("after the conflict: version %d route %q, want 2 a", got.Version, got.Scopes[0].Route)
	}
	if v, _ := s.GetMemory(bg, "c1#m"); v != nil {
		t.Fatalf("the batch of a failed save was committed: %q", v)
	}
}

func TestInMemoryStoreIsolatesValues(t *testing.T) {
	s := chat.NewInMemoryConversationStore(nil)
	l := mustAcquire(t, s, "c", "a")
	st := &chatstore.ConversationState{
		ID: "c", ResumeTokenHash: []byte{1, 2},
		Scopes: []chatstore.ScopeState{{ID: "c", Beans: map[string][]byte{"b": []byte(`{"n":1}`)}, Memories: []string{"c#m"}}},
		Extra:  map[string][]byte{"ws": []byte("x")},
	}
	if err := s.Save(bg, st, l, nil); err != nil {
		t.Fatal(err)
	}
	st.ResumeTokenHash[0] = 9
	st.Scopes[0].Beans["b"][0] = '!'
	st.Scopes[0].Memories[0] = "other"
	st.Extra["ws"][0] = 'y'
	got, _ := s.Load(bg, "c")
	if got.ResumeTokenHash[0] != 1 || string(got.Scopes[0].Beans["b"]) != `{"n":1}` || got.Scopes[0].Memories[0] != "c#m" || string(got.Extra["ws"]) != "x" {
		t.Fatalf("the store shares the caller's slices or maps: %+v", got)
	}
	got.Scopes[0].Beans["b"][0] = '?'
	again, _ := s.Load(bg, "c")
	if string(again.Scopes[0].Beans["b"]) != `{"n":1}` {
		t.Fatal("the store hands out its own maps")
	}
}

func TestInMemoryStoreLeases(t *testing.T) {
	clock := newFakeClock()
	s := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{Now: clock.Now})
	la, err := s.Acquire(bg, "c", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if la.Token == 0 || la.Owner != "a" {
		t.Fatalf("lease %+v", la)
	}
	if _, err := s.Acquire(bg, "c", "b", time.Minute); !errors.Is(err, chatstore.ErrLeaseHeld) {
		t.Fatalf("Acquire while another node holds the lease: %v, want ErrLeaseHeld", err)
	}
	clock.Advance(30 * time.Second)
	renewed, err := s.Acquire(bg, "c", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if renewed.Token != la.Token || !renewed.Expires.After(la.Expires) {
		t.Fatalf("renewal %+v of %+v: same token, later expiry wanted", renewed, la)
	}
	st := &chatstore.ConversationState{ID: "c"}
	if err := s.Save(bg, st, renewed, nil); err != nil {
		t.Fatal(err)
	}

	// The lease ends: b takes over with a greater token, and a's late
	// write is rejected.
	clock.Advance(2 * time.Minute)
	lb, err := s.Acquire(bg, "c", "b", time.Minute)
	if err != nil {
		t.Fatalf("takeover after expiry: %v", err)
	}
	if lb.Token <= la.Token {
		t.Fatalf("takeover token %d is not greater than %d", lb.Token, la.Token)
	}
	late := &chatstore.ConversationState{ID: "c", Version: 1}
	if err := s.Save(bg, late, renewed, nil); !errors.Is(err, chatstore.ErrLeaseLost) {
		t.Fatalf("save under a lost lease: %v, want ErrLeaseLost", err)
	}
	// Releasing the lost lease does nothing; b's release lets a in at once.
	if err := s.Release(bg, "c", renewed); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Acquire(bg, "c", "a", time.Minute); !errors.Is(err, chatstore.ErrLeaseHeld) {
		t.Fatalf("a stale release freed b's lease: %v", err)
	}
	if err := s.Release(bg, "c", lb); err != nil {
		t.Fatal(err)
	}
	la2, err := s.Acquire(bg, "c", "a", time.Minute)
	if err != nil {
		t.Fatalf("Acquire after release: %v", err)
	}
	if la2.Token <= lb.Token {
		t.Fatalf("token %d after release is not greater than %d", la2.Token, lb.Token)
	}
	// A lease that expired while nobody took the conversation over is
	// still current: a save under it succeeds, and its owner renews it
	// with the same token.
	clock.Advance(2 * time.Minute)
	st.Version = 1
	if err := s.Save(bg, st, la2, nil); err != nil {
		t.Fatalf("save under an expired lease nobody took over: %v", err)
	}
	la3, err := s.Acquire(bg, "c", "a", time.Minute)
	if err != nil || la3.Token != la2.Token {
		t.Fatalf("renewal of an expired lease nobody took over = %+v, %v; want token %d", la3, err, la2.Token)
	}
	// Once another node took it over, the expired lease is lost.
	clock.Advance(2 * time.Minute)
	if _, err := s.Acquire(bg, "c", "b", time.Minute); err != nil {
		t.Fatalf("takeover after expiry: %v", err)
	}
	if err := s.Save(bg, st, la3, nil); !errors.Is(err, chatstore.ErrLeaseLost) {
		t.Fatalf("save under a lease taken over: %v, want ErrLeaseLost", err)
	}
}

func TestInMemoryStoreMemories(t *testing.T) {
	s := chat.NewInMemoryConversationStore(nil)
	l := mustAcquire(t, s, "c", "a")
	b := chatstore.NewBatch()
	ctx := chatstore.WithBatch(bg, b)
	if err := s.PutMemory(ctx, "c#top", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutMemory(ctx, "n#nested", []byte("2")); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.GetMemory(ctx, "c#top"); string(v) != "1" {
		t.Fatalf("a read in the batch's context does not see its write: %q", v)
	}
	if v, _ := s.GetMemory(bg, "c#top"); v != nil {
		t.Fatalf("a staged write is visible before the save: %q", v)
	}
	st := &chatstore.ConversationState{ID: "c", Scopes: []chatstore.ScopeState{
		{ID: "c", Memories: []string{"c#top"}},
		{ID: "n", Memories: []string{"n#nested"}},
	}}
	if err := s.Save(bg, st, l, b); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.MemoryIDs(bg); !slices.Equal(ids, []string{"c#top", "n#nested"}) {
		t.Fatalf("memories after the save: %q", ids)
	}
	// The nested scope ends: the save that drops its memory id deletes it.
	st.Scopes = st.Scopes[:1]
	if err := s.Save(bg, st, l, nil); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.MemoryIDs(bg); !slices.Equal(ids, []string{"c#top"}) {
		t.Fatalf("memories after dropping n#nested: %q", ids)
	}
	// A staged deletion (a wipe) is committed with the save.
	b = chatstore.NewBatch()
	if err := s.PutMemory(chatstore.WithBatch(bg, b), "c#top", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(bg, st, l, b); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.MemoryIDs(bg); len(ids) != 0 {
		t.Fatalf("memories after the wipe: %q", ids)
	}
	// Delete takes the conversation, its memories and its lease.
	if err := s.PutMemory(bg, "c#top", []byte("3")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(bg, "c"); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.MemoryIDs(bg); len(ids) != 0 {
		t.Fatalf("memories after Delete: %q", ids)
	}
	if _, err := s.Load(bg, "c"); !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("Load after Delete: %v", err)
	}
	if _, err := s.Acquire(bg, "c", "b", time.Minute); err != nil {
		t.Fatalf("the lease outlived Delete: %v", err)
	}
	if err := s.Delete(bg, "never"); err != nil {
		t.Fatalf("deleting an unknown conversation: %v", err)
	}
}

func TestInMemoryStoreTTL(t *testing.T) {
	clock := newFakeClock()
	s := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{TTL: time.Hour, Now: clock.Now})
	l, _ := s.Acquire(bg, "c", "a", 3*time.Hour)
	b := chatstore.NewBatch()
	b.Put("c#m", []byte("hi"))
	st := &chatstore.ConversationState{ID: "c", Scopes: []chatstore.ScopeState{{ID: "c", Memories: []string{"c#m"}}}}
	if err := s.Save(bg, st, l, b); err != nil {
		t.Fatal(err)
	}
	clock.Advance(59 * time.Minute)
	if err := s.Save(bg, st, l, nil); err != nil { // a save restarts the time to live
		t.Fatal(err)
	}
	clock.Advance(59 * time.Minute)
	if _, err := s.Load(bg, "c"); err != nil {
		t.Fatalf("Load within the time to live of the last save: %v", err)
	}
	clock.Advance(2 * time.Minute)
	if _, err := s.Load(bg, "c"); !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("Load after the time to live: %v, want ErrConversationNotFound", err)
	}
	if ids, _ := s.MemoryIDs(bg); len(ids) != 0 {
		t.Fatalf("the memories of an expired conversation stay: %q", ids)
	}
	if err := s.Save(bg, st, l, nil); !errors.Is(err, chatstore.ErrVersionConflict) {
		t.Fatalf("saving an expired conversation: %v, want ErrVersionConflict", err)
	}
}

func TestInMemoryStoreSweepsUntouchedConversations(t *testing.T) {
	clock := newFakeClock()
	s := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{TTL: time.Hour, Now: clock.Now})
	for _, id := range []string{"old1", "old2"} {
		l, _ := s.Acquire(bg, id, "a", time.Minute)
		if err := s.Save(bg, &chatstore.ConversationState{ID: id}, l, nil); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Hour)
	l, _ := s.Acquire(bg, "new", "a", time.Minute)
	if err := s.Save(bg, &chatstore.ConversationState{ID: "new"}, l, nil); err != nil {
		t.Fatal(err)
	}
	if ids, _ := s.ConversationIDs(bg); !slices.Equal(ids, []string{"new"}) {
		t.Fatalf("conversations after the sweep: %q", ids)
	}
}

func TestInMemoryStoreHonoursContext(t *testing.T) {
	s := chat.NewInMemoryConversationStore(nil)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	if _, err := s.Acquire(ctx, "c", "a", time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled context: %v", err)
	}
	if err := s.Save(ctx, &chatstore.ConversationState{ID: "c"}, chatstore.Lease{}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Save with a cancelled context: %v", err)
	}
}
