package boltstore_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// exchange returns a user message and an AI answer of typical sizes.
func exchange() []llms.MessageContent {
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "Make the blade longer and give it a steel hilt, please."),
		llms.TextParts(llms.ChatMessageTypeAI, strings.Repeat("The blade is now 90 cm long, with a steel hilt. ", 6)),
	}
}

// BenchmarkSaveTurn saves a typical turn: a state of two scopes with
// beans, and one memory of 20 messages (full: each turn evicts two) that
// gets the turn's two messages through the request's batch. Each save is a
// transaction synced to the disk of the temporary directory.
func BenchmarkSaveTurn(b *testing.B) {
	ctx := b.Context()
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "chat.db"), &boltstore.Options{TTL: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	st := chatstoretest.State("c")
	mw, err := memory.Window(20).New(ctx, s.Memories(), st.Scopes[1].Memories[0])
	if err != nil {
		b.Fatal(err)
	}
	turn := func() {
		batch := chatstore.NewBatch()
		if err := mw.Add(chatstore.WithBatch(ctx, batch), exchange()...); err != nil {
			b.Fatal(err)
		}
		if err := s.Save(ctx, st, l, batch); err != nil {
			b.Fatal(err)
		}
	}
	for range 10 { // fill the window
		turn()
	}
	b.ReportAllocs()
	for b.Loop() {
		turn()
	}
}

// BenchmarkLoad loads the state BenchmarkSaveTurn saves.
func BenchmarkLoad(b *testing.B) {
	ctx := b.Context()
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "chat.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Save(ctx, chatstoretest.State("c"), l, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Load(ctx, "c"); err != nil {
			b.Fatal(err)
		}
	}
}
