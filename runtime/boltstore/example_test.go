package boltstore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// A turn as the runtime saves it: the memory writes of the request go to
// its batch, and the save commits them with the conversation's state.
func Example() {
	dir, err := os.MkdirTemp("", "chat")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := boltstore.Open(filepath.Join(dir, "chat.db"), &boltstore.Options{TTL: 24 * time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()

	lease, err := store.Acquire(ctx, "conv-1", "node-1", 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	st := &chatstore.ConversationState{ID: "conv-1", Scopes: []chatstore.ScopeState{
		{ID: "conv-1", Route: "example.com/app.Menu", Memories: []string{"conv-1#example.com/app.Assistant.Chat"}},
	}}
	batch := chatstore.NewBatch()
	mem, err := memory.Window(20, nil).New(ctx, store.Memories(), "conv-1#example.com/app.Assistant.Chat")
	if err != nil {
		log.Fatal(err)
	}
	if err := mem.Add(chatstore.WithBatch(ctx, batch), llms.TextParts(llms.ChatMessageTypeHuman, "hello")); err != nil {
		log.Fatal(err)
	}
	if err := store.Save(ctx, st, lease, batch); err != nil {
		log.Fatal(err)
	}

	loaded, err := store.Load(ctx, "conv-1")
	if err != nil {
		log.Fatal(err)
	}
	msgs, err := store.Memories().Get(ctx, "conv-1#example.com/app.Assistant.Chat")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(loaded.Version, loaded.Scopes[0].Route, len(msgs))
	// Output: 1 example.com/app.Menu 1
}
