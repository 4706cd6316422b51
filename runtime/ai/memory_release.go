package ai

import (
	"context"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/memory"
)

var _ chatimpl.ReleasableMemory = (*memState)(nil)

// ReleaseMemory implements chatimpl.ReleasableMemory: the memory's scope left
// the process without ending (its durable conversation was detached, taken
// over by another node, or rolled back to its saved state). The service
// forgets the id, and so does its provider when it is a
// [memory.Forgetter]; the store keeps the messages, which the next turn on
// the id reads again. A turn running on it meanwhile commits nothing.
func (st *memState) ReleaseMemory(ctx context.Context) error {
	s := st.svc
	s.mu.Lock()
	st.deleted = true
	s.forget(st)
	s.mu.Unlock()
	s.gaps.forget(st.id)
	st.mu.Lock()
	st.gen++
	st.mu.Unlock()
	if f, ok := s.memory.(memory.Forgetter); ok {
		f.Forget(st.id)
	}
	return nil
}
