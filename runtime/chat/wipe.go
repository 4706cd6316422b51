package chat

import (
	"context"
	"errors"
	"fmt"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

type memoryEntry struct {
	key string
	mem chatimpl.ScopedMemory
}

// AttachMemory registers mem, under key, with the current scope (once:
// later calls with the same key keep the first memory). The scope clears it
// on [ClearMemory] and scheduled wipes, and deletes it when the scope is
// destroyed, after its beans. It returns the scope id.
//
// In a durable conversation key is the memory id in the
// [chatstore.ConversationStore], saved with the scope: after a resume the scope
// clears and deletes it through the store until the memory is attached
// again, and mem's ReleaseMemory method, when it has one (see
// [chatimpl.ReleasableMemory]), is called when the scope leaves the process without
// ending. In a durable conversation, a [chatimpl.DurableMemory] that is not kept
// in the store is refused with an error matching [ErrMemoryNotDurable].
func AttachMemory(ctx context.Context, key string, mem chatimpl.ScopedMemory) (string, error) {
	st, s, err := lockCurrent(ctx, "attach memory")
	if err != nil {
		return "", err
	}
	defer st.mu.Unlock()
	if err := st.notDurable(key, mem); err != nil {
		return "", err
	}
	for i, m := range s.memories {
		if m.key == key {
			if _, ok := m.mem.(storedMemory); ok {
				// A memory of a scope restored from a store, in use again:
				// its owner takes over the wipes and the deletion.
				s.memories[i].mem = mem
			}
			return s.id, nil
		}
	}
	s.memories = append(s.memories, memoryEntry{key: key, mem: mem})
	return s.id, nil
}

// ClearMemory clears, now, the chat memory registered with the current
// scope. Without an active scope it does nothing.
func ClearMemory(ctx context.Context) error {
	s := currentScope(ctx)
	if s == nil {
		return nil
	}
	return s.clearMemory(ctx)
}

func (s *scope) clearMemory(ctx context.Context) error {
	s.stack.mu.Lock()
	memories := append([]memoryEntry(nil), s.memories...)
	s.stack.mu.Unlock()
	var errs []error
	for _, m := range memories {
		errs = append(errs, callCleanup(ctx, func(ctx context.Context) error {
			if err := m.mem.ClearMemory(ctx); err != nil {
				return fmt.Errorf("clearing memory %s: %w", m.key, err)
			}
			return nil
		}))
	}
	return errors.Join(errs...)
}

// ScheduleWipe schedules the chat memory of the current scope to be cleared
// when the request ends (on success or failure). It does nothing once
// [AbortWipe] was called in the request.
func ScheduleWipe(ctx context.Context) error {
	st, s, err := lockCurrent(ctx, "schedule wipe")
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if rs := requestFrom(ctx); rs != nil && rs.aborted {
		return nil
	}
	s.wipe = true
	st.wipes.Store(true)
	return nil
}

// AbortWipe cancels the wipes scheduled in the conversation and blocks
// further scheduling for the rest of the request.
func AbortWipe(ctx context.Context) error {
	st, s, err := lockCurrent(ctx, "abort wipe")
	if err != nil {
		return err
	}
	defer st.mu.Unlock()
	if rs := requestFrom(ctx); rs != nil {
		rs.aborted = true
	}
	for ; s != nil; s = s.parent {
		s.wipe = false
	}
	return nil
}

// WipeScheduled reports whether a wipe of the current scope's memory is
// scheduled and not aborted.
func WipeScheduled(ctx context.Context) bool {
	st, s, err := lockCurrent(ctx, "wipe scheduled")
	if err != nil {
		return false
	}
	defer st.mu.Unlock()
	if rs := requestFrom(ctx); rs != nil && rs.aborted {
		return false
	}
	return s.wipe
}

// runWipes clears, at the end of a request, the memory of the current
// scope and of every parent that scheduled a wipe, then resets the flags.
func (r *Router) runWipes(ctx context.Context, rs *requestState) {
	st := rs.conv.stack
	if !st.wipes.Load() {
		return // nothing was scheduled: most requests
	}
	st.mu.Lock()
	var due []*scope
	for s := st.current.Load(); s != nil; s = s.parent {
		if s.wipe && !rs.aborted {
			due = append(due, s)
		}
		s.wipe = false
	}
	st.wipes.Store(false)
	st.mu.Unlock()
	for _, s := range due {
		if err := s.clearMemory(ctx); err != nil {
			r.logger.ErrorContext(ctx, "chat: scheduled memory wipe", "scope", s.id, "err", err)
		}
	}
}
