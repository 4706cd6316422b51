package redisstore_test

import (
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chat/conversationtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// BenchmarkSaveTurn saves a typical turn, as the bolt store's benchmark
// of the same name: a state of two scopes with beans, and one memory of 20
// messages (full: each turn evicts two) that gets the turn's two messages
// through the request's batch. It reports the round trips per turn.
func BenchmarkSaveTurn(b *testing.B) {
	c := redistest.Client(b)
	var cnt redistest.RoundTrips
	c.AddHook(&cnt)
	ctx := b.Context()
	s := newStore(b, c, time.Hour)
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	st := conversationtest.State("c")
	mw, err := memory.Window(20).New(ctx, s.Memories(), st.Scopes[1].Memories[0])
	if err != nil {
		b.Fatal(err)
	}
	turn := func() {
		batch := chat.NewBatch()
		if err := mw.Add(chat.WithBatch(ctx, batch), turnMessages(2)...); err != nil {
			b.Fatal(err)
		}
		if err := s.Save(ctx, st, l, batch); err != nil {
			b.Fatal(err)
		}
	}
	for range 10 { // fill the window
		turn()
	}
	start := cnt.N()
	b.ReportAllocs()
	for b.Loop() {
		turn()
	}
	b.ReportMetric(float64(cnt.N()-start)/float64(b.N), "roundtrips/op")
}

// BenchmarkLoad loads the state BenchmarkSaveTurn saves.
func BenchmarkLoad(b *testing.B) {
	c := redistest.Client(b)
	ctx := b.Context()
	s := newStore(b, c, time.Hour)
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Save(ctx, conversationtest.State("c"), l, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Load(ctx, "c"); err != nil {
			b.Fatal(err)
		}
	}
}
