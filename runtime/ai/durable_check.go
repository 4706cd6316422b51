package ai

import (
	"fmt"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// CheckStore reports whether the service's chat memories would be saved
// with the durable conversations of a router over store: an error matching
// [chat.ErrMemoryNotDurable] when its memory provider keeps them in a
// memory.Store that is not a conversation store's memory side (a
// [chatstore.StagingStore]) — the default in-process one, say —, so that after
// a restart the model would have forgotten every conversation. Services
// whose methods all use invocation memories (which never outlive a
// request) pass, as do memory providers other than a *memory.Manager,
// which the application answers for. [Register] registers it with
// [chatimpl.Package.AddStoreCheck].
//
// A tool source of the service with a CheckStore method of its own (a
// [ResultOffloader] of package runtime/offload has one) is checked too.
func (s *Service) CheckStore(store chatstore.ConversationStore) error {
	if store == nil {
		return nil
	}
	for _, src := range s.sources {
		if c, ok := src.(interface {
			CheckStore(chatstore.ConversationStore) error
		}); ok {
			if err := c.CheckStore(store); err != nil {
				return fmt.Errorf("ai: %s: %s: %w", s.name, src.Name(), err)
			}
		}
	}
	if !s.keepsChatMemory() || s.memoryKeptInStore() {
		return nil
	}
	return fmt.Errorf("ai: %s: %w: its memory is kept in %T; set the Memory of its ai.Config to memory.NewManager(&memory.ManagerOptions{Store: store.Memories(), …}) over the router's store",
		s.name, chat.ErrMemoryNotDurable, s.memory.(*memory.Manager).Store())
}

// keepsChatMemory reports whether a method of the service keeps a memory
// in a chat scope (one declared without methods might).
func (s *Service) keepsChatMemory() bool {
	if len(s.methods) == 0 {
		return true
	}
	for _, m := range s.methods {
		if m.Kind != chat.KindInvocation {
			return true
		}
	}
	return false
}

// memoryKeptInStore reports whether the service's memories are kept in a
// conversation store's memory side; true when it cannot tell (a provider
// of the application's own).
func (s *Service) memoryKeptInStore() bool {
	mgr, ok := s.memory.(*memory.Manager)
	if !ok {
		return true
	}
	_, ok = mgr.Store().(chatstore.StagingStore)
	return ok
}

// KeptInStore implements [chatimpl.DurableMemory]: a memory of a durable
// conversation that is not kept in its store is not attached to its scope,
// and the turn fails.
func (st *memState) KeptInStore() bool { return st.svc.memoryKeptInStore() }

var _ chatimpl.DurableMemory = (*memState)(nil)
