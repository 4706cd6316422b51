package ai

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// memState is a Service's state for one memory id: the lock that
// serialises its turns, its attachment to a chat scope or invocation, and
// a generation that clears and deletion bump so that a turn running
// across one does not commit.
//
// It is the chatimpl.ScopedMemory registered with the scope.
type memState struct {
	svc  *Service
	id   string
	turn chan struct{} // capacity 1: full while a turn holds the id

	// Guarded by svc.mu.
	refs     int  // turns holding or waiting for turn
	attached bool // registered with a scope or an invocation
	deleted  bool // its scope or invocation ended

	mu  sync.Mutex // orders commits against clears and deletion
	gen uint64     // guarded by mu
}

var _ chatimpl.ScopedMemory = (*memState)(nil)

// memoryKind is where a memory id comes from.
type memoryKind uint8

const (
	memExplicit   memoryKind = iota // Request.MemoryID: the application's
	memScope                        // the current chat scope
	memInvocation                   // the current invocation
	memOwner                        // a sub-agent's MemoryOwner
)

// memoryID returns the memory id of req in ctx.
func (s *Service) memoryID(ctx context.Context, req *Request) (string, memoryKind, error) {
	if req.MemoryID != "" {
		return req.MemoryID, memExplicit, nil
	}
	if req.Method.Kind == chat.KindInvocation {
		inv, ok := chat.InvocationID(ctx)
		if !ok {
			return "", 0, fmt.Errorf("memory id of an invocation-scoped service: %w", chat.ErrNotActive)
		}
		return s.defaultID(inv, req.Method.Name), memInvocation, nil
	}
	scope, err := chat.ID(ctx)
	if err != nil {
		return "", 0, fmt.Errorf("memory id: %w", err)
	}
	return s.defaultID(scope, req.Method.Name), memScope, nil
}

// defaultID returns "<owner>#<service>.<method>".
func (s *Service) defaultID(owner, method string) string {
	var b strings.Builder
	b.Grow(len(owner) + 2 + len(s.name) + len(method))
	b.WriteString(owner)
	b.WriteByte('#')
	b.WriteString(s.name)
	if method != "" {
		b.WriteByte('.')
		b.WriteString(method)
	}
	return b.String()
}

// heldTurn is a memory id whose turn is running, in the context handed to
// its model and tool calls: a nested call on the same id is re-entrant.
type heldTurn struct {
	st   *memState
	t    *turn // the turn, for its sub-agents (see WithAgent)
	next *heldTurn
}

type heldKey struct{}

// acquire waits for the turn lock of id and returns its state, which the
// caller releases with release.
func (s *Service) acquire(ctx context.Context, id string) (*memState, error) {
	for h, _ := ctx.Value(heldKey{}).(*heldTurn); h != nil; h = h.next {
		if h.st.svc == s && h.st.id == id {
			return nil, fmt.Errorf("%w %q (a tool called the method that runs it)", ErrReentrant, id)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	st := s.ids[id]
	if st == nil || st.deleted {
		st = &memState{svc: s, id: id, turn: make(chan struct{}, 1)}
		s.ids[id] = st
	}
	st.refs++
	s.mu.Unlock()
	select {
	case st.turn <- struct{}{}:
		return st, nil
	case <-ctx.Done():
		s.unref(st)
		return nil, fmt.Errorf("waiting for the turn in progress on memory %q: %w", id, ctx.Err())
	}
}

// release ends the turn that acquired st.
func (s *Service) release(st *memState) {
	<-st.turn
	s.unref(st)
}

func (s *Service) unref(st *memState) {
	s.mu.Lock()
	st.refs--
	s.forget(st)
	s.mu.Unlock()
}

// forget drops st from the service once nothing needs it. s.mu is held.
func (s *Service) forget(st *memState) {
	if st.refs == 0 && (st.deleted || !st.attached) && s.ids[st.id] == st {
		delete(s.ids, st.id)
	}
}

// attachTo attaches st as attach does, or, for memOwner, to the owner
// of the sub-agent a.
func (s *Service) attachTo(ctx context.Context, st *memState, kind memoryKind, a *agentLink) error {
	if kind != memOwner {
		return s.attach(ctx, st, kind)
	}
	s.mu.Lock()
	done := st.attached
	s.mu.Unlock()
	if done {
		return nil
	}
	if err := a.run.Owner.AttachMemory(ctx, st.id, st); err != nil {
		return fmt.Errorf("attaching memory %q to sub-agent %q: %w", st.id, a.run.Name, err)
	}
	s.mu.Lock()
	if !st.deleted {
		st.attached = true
	}
	s.mu.Unlock()
	return nil
}

// attach registers st, once, with the chat scope or the invocation its id
// belongs to, so that wipes and the end of the scope reach its memory.
func (s *Service) attach(ctx context.Context, st *memState, kind memoryKind) error {
	if kind == memExplicit {
		return nil
	}
	s.mu.Lock()
	done := st.attached
	s.mu.Unlock()
	if done {
		return nil
	}
	switch kind {
	case memScope:
		scope, err := chat.AttachMemory(ctx, st.id, st)
		if err != nil {
			return fmt.Errorf("attaching memory %q to its scope: %w", st.id, err)
		}
		if !strings.HasPrefix(st.id, scope+"#") {
			// The current scope changed between chat.ID and AttachMemory
			// (another goroutine pushed or popped): st is attached to the
			// wrong scope, and the turn fails rather than mix them up.
			return fmt.Errorf("attaching memory %q: the current scope changed to %s: %w", st.id, scope, chat.ErrNotActive)
		}
	case memInvocation:
		if err := chat.OnInvocationEnd(ctx, st.DeleteMemory); err != nil {
			return fmt.Errorf("attaching memory %q to its invocation: %w", st.id, err)
		}
	}
	s.mu.Lock()
	if !st.deleted {
		st.attached = true
	}
	s.mu.Unlock()
	return nil
}

// generation returns the generation a turn starts from.
func (st *memState) generation() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.gen
}

// ClearMemory implements chatimpl.ScopedMemory: it empties the memory now. A
// turn running on it meanwhile commits nothing. It does not wait for that
// turn (a tool of the turn may be the caller).
func (st *memState) ClearMemory(ctx context.Context) error {
	s := st.svc
	s.mu.Lock()
	deleted := st.deleted
	s.mu.Unlock()
	if deleted {
		return nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	st.gen++
	mem, err := s.memory.Memory(ctx, st.id)
	if err != nil {
		return fmt.Errorf("ai: %s: clearing memory %q: %w", s.name, st.id, err)
	}
	if err := mem.Clear(ctx); err != nil {
		return fmt.Errorf("ai: %s: clearing memory %q: %w", s.name, st.id, err)
	}
	return nil
}

// DeleteMemory implements chatimpl.ScopedMemory: the memory's scope (or
// invocation) ended, and the provider deletes the id. A turn running on it
// meanwhile commits nothing.
func (st *memState) DeleteMemory(ctx context.Context) error {
	s := st.svc
	s.mu.Lock()
	st.deleted = true
	s.forget(st)
	s.mu.Unlock()
	s.gaps.forget(st.id)
	st.mu.Lock()
	st.gen++
	st.mu.Unlock()
	if err := s.memory.Delete(ctx, st.id); err != nil {
		return fmt.Errorf("ai: %s: deleting memory %q: %w", s.name, st.id, err)
	}
	return nil
}
