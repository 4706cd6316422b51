package chat

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// InMemoryConversationStore is a [chatstore.ConversationStore] that keeps
// conversations in this process: they outlive a connection and move
// between the routers of the process, not a restart. It is the reference
// implementation of the contract (versions, fenced leases, time to live,
// deletion of dropped memories) and the store of tests; use an embedded or
// shared store (runtime/boltstore, runtime/redisstore, runtime/pgstore) to
// survive restarts.
//
// It also keeps chat memories, as opaque bytes by memory id
// ([InMemoryConversationStore.GetMemory], [InMemoryConversationStore.PutMemory]):
// a memory.Store adapter over those methods (chatstoretest.InMemoryMemories)
// stages its writes in the
// request's [chatstore.Batch], so that they are committed with the conversation's
// state or not at all.
//
// It is safe for concurrent use.
type InMemoryConversationStore struct {
	ttl time.Duration
	now func() time.Time

	mu        sync.Mutex
	convs     map[string]*storedConversation
	leases    map[string]chatstore.Lease
	memories  map[string][]byte
	token     uint64    // the last fencing token granted
	lastSweep time.Time // when expired conversations were last removed
}

// storedConversation is a conversation held by the store.
type storedConversation struct {
	state   *chatstore.ConversationState // owned by the store
	expires time.Time                    // zero: never
}

// InMemoryConversationStoreOptions configures an
// [InMemoryConversationStore]. A nil *InMemoryConversationStoreOptions,
// like the zero value, gives the defaults.
type InMemoryConversationStoreOptions struct {
	// TTL is how long a conversation is kept after its last save; then it
	// expires with its chat memories. Zero or negative means never.
	TTL time.Duration
	// Now returns the current time. Nil means [time.Now]. Tests set it to
	// move a clock of their own.
	Now func() time.Time
}

var _ chatstore.ConversationStore = (*InMemoryConversationStore)(nil)

// NewInMemoryConversationStore returns an empty store. opts may be nil.
func NewInMemoryConversationStore(opts *InMemoryConversationStoreOptions) *InMemoryConversationStore {
	var o InMemoryConversationStoreOptions
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &InMemoryConversationStore{
		ttl:      o.TTL,
		now:      o.Now,
		convs:    map[string]*storedConversation{},
		leases:   map[string]chatstore.Lease{},
		memories: map[string][]byte{},
	}
}

// Load implements [chatstore.ConversationStore].
func (s *InMemoryConversationStore) Load(ctx context.Context, id string) (*chatstore.ConversationState, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.live(id, s.now())
	if c == nil {
		return nil, fmt.Errorf("chat: loading conversation %q: %w", id, chatstore.ErrConversationNotFound)
	}
	return cloneState(c.state), nil
}

// Save implements [chatstore.ConversationStore].
func (s *InMemoryConversationStore) Save(ctx context.Context, st *chatstore.ConversationState, lease chatstore.Lease, b *chatstore.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if st == nil || st.ID == "" {
		return fmt.Errorf("chat: saving a conversation without an id")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.sweep(now)
	// A lease that expired while nobody took the conversation over is
	// still the current one: its Expires is not consulted.
	if cur, ok := s.leases[st.ID]; !ok || cur.Token != lease.Token || cur.Owner != lease.Owner {
		return fmt.Errorf("chat: saving conversation %q under lease %d of %q: %w", st.ID, lease.Token, lease.Owner, chatstore.ErrLeaseLost)
	}
	c := s.live(st.ID, now)
	var version uint64
	if c != nil {
		version = c.state.Version
	}
	if c == nil && st.Version > 0 {
		return fmt.Errorf("chat: saving conversation %q from version %d: %w (%w)", st.ID, st.Version, chatstore.ErrVersionConflict, chatstore.ErrConversationNotFound)
	}
	if version != st.Version {
		return fmt.Errorf("chat: saving conversation %q from version %d, stored %d: %w", st.ID, st.Version, version, chatstore.ErrVersionConflict)
	}

	saved := cloneState(st)
	saved.Version = version + 1
	// The staged writes first, then the deletion of the memories the new
	// state dropped: a memory detached and written in the same request is
	// deleted.
	if b != nil {
		b.All(func(key string, value []byte) {
			if value == nil {
				delete(s.memories, key)
			} else {
				s.memories[key] = slices.Clone(value)
			}
		})
	}
	if c != nil {
		kept := memoryIDs(saved)
		for _, id := range memoryIDs(c.state) {
			if !slices.Contains(kept, id) {
				delete(s.memories, id)
			}
		}
	}
	sc := &storedConversation{state: saved}
	if s.ttl > 0 {
		sc.expires = now.Add(s.ttl)
	}
	s.convs[st.ID] = sc
	st.Version = saved.Version
	return nil
}

// Delete implements [chatstore.ConversationStore].
func (s *InMemoryConversationStore) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.remove(id)
	delete(s.leases, id)
	return nil
}

