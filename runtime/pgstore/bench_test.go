package pgstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/tmc/langchaingo/llms"
)

// turnMessages returns n messages of a typical turn, alternately the
// user's and the AI's.
func turnMessages(n int) []llms.MessageContent {
	msgs := make([]llms.MessageContent, n)
	for i := range msgs {
		if i%2 == 0 {
			msgs[i] = llms.TextParts(llms.ChatMessageTypeHuman, "Make the blade longer and give it a steel hilt, please.")
		} else {
			msgs[i] = llms.TextParts(llms.ChatMessageTypeAI, strings.Repeat("The blade is now 90 cm long, with a steel hilt. ", 6))
		}
	}
	return msgs
}

// BenchmarkSaveTurn saves a typical turn, as the other stores' benchmarks
// of the same name: a state of two scopes with beans, and one memory of 20
// messages (full: each turn evicts two) that gets the turn's two messages
// through the request's batch. It reports the round trips per turn.
func BenchmarkSaveTurn(b *testing.B) {
	var rt pgtest.RoundTrips
	ctx := b.Context()
	s := migrated(b, pgtest.Pool(b, &rt), &pgstore.Options{TTL: time.Hour})
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	st := chatstoretest.State("c")
	mw, err := memory.Window(20, nil).New(ctx, s.Memories(), st.Scopes[1].Memories[0])
	if err != nil {
		b.Fatal(err)
	}
	turn := func() {
		batch := chatstore.NewBatch()
		if err := mw.Add(chatstore.WithBatch(ctx, batch), turnMessages(2)...); err != nil {
			b.Fatal(err)
		}
		if err := s.Save(ctx, st, l, batch); err != nil {
			b.Fatal(err)
		}
	}
	for range 10 { // fill the window
		turn()
	}
	start := rt.N()
	b.ReportAllocs()
	for b.Loop() {
		turn()
	}
	b.ReportMetric(float64(rt.N()-start)/float64(b.N), "roundtrips/op")
}

// BenchmarkSaveTurnNoEviction saves turns that only add to the memory (a
// memory that is not full): no read before the save.
func BenchmarkSaveTurnNoEviction(b *testing.B) {
	var rt pgtest.RoundTrips
	ctx := b.Context()
	s := migrated(b, pgtest.Pool(b, &rt), &pgstore.Options{TTL: time.Hour})
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	st := chatstoretest.State("c")
	mid := st.Scopes[1].Memories[0]
	turn := func() {
		batch := chatstore.NewBatch()
		if err := s.Memories().Apply(chatstore.WithBatch(ctx, batch), mid, memory.Change{Tail: turnMessages(2)}); err != nil {
			b.Fatal(err)
		}
		if err := s.Save(ctx, st, l, batch); err != nil {
			b.Fatal(err)
		}
	}
	turn() // prepare the statements
	start := rt.N()
	b.ReportAllocs()
	for b.Loop() {
		turn()
	}
	b.ReportMetric(float64(rt.N()-start)/float64(b.N), "roundtrips/op")
}

// BenchmarkLoad loads the state BenchmarkSaveTurn saves.
func BenchmarkLoad(b *testing.B) {
	var rt pgtest.RoundTrips
	ctx := b.Context()
	s := migrated(b, pgtest.Pool(b, &rt), nil)
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Save(ctx, chatstoretest.State("c"), l, nil); err != nil {
		b.Fatal(err)
	}
	start := rt.N()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Load(ctx, "c"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rt.N()-start)/float64(b.N), "roundtrips/op")
}
