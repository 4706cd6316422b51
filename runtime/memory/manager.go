package memory

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tmc/langchaingo/llms"
)

// DefaultMaxMessages is the size of the [Window] a [Manager] uses when its
// [ManagerOptions] names no policy (Quarkus LangChain4j's default as well).
const DefaultMaxMessages = 10

// ErrDeleted is returned by a memory obtained from a [Manager] after the
// Manager deleted its id: the memory can no longer be read or written, so a
// turn that finishes after its chat scope died cannot bring the id back.
var ErrDeleted = errors.New("memory: memory deleted")

// A Provider gives the memory of an id and deletes it when its chat scope
// ends. AI services get their memories from a Provider; [Manager] is the
// implementation of this package.
type Provider interface {
	// Memory returns the memory of id.
	Memory(ctx context.Context, id string) (Memory, error)
	// Delete deletes the memory of id from the provider and its store.
	Delete(ctx context.Context, id string) error
}

// ManagerOptions configures a [Manager]. The zero value (or nil) is a
// [Manager] over a new [InMemoryStore] with the default window.
type ManagerOptions struct {
	// Store persists the messages. Nil means a new [InMemoryStore].
	Store Store
	// Policy builds each id's memory. Nil means Window(DefaultMaxMessages, nil).
	Policy Policy
}

// Manager is a [Provider] that builds memories with a [Policy] over a
// [Store] and keeps one [Memory] per id, so that every caller in the
// process shares it (the consistency model of [TokenWindow]). A memory
// stays in the Manager until [Manager.Delete]; call it when the id's chat
// scope ends. A Manager is safe for concurrent use.
type Manager struct {
	store  Store
	policy Policy

	mu      sync.Mutex
	entries map[string]*entry
}

// entry is the memory of one id, being built until done is closed.
type entry struct {
	done chan struct{}
	mem  *managed // nil if building failed
	err  error
}

var _ Provider = (*Manager)(nil)

// NewManager returns a Manager configured by opts, which may be nil.
func NewManager(opts *ManagerOptions) *Manager {
	var cfg ManagerOptions
	if opts != nil {
		cfg = *opts
	}
	if cfg.Store == nil {
		cfg.Store = NewInMemoryStore()
	}
	if cfg.Policy == nil {
		cfg.Policy = Window(DefaultMaxMessages, nil)
	}
	return &Manager{store: cfg.Store, policy: cfg.Policy, entries: make(map[string]*entry)}
}

// Store returns the Manager's store.
func (m *Manager) Store() Store { return m.store }

// Memory implements [Provider]. The first call for an id builds its memory
// (reading the store); later calls return the same memory.
func (m *Manager) Memory(ctx context.Context, id string) (Memory, error) {
	if id == "" {
		return nil, fmt.Errorf("%w: empty memory id", ErrInvalid)
	}
	m.mu.Lock()
	e, ok := m.entries[id]
	if !ok {
		e = &entry{done: make(chan struct{})}
		m.entries[id] = e
	}
	m.mu.Unlock()

	if ok {
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err != nil {
			return nil, e.err
		}
		return e.mem, nil
	}

	mem, err := m.policy.New(ctx, m.store, id)
	if err != nil {
		e.err = err
	} else {
		e.mem = &managed{mem: mem}
	}
	m.mu.Lock()
	if err != nil && m.entries[id] == e {
		delete(m.entries, id) // let a later call try again
	}
	m.mu.Unlock()
	close(e.done)
	if err != nil {
		return nil, err
	}
	return e.mem, nil
}

// Delete implements [Provider]: it removes the memory of id from the Manager
// and deletes id from the store. A memory of id still held by someone
// returns [ErrDeleted] from then on; [Manager.Memory] builds a fresh one.
func (m *Manager) Delete(ctx context.Context, id string) error {
	m.mu.Lock()
	e, ok := m.entries[id]
	delete(m.entries, id)
	m.mu.Unlock()

	if ok {
		<-e.done // building reads the store only; it does not take long
		if e.mem != nil {
			return e.mem.delete(ctx, m.store)
		}
	}
	if err := m.store.Delete(ctx, id); err != nil {
		return fmt.Errorf("memory: deleting %q: %w", id, err)
	}
	return nil
}

// managed wraps a memory handed out by a Manager so that deleting it
// through the Manager is final.
type managed struct {
	mu      sync.Mutex
	mem     Memory
	deleted bool
}

// MaySummarize implements [SummarizingMemory]: the wrapped memory's.
func (g *managed) MaySummarize() bool { return MaySummarize(g.mem) }

func (g *managed) delete(ctx context.Context, s Store) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.deleted = true
	if err := s.Delete(ctx, g.mem.ID()); err != nil {
		return fmt.Errorf("memory: deleting %q: %w", g.mem.ID(), err)
	}
	return nil
}

func (g *managed) ID() string { return g.mem.ID() }

func (g *managed) Add(ctx context.Context, msgs ...llms.MessageContent) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return fmt.Errorf("memory: adding to %q: %w", g.mem.ID(), ErrDeleted)
	}
	return g.mem.Add(ctx, msgs...)
}

func (g *managed) Messages(ctx context.Context) ([]llms.MessageContent, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil, fmt.Errorf("memory: reading %q: %w", g.mem.ID(), ErrDeleted)
	}
	return g.mem.Messages(ctx)
}

func (g *managed) Clear(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return nil // already gone
	}
	return g.mem.Clear(ctx)
}