// Acquire implements [chatstore.ConversationStore].
func (s *InMemoryConversationStore) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (chatstore.Lease, error) {
	if err := ctx.Err(); err != nil {
		return chatstore.Lease{}, err
	}
	if owner == "" || ttl <= 0 {
		return chatstore.Lease{}, fmt.Errorf("chat: acquiring conversation %q: an owner and a positive ttl are needed", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	cur, ok := s.leases[id]
	switch {
	case ok && cur.Owner != owner && now.Before(cur.Expires):
		return chatstore.Lease{}, fmt.Errorf("chat: acquiring conversation %q: %w (until %s)", id, chatstore.ErrLeaseHeld, cur.Expires.Format(time.RFC3339))
	case ok && cur.Owner == owner:
		// A renewal keeps the token, even of a lease that expired: nobody
		// took the conversation over meanwhile, so it is still current.
		cur.Expires = now.Add(ttl)
	default:
		s.token++
		cur = chatstore.Lease{Owner: owner, Token: s.token, Expires: now.Add(ttl)}
	}
	s.leases[id] = cur
	return cur, nil
}

// Release implements [chatstore.ConversationStore].
func (s *InMemoryConversationStore) Release(ctx context.Context, id string, lease chatstore.Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.leases[id]; ok && cur.Token == lease.Token && cur.Owner == lease.Owner {
		delete(s.leases, id)
	}
	return nil
}

// GetMemory returns the bytes stored under the memory id, or nil when
// there are none. A [chatstore.Batch] in ctx is read first: its staged value (nil for
// a staged deletion) wins over the stored one.
func (s *InMemoryConversationStore) GetMemory(ctx context.Context, id string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		if v, ok := b.Get(id); ok {
			return v, nil
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(s.now())
	return slices.Clone(s.memories[id]), nil
}

// PutMemory stores value under the memory id; nil (or empty) deletes it.
// With a [chatstore.Batch] in ctx the write is staged in it, to be committed by the
// next [InMemoryConversationStore.Save] of the request; without one it is
// made at once.
func (s *InMemoryConversationStore) PutMemory(ctx context.Context, id string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("chat: writing a memory with an empty id")
	}
	if len(value) == 0 {
		value = nil
	}
	if b := chatstore.BatchFrom(ctx); b != nil {
		b.Put(id, value)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if value == nil {
		delete(s.memories, id)
	} else {
		s.memories[id] = slices.Clone(value)
	}
	return nil
}

// MemoryIDs returns the ids of the stored memories, sorted. A [chatstore.Batch] in
// ctx is read first: memories it creates are listed, those it deletes are
// not.
func (s *InMemoryConversationStore) MemoryIDs(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.sweep(s.now())
	ids := map[string]bool{}
	for id := range s.memories {
		ids[id] = true
	}
	s.mu.Unlock()
	if b := chatstore.BatchFrom(ctx); b != nil {
		b.All(func(key string, value []byte) { ids[key] = value != nil })
	}
	var out []string
	for id, ok := range ids {
		if ok {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ConversationIDs returns the ids of the stored conversations that have not
// expired, sorted.
func (s *InMemoryConversationStore) ConversationIDs(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(s.now())
	ids := slices.Collect(maps.Keys(s.convs))
	sort.Strings(ids)
	return ids, nil
}

// live returns the stored conversation id, or nil when there is none or it
// expired (it is then removed, with its memories). s.mu is held.
func (s *InMemoryConversationStore) live(id string, now time.Time) *storedConversation {
	c := s.convs[id]
	if c == nil {
		return nil
	}
	if !c.expires.IsZero() && !now.Before(c.expires) {
		s.remove(id)
		return nil
	}
	return c
}

// remove deletes the conversation id and its memories (not its lease).
// s.mu is held.
func (s *InMemoryConversationStore) remove(id string) {
	c := s.convs[id]
	if c == nil {
		return
	}
	for _, m := range memoryIDs(c.state) {
		delete(s.memories, m)
	}
	delete(s.convs, id)
}

// sweep removes the expired conversations, at most once per half time to
// live: expiry is also checked on every access, so a sweep only bounds the
// memory that conversations nobody comes back to hold. s.mu is held.
func (s *InMemoryConversationStore) sweep(now time.Time) {
	if s.ttl <= 0 || now.Sub(s.lastSweep) < s.ttl/2 {
		return
	}
	s.lastSweep = now
	for id := range s.convs {
		s.live(id, now)
	}
	// A lease that expired is kept while its conversation lives (it is
	// still current until another node takes the conversation over); the
	// lease of a conversation that is gone is dropped once it has been
	// expired for a time to live.
	for id, l := range s.leases {
		if _, ok := s.convs[id]; !ok && now.Sub(l.Expires) >= s.ttl {
			delete(s.leases, id)
		}
	}
}

// memoryIDs lists the memory ids of every scope of st.
func memoryIDs(st *chatstore.ConversationState) []string {
	var ids []string
	for _, sc := range st.Scopes {
		ids = append(ids, sc.Memories...)
	}
	return ids
}

// cloneState returns a deep copy of st.
func cloneState(st *chatstore.ConversationState) *chatstore.ConversationState {
	c := *st
	c.ResumeTokenHash = slices.Clone(st.ResumeTokenHash)
	if st.Extra != nil {
		c.Extra = make(map[string][]byte, len(st.Extra))
		for k, v := range st.Extra {
			c.Extra[k] = slices.Clone(v)
		}
	}
	if st.Scopes != nil {
		c.Scopes = make([]chatstore.ScopeState, len(st.Scopes))
		for i, sc := range st.Scopes {
			c.Scopes[i] = sc
			c.Scopes[i].Memories = slices.Clone(sc.Memories)
			if sc.Beans != nil {
				c.Scopes[i].Beans = make(map[string][]byte, len(sc.Beans))
				for k, v := range sc.Beans {
					c.Scopes[i].Beans[k] = slices.Clone(v)
				}
			}
		}
	}
	return &c
}
