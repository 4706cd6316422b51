package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// storedMemory stands for a chat memory of a scope restored from a store,
// until its owner (an AI service) attaches it again. It clears and deletes
// the memory in the store: a wipe stages the deletion in the request's
// [chatstore.Batch]; the end of its scope needs nothing, as the save (or the
// deletion) of the conversation that no longer lists the id deletes it.
type storedMemory struct{ id string }

// ClearMemory implements [chatimpl.ScopedMemory].
func (m storedMemory) ClearMemory(ctx context.Context) error {
	if b := chatstore.BatchFrom(ctx); b != nil {
		b.Put(m.id, nil)
	}
	return nil
}

// DeleteMemory implements [chatimpl.ScopedMemory].
func (m storedMemory) DeleteMemory(ctx context.Context) error { return m.ClearMemory(ctx) }

// restore rebuilds the scopes of states (top scope first) as the scope
// stack of st, whose current scope must be nil, and reports them Resumed,
// then the current one Activated. It returns the current scope.
func (st *scopeStack) restore(ctx context.Context, states []chatstore.ScopeState) *scope {
	var s *scope
	wipes := false
	for i, ss := range states {
		s = &scope{stack: st, parent: s, id: ss.ID, depth: i, route: ss.Route, wipe: ss.Wipe}
		if len(ss.Beans) > 0 {
			s.pending = maps.Clone(ss.Beans)
		}
		for _, id := range ss.Memories {
			s.memories = append(s.memories, memoryEntry{key: id, mem: storedMemory{id: id}})
		}
		wipes = wipes || ss.Wipe
	}
	st.mu.Lock()
	st.current.Store(s)
	if wipes {
		st.wipes.Store(true)
	}
	st.mu.Unlock()
	var chain []*scope
	for p := s; p != nil; p = p.parent {
		chain = append(chain, p)
	}
	for _, p := range slices.Backward(chain) {
		st.notify(ctx, ScopeResumed, p)
	}
	if s != nil {
		st.notify(ctx, ScopeActivated, s)
	}
	return s
}

// detach drops every scope of st from the process without ending them:
// their beans are detached (DetachableBean; never closed: their scopes go
// on elsewhere, or here from the saved state) and their memories released
// (not deleted). The scopes are reported Deactivated (the current one),
// then Detached, innermost first. It does nothing when st has no current
// scope.
func (st *scopeStack) detach(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	st.mu.Lock()
	top := st.current.Load()
	if top == nil {
		st.mu.Unlock()
		return nil
	}
	for s := top; s != nil; s = s.parent {
		s.ended = true
	}
	st.current.Store(nil)
	st.wipes.Store(false)
	st.mu.Unlock()

	st.notify(ctx, ScopeDeactivated, top)
	var errs []error
	for s := top; s != nil; s = s.parent {
		errs = append(errs, s.release(ctx))
		st.notify(ctx, ScopeDetached, s)
	}
	return errors.Join(errs...)
}

// release detaches the beans of a detached scope, newest first, and
// releases its memories.
func (s *scope) release(ctx context.Context) error {
	s.stack.mu.Lock()
	beans := s.beans.Swap(nil)
	memories := s.memories
	s.memories = nil
	s.pending = nil
	s.stack.mu.Unlock()

	var errs []error
	if beans != nil {
		errs = append(errs, detachBeans(ctx, *beans))
	}
	for _, m := range slices.Backward(memories) {
		rm, ok := m.mem.(chatimpl.ReleasableMemory)
		if !ok {
			continue
		}
		errs = append(errs, callCleanup(ctx, func(ctx context.Context) error {
			if err := rm.ReleaseMemory(ctx); err != nil {
				return fmt.Errorf("releasing memory %s: %w", m.key, err)
			}
			return nil
		}))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("chat: detaching scope %s: %w", s.id, err)
	}
	return nil
}

// snapshot returns the saved form of the scopes of st, top scope first:
// nil when the conversation ended.
func (st *scopeStack) snapshot() ([]chatstore.ScopeState, error) {
	type durableBean struct {
		name  string
		value any
		scope int
	}
	var out []chatstore.ScopeState
	var beans []durableBean
	st.mu.Lock()
	for s := st.current.Load(); s != nil; s = s.parent {
		ss := chatstore.ScopeState{ID: s.id, Route: s.route, Wipe: s.wipe}
		for _, m := range s.memories {
			ss.Memories = append(ss.Memories, m.key)
		}
		if len(s.pending) > 0 {
			ss.Beans = maps.Clone(s.pending)
		}
		if p := s.beans.Load(); p != nil {
			for _, e := range *p {
				if e.info.durable {
					beans = append(beans, durableBean{name: e.info.name, value: e.value, scope: len(out)})
				}
			}
		}
		out = append(out, ss)
	}
	st.mu.Unlock()
	// Encode outside the lock: a MarshalJSON method may use the scope.
	for _, b := range beans {
		raw, err := json.Marshal(b.value)
		if err != nil {
			return nil, &BeanError{Bean: b.name, Err: fmt.Errorf("saving its state: %w", err)}
		}
		ss := &out[b.scope]
		if ss.Beans == nil {
			ss.Beans = make(map[string][]byte)
		}
		ss.Beans[b.name] = raw
	}
	slices.Reverse(out)
	return out, nil
}
