package chat

import (
	"errors"
	"fmt"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// A durable conversation's chat memories must live in its
// chatstore.ConversationStore, so that they are saved with its state: a memory kept
// in the process would be gone after a restart or a move to another node,
// while the conversation, resumed, goes on as if the model remembered it.
// This file makes that mistake loud: a router refuses to start when a
// package's store check fails (chatimpl.Package.AddStoreCheck), and a
// memory that says it is not kept in the store cannot be attached to a
// scope of a durable conversation.

// ErrMemoryNotDurable reports a chat memory of a durable conversation that
// is not kept in the router's [chatstore.ConversationStore]: after a restart the
// model would have forgotten the conversation. Configure the memory with
// the store's memory side (memory.NewManager(&memory.ManagerOptions{Store:
// store.Memories(), …}) as the Memory of the AI service's ai.Config).
var ErrMemoryNotDurable = errors.New("chat: the chat memory of a durable conversation is not kept in its conversation store")

// checkStore runs the store checks of p.
func checkStore(p *chatimpl.Package, store chatstore.ConversationStore) error {
	var errs []error
	for _, check := range p.StoreChecks() {
		if err := check(store); err != nil {
			errs = append(errs, fmt.Errorf("chat: %s: %w", p.Path(), err))
		}
	}
	return errors.Join(errs...)
}

// notDurable returns the error of attaching mem, under key, to a scope of
// stack st, or nil: in a durable conversation, a memory that says it is
// not kept in the store is refused.
func (st *scopeStack) notDurable(key string, mem chatimpl.ScopedMemory) error {
	if st.router == nil || st.router.store == nil {
		return nil
	}
	if dm, ok := mem.(chatimpl.DurableMemory); ok && !dm.KeptInStore() {
		return fmt.Errorf("memory %q: %w: give the AI service's ai.Config a Memory over the store's memory side (memory.NewManager(&memory.ManagerOptions{Store: store.Memories(), …}))", key, ErrMemoryNotDurable)
	}
	return nil
}
