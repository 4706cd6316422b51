package memory_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// BenchmarkCompressingAdd measures Add on a compressing memory in steady
// state, with a summarizer that costs nothing (the model's time is not the
// memory's): the memory holds between n/2 and n messages and summarises
// the oldest half every n/2 Adds, so the figure is the amortised cost of an
// Add, compressions included, to set beside BenchmarkTokenWindowAdd.
func BenchmarkCompressingAdd(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := b.Context()
			sys := llms.TextParts(llms.ChatMessageTypeSystem, "You build weapons.")
			msg := llms.TextParts(llms.ChatMessageTypeHuman, "Make the blade longer, and a little lighter please.")
			sum := memory.SummarizerFunc(func(context.Context, memory.SummaryRequest) (string, error) {
				return "The user wants a longer, lighter blade.", nil
			})
			trigger := memory.EstimateTokens(sys) + n*memory.EstimateTokens(msg)
			p := memory.Compressing(2*trigger, sum, &memory.CompressOptions{
				TriggerTokens: trigger,
				KeepTokens:    trigger / 2,
				Logger:        slog.New(slog.DiscardHandler),
			})
			m, err := p.New(ctx, memory.NewInMemoryStore(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			if err := m.Add(ctx, sys); err != nil {
				b.Fatal(err)
			}
			for range n {
				if err := m.Add(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
			before := p.Stats()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := m.Add(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			after := p.Stats()
			if after.Dropped != 0 || after.Failures != 0 {
				b.Fatalf("stats %+v", after)
			}
			if adds := after.Adds - before.Adds; adds >= int64(n) {
				b.ReportMetric(float64(after.Compressions-before.Compressions)/float64(adds), "compressions/add")
			}
		})
	}
}
