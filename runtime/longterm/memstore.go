package longterm

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"
)

// MemOptions configures a [MemStore]; nil and the zero value mean the
// default caps and no retention.
type MemOptions struct {
	// Limits are the caps of the store.
	Limits Limits
	// Retention, when positive, deletes a principal's facts that long
	// after the last write to them; 0 keeps them for the life of the
	// process.
	Retention time.Duration
}

// MemStore is a [Store] in the memory of the process: the facts last as
// long as the process does (or Retention), and are lost when it exits.
// It suits tests and single-process applications that accept that; use
// a durable store (bbolt, Redis, PostgreSQL) to keep facts across
// restarts.
type MemStore struct {
	limits    Limits
	retention time.Duration

	mu         sync.Mutex
	principals map[string]*memPrincipal
}

type memPrincipal struct {
	facts   map[string]Fact
	rev     Revision
	written time.Time
}

// NewMemStore returns an empty in-memory store.
func NewMemStore(opts *MemOptions) *MemStore {
	if opts == nil {
		opts = &MemOptions{}
	}
	return &MemStore{limits: opts.Limits.WithDefaults(), retention: opts.Retention, principals: map[string]*memPrincipal{}}
}

// get returns principal's record, nil when it has none (or it expired);
// s.mu is held.
func (s *MemStore) get(principal string, now time.Time) *memPrincipal {
	p := s.principals[principal]
	if p != nil && s.retention > 0 && now.Sub(p.written) >= s.retention {
		delete(s.principals, principal)
		return nil
	}
	return p
}

// Put implements [Store.Put].
func (s *MemStore) Put(ctx context.Context, principal string, facts ...Fact) (Revision, error) {
	if err := CheckPrincipal(principal); err != nil {
		return 0, err
	}
	now := time.Now()
	facts, err := s.limits.Stamp(now, facts)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.get(principal, now)
	n := len(facts)
	if p != nil {
		n += len(p.facts)
		for _, f := range facts {
			if _, ok := p.facts[f.ID]; ok {
				return 0, ErrExists
			}
		}
	}
	if n > s.limits.MaxFacts {
		return 0, ErrTooManyFacts
	}
	if len(facts) == 0 {
		if p == nil {
			return 0, nil
		}
		return p.rev, nil
	}
	if p == nil {
		p = &memPrincipal{facts: map[string]Fact{}}
		s.principals[principal] = p
	}
	for _, f := range facts {
		p.facts[f.ID] = f
	}
	p.rev, p.written = p.rev.Next(), now
	return p.rev, nil
}

// Get implements [Store.Get].
func (s *MemStore) Get(ctx context.Context, principal, id string) (Fact, error) {
	if err := CheckPrincipal(principal); err != nil {
		return Fact{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.get(principal, time.Now()); p != nil {
		if f, ok := p.facts[id]; ok {
			return f, nil
		}
	}
	return Fact{}, ErrNotFound
}

// List implements [Store.List].
func (s *MemStore) List(ctx context.Context, principal string) ([]Fact, Revision, error) {
	if err := CheckPrincipal(principal); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.get(principal, time.Now())
	if p == nil {
		return nil, 0, nil
	}
	out := make([]Fact, 0, len(p.facts))
	for _, f := range p.facts {
		out = append(out, f)
	}
	sortFacts(out)
	return out, p.rev, nil
}

// Update implements [Store.Update].
func (s *MemStore) Update(ctx context.Context, principal string, f Fact) (Revision, error) {
	if err := CheckPrincipal(principal); err != nil {
		return 0, err
	}
	if err := s.limits.CheckFact(f); err != nil {
		return 0, err
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.get(principal, now)
	if p == nil {
		return 0, ErrNotFound
	}
	old, ok := p.facts[f.ID]
	if !ok {
		return 0, ErrNotFound
	}
	p.facts[f.ID] = Updated(old, f, now)
	p.rev, p.written = p.rev.Next(), now
	return p.rev, nil
}

// Delete implements [Store.Delete].
func (s *MemStore) Delete(ctx context.Context, principal string, ids ...string) (Revision, error) {
	if err := CheckPrincipal(principal); err != nil {
		return 0, err
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.get(principal, now)
	if p == nil {
		return 0, nil
	}
	n := len(p.facts)
	for _, id := range ids {
		delete(p.facts, id)
	}
	if len(p.facts) == n {
		return p.rev, nil
	}
	if len(p.facts) == 0 {
		delete(s.principals, principal)
		return 0, nil
	}
	p.rev, p.written = p.rev.Next(), now
	return p.rev, nil
}

// DeleteAll implements [Store.DeleteAll].
func (s *MemStore) DeleteAll(ctx context.Context, principal string) error {
	if err := CheckPrincipal(principal); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.principals, principal)
	return nil
}

// Revision implements [Store.Revision].
func (s *MemStore) Revision(ctx context.Context, principal string) (Revision, error) {
	if err := CheckPrincipal(principal); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.get(principal, time.Now()); p != nil {
		return p.rev, nil
	}
	return 0, nil
}

// Updated returns the fact an Update of old by f at now stores: f's Text
// and Source, old's Created, and f.Updated (now when zero), as the stores
// keep times.
func Updated(old, f Fact, now time.Time) Fact {
	old.Text, old.Source = f.Text, f.Source
	old.Updated = f.Updated
	if old.Updated.IsZero() {
		old.Updated = now
	}
	old.Updated = Time(old.Updated)
	return old
}

func sortFacts(facts []Fact) {
	slices.SortFunc(facts, func(a, b Fact) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}
