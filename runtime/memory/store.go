package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/tmc/langchaingo/llms"
)

// A Store persists the message list of each memory id. It is the analogue
// of langchain4j's ChatMemoryStore: a [Memory] reads its list from the store
// when it is built and writes the whole new state after each change.
//
// Implementations must be safe for concurrent use and must not retain or
// hand out slices (or parts) they share with callers. Ids are non-empty
// UTF-8 strings, possibly long (chatgen's are "<scope id>#<import
// path>.<Type>.<Method>"); a store may reject the empty id. A store holds no
// empty lists: updating an id with an empty list is the same as deleting it,
// and only ids with messages are listed by IDs.
//
// [NewInMemoryStore] and [NewFileStore] are the stores of this package;
// package storetest holds a conformance suite for any other.
type Store interface {
	// Get returns the messages of id, oldest first. An unknown id has no
	// messages and is not an error.
	Get(ctx context.Context, id string) ([]llms.MessageContent, error)
	// Update replaces the messages of id with msgs, atomically: a Get
	// sees either the old list or the new one.
	Update(ctx context.Context, id string, msgs []llms.MessageContent) error
	// Delete removes id and its messages. Deleting an unknown id is not an
	// error.
	Delete(ctx context.Context, id string) error
	// IDs lists the ids that have messages, in no particular order.
	IDs(ctx context.Context) ([]string, error)
}

// An IncrementalStore is a [Store] that can also apply a [Change] to a list
// in time proportional to the change rather than to the list. Memories use
// Apply instead of Update when their store implements it, which keeps adding
// a message to a long memory cheap.
type IncrementalStore interface {
	Store
	// Apply changes the list of id (empty for an unknown id) to
	// c.Head ++ list[c.Drop:] ++ c.Tail, atomically. It fails, changing
	// nothing, when c.Drop is negative or greater than the list's length.
	// An empty result deletes id.
	Apply(ctx context.Context, id string, c Change) error
}

// A Change is an edit of a stored message list: drop messages from the
// front, put messages in front of what remains, append messages at the end.
// That is all a window memory ever does to its list: evict the oldest
// messages, rewrite the pinned system message, add the new ones.
type Change struct {
	Drop int                   // how many messages to remove from the front
	Head []llms.MessageContent // messages to put in front after dropping
	Tail []llms.MessageContent // messages to append at the end
	// Len, when positive, is the length of the list the change was made
	// against, as the memory making it knows the list: read when it was
	// loaded and kept since by its own writes. 0 means unknown. A store
	// may take Len for the list's length instead of reading it, provided
	// the change then fails, changing nothing, when the list's length is
	// another (a store that stages writes fails the commit); a store may
	// also ignore it. [Window], [TokenWindow] and [Compressing] memories
	// set it.
	Len int
}

// InMemoryStore is the default [Store]: message lists in a map, in this
// process only. It is safe for concurrent use and never aliases the slices
// callers pass or get. It is an [IncrementalStore]: Apply costs amortised
// O(size of the change), whatever the length of the list.
//
// A [Window] or [TokenWindow] memory over an InMemoryStore keeps its
// messages in the store only (it keeps their token counts), so the process
// holds one copy of each message, and its reads are reads of the store.
type InMemoryStore struct {
	mu    sync.RWMutex
	lists map[string]*deque[llms.MessageContent]
}

// NewInMemoryStore returns an empty in-memory store.
func NewInMemoryStore() *InMemoryStore {
	return &InMemoryStore{lists: make(map[string]*deque[llms.MessageContent])}
}

var _ IncrementalStore = (*InMemoryStore)(nil)

// Get implements [Store].
func (s *InMemoryStore) Get(ctx context.Context, id string) ([]llms.MessageContent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	l, ok := s.lists[id]
	if !ok {
		return nil, nil
	}
	return cloneMessages(l.live()), nil
}

// Update implements [Store].
func (s *InMemoryStore) Update(ctx context.Context, id string, msgs []llms.MessageContent) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return s.Delete(ctx, id)
	}
	l := &deque[llms.MessageContent]{items: cloneMessages(msgs)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists[id] = l
	return nil
}

// Delete implements [Store].
func (s *InMemoryStore) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.lists, id)
	return nil
}

// IDs implements [Store]. The ids are sorted.
func (s *InMemoryStore) IDs(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	ids := make([]string, 0, len(s.lists))
	for id := range s.lists {
		ids = append(ids, id)
	}
	s.mu.RUnlock()
	slices.Sort(ids)
	return ids, nil
}

// Apply implements [IncrementalStore].
func (s *InMemoryStore) Apply(ctx context.Context, id string, c Change) error {
	return s.apply(ctx, id, c, 0)
}

// apply is Apply, except that the first keep messages of the list stay
// first: c.Drop counts the messages after them, and c.Head goes in front
// of them. A window memory uses it to evict messages without rewriting its
// system message. It copies c's messages, taking their parts from one
// allocation.
func (s *InMemoryStore) apply(ctx context.Context, id string, c Change, keep int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lists[id]
	n := 0
	if l != nil {
		n = l.len()
	}
	if c.Drop < 0 || keep < 0 || keep+c.Drop > n {
		return fmt.Errorf("memory: change of %q drops %d of %d messages", id, c.Drop, n-max(keep, 0))
	}
	if n-c.Drop+len(c.Head)+len(c.Tail) == 0 {
		delete(s.lists, id)
		return nil
	}
	if l == nil {
		l = &deque[llms.MessageContent]{}
		s.lists[id] = l
	}
	l.drop(keep, c.Drop)
	cp := newCopier(c.Head, c.Tail)
	// Head goes into the dead prefix when it fits (always, when a window
	// rewrites its system message after evicting), else the list is rebuilt.
	if len(c.Head) > 0 {
		head := l.prepend(len(c.Head), len(c.Tail))
		for i := range c.Head {
			cp.copy(&head[i], &c.Head[i])
		}
	}
	l.items = cp.appendTo(l.items, c.Tail)
	l.compact()
	return nil
}

// slice returns copies of the n messages of id's list that start at index
// from. A compressing memory reads the messages it summarises with it.
func (s *InMemoryStore) slice(ctx context.Context, id string, from, n int) ([]llms.MessageContent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var live []llms.MessageContent
	if l := s.lists[id]; l != nil {
		live = l.live()
	}
	if from < 0 || n < 0 || from+n > len(live) {
		return nil, fmt.Errorf("memory: messages %d to %d of %q: the list has %d", from, from+n, id, len(live))
	}
	return cloneMessages(live[from : from+n]), nil
}
