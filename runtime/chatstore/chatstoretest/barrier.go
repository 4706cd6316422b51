package chatstoretest

import (
	"context"
	"sync"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// A Barrier is a [chatstore.ConversationStore] that holds back the Loads it is
// armed for until all of them have loaded, so that racing operations (two
// resumes of one conversation with the same token, say) all pass the
// checks they make on what they loaded before any goes on: the race
// happens every time, not on some schedules only.
type Barrier struct {
	chatstore.ConversationStore
	mu   sync.Mutex
	n    int
	open chan struct{}
}

// NewBarrier returns a Barrier over store, not armed.
func NewBarrier(store chatstore.ConversationStore) *Barrier {
	return &Barrier{ConversationStore: store}
}

// Arm holds back the next n Loads until the n-th has loaded.
func (b *Barrier) Arm(n int) {
	b.mu.Lock()
	b.n, b.open = n, make(chan struct{})
	b.mu.Unlock()
}

// Load loads from the store and, when armed, waits for the other armed
// Loads (or for ctx to end).
func (b *Barrier) Load(ctx context.Context, id string) (*chatstore.ConversationState, error) {
	st, err := b.ConversationStore.Load(ctx, id)
	b.mu.Lock()
	open := b.open
	if b.n > 0 {
		if b.n--; b.n == 0 {
			close(b.open)
		}
	}
	b.mu.Unlock()
	if open != nil {
		select {
		case <-open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return st, err
}
