package redisstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
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

// BenchmarkTurns saves turns of many conversations at once, each of its
// goroutines (16 per GOMAXPROCS) a conversation of its own as in
// BenchmarkSaveTurn: durable turns per second on one Redis and on a Redis
// Cluster of three masters (with a replica each, and with WaitReplicas 1)
// started by the benchmark, all on this machine.
func BenchmarkTurns(b *testing.B) {
	b.Run("Redis", func(b *testing.B) {
		c := redistest.Client(b)
		benchmarkTurns(b, newStore(b, c, time.Hour))
	})
	if testing.Short() {
		return
	}
	cl := redistest.StartCluster(b, 3, 1)
	cc := cl.Client(b)
	for _, wait := range []int{0, 1} {
		b.Run(fmt.Sprintf("Cluster/WaitReplicas=%d", wait), func(b *testing.B) {
			s, err := redisstore.New(cc, &redisstore.Options{Prefix: redistest.Prefix(b, cc, "chatgen-bench"), TTL: time.Hour, WaitReplicas: wait})
			if err != nil {
				b.Fatal(err)
			}
			benchmarkTurns(b, s)
		})
	}
}

func benchmarkTurns(b *testing.B, s *redisstore.Store) {
	ctx := b.Context()
	var next atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		id := fmt.Sprint("conv-", next.Add(1))
		l, err := s.Acquire(ctx, id, "node", time.Hour)
		if err != nil {
			b.Error(err)
			return
		}
		st := chatstoretest.State(id)
		mw, err := memory.Window(20, nil).New(ctx, s.Memories(), st.Scopes[1].Memories[0])
		if err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			batch := chatstore.NewBatch()
			if err := mw.Add(chatstore.WithBatch(ctx, batch), turnMessages(2)...); err != nil {
				b.Error(err)
				return
			}
			if err := s.Save(ctx, st, l, batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "turns/s")
}
