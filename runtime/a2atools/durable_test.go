package a2atools_test

import (
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
)

// The remote context of a durable conversation is kept in the store: the
// conversation resumed on another node continues the same remote context
// (and a pending input-required question); a conversation that ends
// forgets it.
func TestDurableContext(t *testing.T) {
	for _, ag := range agents {
		t.Run(ag.name, func(t *testing.T) {
			leaktest.Check(t)
			u := ag.start(t)
			store := chat.NewInMemoryConversationStore(nil)
			mems := chatstoretest.InMemoryMemories(store)
			nodeA := newApp(t, store, mems, connect(t, u, nil))
			localA := chat.NewLocalClient(nodeA.router)
			t.Cleanup(func() { localA.Close() })
			c := &conn{}
			var err error
			if c.sess, err = record(t, c, localA.Builder()).Connect(t.Context(), ""); err != nil {
				t.Fatal(err)
			}
			if got := c.chat(t, "ask Smith: hello"); !strings.HasSuffix(got, "message 1 of this context: hello") {
				t.Fatalf("on node a: %q", got)
			}
			if got := c.chat(t, "ask Smith: ask me"); !strings.Contains(got, "Which metal?") {
				t.Fatalf("the question on node a: %q", got)
			}
			if err := localA.Detach(); err != nil {
				t.Fatal(err)
			}

			nodeB := newApp(t, store, mems, connect(t, u, nil))
			localB := chat.NewLocalClient(nodeB.router)
			t.Cleanup(func() { localB.Close() })
			c2 := &conn{}
			if c2.sess, err = record(t, c2, localB.Builder()).Resume(t.Context(), c.sess.ConversationID(), c.sess.ResumeToken()); err != nil {
				t.Fatal(err)
			}
			if got := c2.chat(t, "ask Smith: steel"); got != "Smith said: forging steel" {
				t.Fatalf("the answer on node b: %q", got)
			}
			if got := c2.chat(t, "ask Smith: again"); !strings.HasSuffix(got, "message 4 of this context: again") {
				t.Fatalf("on node b: %q", got)
			}
			if err := c2.sess.Close(); err != nil {
				t.Fatal(err)
			}
			c3 := &conn{}
			if c3.sess, err = record(t, c3, localB.Builder()).Connect(t.Context(), ""); err != nil {
				t.Fatal(err)
			}
			if got := c3.chat(t, "ask Smith: anew"); !strings.HasSuffix(got, "message 1 of this context: anew") {
				t.Fatalf("a new conversation: %q", got)
			}
		})
	}
}
