package boltstore_test

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
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
// transaction synced to the disk of the temporary directory. One writer,
// with group commit (the default) and without: a lone writer's latency.
func BenchmarkSaveTurn(b *testing.B) {
	for _, noGroup := range []bool{false, true} {
		b.Run(fmt.Sprint("NoGroupCommit=", noGroup), func(b *testing.B) { benchSaveTurn(b, noGroup) })
	}
}

func benchSaveTurn(b *testing.B, noGroup bool) {
	s := openBench(b, noGroup)
	turn, err := saver(b.Context(), s, "c")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := turn(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkConcurrentSaves is BenchmarkSaveTurn's save made by 1,000
// writers at once, each saving its own conversation, with group commit
// and without: the store's own ceiling, without the rest of a turn
// (internal/durable's BenchmarkConcurrentTurns has the whole turn).
// ns/op is the wall time per save of all writers together.
func BenchmarkConcurrentSaves(b *testing.B) {
	for _, noGroup := range []bool{false, true} {
		b.Run(fmt.Sprint("NoGroupCommit=", noGroup), func(b *testing.B) {
			s := openBench(b, noGroup)
			const writers = 1000
			savers := make(chan func() error, writers)
			var wg sync.WaitGroup
			for i := range writers {
				wg.Go(func() {
					turn, err := saver(b.Context(), s, fmt.Sprint("c", i))
					if err != nil {
						b.Error(err)
						return
					}
					savers <- turn
				})
			}
			wg.Wait()
			if b.Failed() {
				return
			}
			b.SetParallelism(writers / runtime.GOMAXPROCS(0)) // at most one writer per saver
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				turn := <-savers
				for pb.Next() {
					if err := turn(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

func openBench(b *testing.B, noGroup bool) *boltstore.Store {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "chat.db"), &boltstore.Options{TTL: time.Hour, NoGroupCommit: noGroup})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// saver takes the lease of a new conversation id with a full window memory
// and returns a function that saves one turn of it.
func saver(ctx context.Context, s *boltstore.Store, id string) (func() error, error) {
	l, err := s.Acquire(ctx, id, "node", time.Hour)
	if err != nil {
		return nil, err
	}
	st := chatstoretest.State(id)
	mw, err := memory.Window(20, nil).New(ctx, s.Memories(), st.Scopes[1].Memories[0])
	if err != nil {
		return nil, err
	}
	turn := func() error {
		batch := chatstore.NewBatch()
		if err := mw.Add(chatstore.WithBatch(ctx, batch), exchange()...); err != nil {
			return err
		}
		return s.Save(ctx, st, l, batch)
	}
	// Fill the window: from now on, each turn evicts two messages.
	fill := chatstore.NewBatch()
	if err := mw.Add(chatstore.WithBatch(ctx, fill), slices.Repeat(exchange(), 10)...); err != nil {
		return nil, err
	}
	if err := s.Save(ctx, st, l, fill); err != nil {
		return nil, err
	}
	return turn, nil
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
