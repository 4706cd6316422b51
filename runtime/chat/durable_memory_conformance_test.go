package chat_test

import (
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
)

// TestInMemoryConversationStore runs the conformance suite against the
// reference implementation of the contract, chat.InMemoryConversationStore,
// whose memory side is chatstoretest.InMemoryMemories.
func TestInMemoryConversationStore(t *testing.T) {
	chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store {
		return newInMemory(0)
	})
	chatstoretest.RunExpiry(t, func(t *testing.T, ttl time.Duration) chatstoretest.Store {
		return newInMemory(ttl)
	})
}

func newInMemory(ttl time.Duration) chatstoretest.Store {
	s := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{TTL: ttl})
	return chatstoretest.Store{Conversations: s, Memories: chatstoretest.InMemoryMemories(s)}
}
