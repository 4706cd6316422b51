package conversationtest_test

import (
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chat/conversationtest"
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
	return conversationtest.Store{Conversations: s, Memories: conversationtest.InMemoryMemories(s)}
}
