package chatstoretest

import (
	"context"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/memory"
)

// MemoryBytes is a conversation store that also keeps chat memories as
// opaque bytes by memory id, staging the writes made with a request's
// context in its [chatstore.Batch]; chat.InMemoryConversationStore is one.
type MemoryBytes interface {
	// GetMemory returns the bytes stored under the memory id, or nil.
	GetMemory(ctx context.Context, id string) ([]byte, error)
	// PutMemory stores value under the memory id; nil deletes it.
	PutMemory(ctx context.Context, id string, value []byte) error
	// MemoryIDs returns the ids of the stored memories, sorted.
	MemoryIDs(ctx context.Context) ([]string, error)
}

// InMemoryMemories returns the memory.Store side of cs (a
// chat.InMemoryConversationStore, say): the chat memories cs keeps as
// opaque bytes, encoded with memory.MarshalMessages. Writes made with a
// request's context are staged in its batch and committed with the
// conversation's state, as the embedded and Redis stores do. Package chat
// cannot import package memory, so the adapter lives here, for tests of
// durable conversations.
func InMemoryMemories(cs MemoryBytes) memory.Store {
	return inMemoryMemories{cs}
}

type inMemoryMemories struct {
	cs MemoryBytes
}

// StagesInBatch implements chatstore.StagingStore.
func (inMemoryMemories) StagesInBatch() {}

func (m inMemoryMemories) Get(ctx context.Context, id string) ([]llms.MessageContent, error) {
	b, err := m.cs.GetMemory(ctx, id)
	if err != nil || b == nil {
		return nil, err
	}
	return memory.UnmarshalMessages(b)
}

func (m inMemoryMemories) Update(ctx context.Context, id string, msgs []llms.MessageContent) error {
	if len(msgs) == 0 {
		return m.cs.PutMemory(ctx, id, nil)
	}
	b, err := memory.MarshalMessages(msgs)
	if err != nil {
		return err
	}
	return m.cs.PutMemory(ctx, id, b)
}

func (m inMemoryMemories) Delete(ctx context.Context, id string) error {
	return m.cs.PutMemory(ctx, id, nil)
}

func (m inMemoryMemories) IDs(ctx context.Context) ([]string, error) { return m.cs.MemoryIDs(ctx) }
