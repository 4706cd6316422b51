package chatstoretest

import (
	"context"
	"fmt"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/memory/storetest"
	"github.com/tmc/langchaingo/llms"
)

// testEvictingMemories plays turns (text, tool calls, one turn bigger than
// the window) through the memories of package memory over the store's
// memory side, as durable turns do: each turn's writes staged in a batch
// and committed by the save. The memories evict or summarise whole turns
// on most saves; after each one the store must hold exactly what each
// memory holds, starting (after the system message and a summary) with a
// user message, and memories made anew over the store (a restart, or the
// conversation moving to another node) must find the same lists.
func testEvictingMemories(t *testing.T, x Store) {
	s, ms := x.Conversations, x.Memories
	ctx := t.Context()
	st, l := create(t, s, "evicting")
	summarizer := memory.SummarizerFunc(func(_ context.Context, req memory.SummaryRequest) (string, error) {
		return fmt.Sprintf("%d messages after %d bytes of summary", len(req.Messages), len(req.Previous)), nil
	})
	policies := map[string]memory.Policy{
		"evicting#example.com/app.Assistant.Window":      memory.Window(9, nil),
		"evicting#example.com/app.Assistant.TokenWindow": memory.TokenWindow(160, nil, &memory.WindowOptions{EvictTo: 90}),
		"evicting#example.com/app.Assistant.Compressing": memory.Compressing(200, summarizer, &memory.CompressOptions{TriggerTokens: 150, KeepTokens: 60}),
	}
	mems := map[string]memory.Memory{}
	open := func() {
		t.Helper()
		for id, p := range policies {
			m, err := p.New(ctx, ms, id)
			if err != nil {
				t.Fatalf("memory %q: %v", id, err)
			}
			mems[id] = m
		}
	}
	open()
	for id := range policies {
		st.Scopes[0].Memories = append(st.Scopes[0].Memories, id)
	}
	for i := range 30 {
		b := chatstore.NewBatch()
		bctx := chatstore.WithBatch(ctx, b)
		turn := storetest.EvictingTurn(i, 15)
		if i == 0 {
			turn = append([]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "You build weapons.")}, turn...)
		}
		for id, m := range mems {
			if err := m.Add(bctx, turn...); err != nil {
				t.Fatalf("turn %d: memory %q: %v", i, id, err)
			}
		}
		save(t, s, st, l, b)
		held := map[string][]llms.MessageContent{}
		for id, m := range mems {
			msgs, err := m.Messages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			held[id] = msgs
			requireMem(t, fmt.Sprintf("turn %d, after the save", i), ctx, ms, id, msgs)
			if len(msgs) > 1 && msgs[1].Role != llms.ChatMessageTypeHuman {
				t.Fatalf("turn %d: memory %q starts with a %s message", i, id, msgs[1].Role)
			}
		}
		if i%7 == 6 {
			open()
			for id, m := range mems {
				msgs, err := m.Messages(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(msgs) != len(held[id]) {
					t.Fatalf("turn %d: memory %q made anew holds %d messages, want %d", i, id, len(msgs), len(held[id]))
				}
				requireMem(t, fmt.Sprintf("turn %d, the memory made anew", i), ctx, ms, id, msgs)
			}
		}
	}
}
