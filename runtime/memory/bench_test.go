package memory_test

import (
	"fmt"
	"testing"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// benchSizes are the history lengths the Add benchmarks run at: the cost of
// an Add must not depend on them.
var benchSizes = []int{100, 10_000}

// benchAdd measures Add on a memory that holds a system message and n other
// messages and stays in steady state: every Add evicts the oldest message.
func benchAdd(b *testing.B, policy func(n int, msg llms.MessageContent) memory.Policy) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ctx := b.Context()
			msg := llms.TextParts(llms.ChatMessageTypeHuman, "Make the blade longer, and a little lighter please.")
			m, err := policy(n, msg).New(ctx, memory.NewInMemoryStore(), "bench")
			if err != nil {
				b.Fatal(err)
			}
			if err := m.Add(ctx, llms.TextParts(llms.ChatMessageTypeSystem, "You build weapons.")); err != nil {
				b.Fatal(err)
			}
			for range n {
				if err := m.Add(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
			if got, _ := m.Messages(ctx); len(got) != n+1 {
				b.Fatalf("memory holds %d messages, want %d", len(got), n+1)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := m.Add(ctx, msg); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if got, _ := m.Messages(ctx); len(got) != n+1 {
				b.Fatalf("memory holds %d messages after the run, want %d", len(got), n+1)
			}
		})
	}
}

func BenchmarkTokenWindowAdd(b *testing.B) {
	benchAdd(b, func(n int, msg llms.MessageContent) memory.Policy {
		sys := llms.TextParts(llms.ChatMessageTypeSystem, "You build weapons.")
		return memory.TokenWindow(memory.EstimateTokens(sys)+n*memory.EstimateTokens(msg), nil, nil)
	})
}
