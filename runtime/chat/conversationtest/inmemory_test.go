package conversationtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chat/conversationtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// TestInMemoryConversationStore runs the conformance suite against the
// reference implementation of the contract, chat.InMemoryConversationStore,
// whose memory side is inMemoryMemories below.
func TestInMemoryConversationStore(t *testing.T) {
	conversationtest.Run(t, func(t *testing.T) conversationtest.Store {
		return newInMemory(0)
	})
	conversationtest.RunExpiry(t, func(t *testing.T, ttl time.Duration) conversationtest.Store {
		return newInMemory(ttl)
	})
}

func newInMemory(ttl time.Duration) conversationtest.Store {
	s := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{TTL: ttl})
	return conversationtest.Store{Conversations: s, Memories: inMemoryMemories{s}}
}

// inMemoryMemories is the memory.Store of the chat memories an
// InMemoryConversationStore keeps as opaque bytes: it encodes them with
// memory.MarshalMessages. Package chat cannot import package memory, so
// the adapter lives with its users (this test, package ai's tests).
type inMemoryMemories struct {
	cs *chat.InMemoryConversationStore
}

var _ memory.Store = inMemoryMemories{}

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
