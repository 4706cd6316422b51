package memory_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
	lcmemory "github.com/tmc/langchaingo/memory"
)

// Side-by-side benchmarks of the Window policy and langchaingo's
// ConversationWindowBuffer (github.com/tmc/langchaingo/memory), the window
// memory a Go program would otherwise use. Sub-benchmarks are named
// impl=chatgen and impl=langchaingo so that one run shows the ratio:
//
//	go test ./runtime/memory -run '^$' -bench 'Window(Add|Messages)$' -benchmem -count 6 > w.txt
//	benchstat -col /impl w.txt
//
// Fairness:
//
//   - Both hold the same messages: n, the last n/2 exchanges of a human
//     message and an AI answer, no system message (langchaingo has none to
//     pin), and evict one exchange per operation in steady state.
//   - One operation is one exchange: chatgen's Add of the two messages, in
//     one call, and langchaingo's SaveContext of its input and output maps.
//     Both the message slice and the two maps are built once, outside the
//     timed loop; chatgen's texts are the same strings as langchaingo's.
//   - chatgen does more: it deep-copies what it is given and what it hands
//     out (callers cannot change the memory), keeps any message
//     (tool calls, tool results, images), pins a system message, evicts
//     orphan tool results, writes each change to a Store, and locks.
//     langchaingo stores only the human and AI text, copies nothing, and
//     its LoadMemoryVariables returns its own slice (a caller writing to it
//     changes the memory), so its read is a map and a reslice.
//   - The memory is built and filled before the timer starts.

// peerSizes are the memory sizes, in messages, of the side-by-side
// benchmarks: chatgen's default window and a long history.
var peerSizes = []int{10, 10_000}

const (
	peerQuestion = "Make the blade longer, and a little lighter please."
	peerAnswer   = "Done: the blade is 95 cm long and weighs 1.2 kg."
)

// newPeerWindow returns a Window memory over an in-memory store, holding n
// messages (n/2 exchanges), and the exchange to add.
func newPeerWindow(b *testing.B, n int) (memory.Memory, []llms.MessageContent) {
	ctx := b.Context()
	m, err := memory.Window(n, nil).New(ctx, memory.NewInMemoryStore(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	exchange := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, peerQuestion),
		llms.TextParts(llms.ChatMessageTypeAI, peerAnswer),
	}
	for range n / 2 {
		if err := m.Add(ctx, exchange...); err != nil {
			b.Fatal(err)
		}
	}
	if got, _ := m.Messages(ctx); len(got) != n {
		b.Fatalf("chatgen's window holds %d messages, want %d", len(got), n)
	}
	return m, exchange
}

// newPeerBuffer returns langchaingo's window buffer holding n messages, and
// the input and output maps of one exchange.
func newPeerBuffer(b *testing.B, n int) (*lcmemory.ConversationWindowBuffer, map[string]any, map[string]any) {
	ctx := b.Context()
	wb := lcmemory.NewConversationWindowBuffer(n/2, lcmemory.WithReturnMessages(true))
	in, out := map[string]any{"input": peerQuestion}, map[string]any{"output": peerAnswer}
	for range n / 2 {
		if err := wb.SaveContext(ctx, in, out); err != nil {
			b.Fatal(err)
		}
	}
	if got := peerBufferLen(b, wb); got != n {
		b.Fatalf("langchaingo's window buffer holds %d messages, want %d", got, n)
	}
	return wb, in, out
}

func peerBufferLen(b *testing.B, wb *lcmemory.ConversationWindowBuffer) int {
	vars, err := wb.LoadMemoryVariables(b.Context(), nil)
	if err != nil {
		b.Fatal(err)
	}
	return len(vars[wb.MemoryKey].([]llms.ChatMessage))
}

// BenchmarkWindowAdd measures adding one exchange to a full window memory.
func BenchmarkWindowAdd(b *testing.B) {
	for _, n := range peerSizes {
		b.Run(fmt.Sprintf("impl=chatgen/n=%d", n), func(b *testing.B) {
			ctx := b.Context()
			m, exchange := newPeerWindow(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if err := m.Add(ctx, exchange...); err != nil {
					b.Fatal(err)
				}
			}
			if got, _ := m.Messages(ctx); len(got) != n {
				b.Fatalf("memory holds %d messages after the run, want %d", len(got), n)
			}
		})
		b.Run(fmt.Sprintf("impl=langchaingo/n=%d", n), func(b *testing.B) {
			ctx := b.Context()
			wb, in, out := newPeerBuffer(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if err := wb.SaveContext(ctx, in, out); err != nil {
					b.Fatal(err)
				}
			}
			if got := peerBufferLen(b, wb); got != n {
				b.Fatalf("buffer holds %d messages after the run, want %d", got, n)
			}
		})
	}
}

// sinkMessages keeps the reads of BenchmarkWindowMessages alive.
var (
	sinkMessages   []llms.MessageContent
	sinkChatRecord []llms.ChatMessage
)

// BenchmarkWindowMessages measures reading a full window memory: chatgen's
// Messages (a deep copy the caller owns) and langchaingo's
// LoadMemoryVariables with WithReturnMessages (its own slice, uncopied).
func BenchmarkWindowMessages(b *testing.B) {
	for _, n := range peerSizes {
		b.Run(fmt.Sprintf("impl=chatgen/n=%d", n), func(b *testing.B) {
			ctx := b.Context()
			m, _ := newPeerWindow(b, n)
			b.ReportAllocs()
			for b.Loop() {
				msgs, err := m.Messages(ctx)
				if err != nil {
					b.Fatal(err)
				}
				sinkMessages = msgs
			}
			if len(sinkMessages) != n {
				b.Fatalf("read %d messages, want %d", len(sinkMessages), n)
			}
		})
		b.Run(fmt.Sprintf("impl=langchaingo/n=%d", n), func(b *testing.B) {
			ctx := b.Context()
			wb, _, _ := newPeerBuffer(b, n)
			b.ReportAllocs()
			for b.Loop() {
				vars, err := wb.LoadMemoryVariables(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				sinkChatRecord = vars[wb.MemoryKey].([]llms.ChatMessage)
			}
			if len(sinkChatRecord) != n {
				b.Fatalf("read %d messages, want %d", len(sinkChatRecord), n)
			}
		})
	}
}

// BenchmarkWindowHeld reports the heap a full window memory of 10,000
// messages holds, per message (heap-B/msg), beyond the texts, which both
// share with the caller: chatgen's memory and its InMemoryStore together,
// and langchaingo's buffer.
func BenchmarkWindowHeld(b *testing.B) {
	const n = 10_000
	measure := func(b *testing.B, fill func() any) {
		var held uint64
		for b.Loop() {
			before := heapAlloc()
			m := fill()
			held = heapAlloc() - before
			runtime.KeepAlive(m)
		}
		b.ReportMetric(float64(held)/n, "heap-B/msg")
	}
	b.Run("impl=chatgen", func(b *testing.B) {
		measure(b, func() any { m, _ := newPeerWindow(b, n); return m })
	})
	b.Run("impl=langchaingo", func(b *testing.B) {
		measure(b, func() any { wb, _, _ := newPeerBuffer(b, n); return wb })
	})
}

// heapAlloc returns the bytes of live heap objects after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
