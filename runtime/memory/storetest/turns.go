package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// testEvictingMemories plays turns of several sizes (text turns, tool
// turns, a turn bigger than the window) through the memories of package
// memory over s, each evicting (or summarising) whole turns on most Adds:
// after every Add the store must hold exactly what the memory holds, the
// list must start (after the system message and the summary) with a user
// message, and a memory made anew over the store must find the same list.
func testEvictingMemories(t *testing.T, s memory.Store) {
	c := t.Context()
	summarizer := memory.SummarizerFunc(func(_ context.Context, req memory.SummaryRequest) (string, error) {
		return fmt.Sprintf("%d messages after %d bytes of summary", len(req.Messages), len(req.Previous)), nil
	})
	for _, pc := range []struct {
		name   string
		policy memory.Policy
	}{
		{"Window", memory.Window(9, nil)},
		{"TokenWindow", memory.TokenWindow(160, nil, nil)},
		{"TokenWindowEvictTo", memory.TokenWindow(160, nil, &memory.WindowOptions{EvictTo: 90})},
		{"Compressing", memory.Compressing(200, summarizer, &memory.CompressOptions{TriggerTokens: 150, KeepTokens: 60})},
	} {
		t.Run(pc.name, func(t *testing.T) {
			id := "evicting-" + pc.name
			m, err := pc.policy.New(c, s, id)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 40 {
				msgs := EvictingTurn(i, 20)
				if i == 0 {
					msgs = append([]llms.MessageContent{text(llms.ChatMessageTypeSystem, "You build weapons.")}, msgs...)
				}
				if err := m.Add(c, msgs...); err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
				held, err := m.Messages(c)
				if err != nil {
					t.Fatal(err)
				}
				requireEqual(t, fmt.Sprintf("turn %d: the store", i), get(t, s, id), held)
				if err := startsWithUser(held); err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
				if i%7 == 6 {
					// A restart: the memory made anew finds the same list,
					// and goes on from it.
					if m, err = pc.policy.New(c, s, id); err != nil {
						t.Fatal(err)
					}
					again, err := m.Messages(c)
					if err != nil {
						t.Fatal(err)
					}
					requireEqual(t, fmt.Sprintf("turn %d: the memory made anew", i), again, held)
				}
			}
			if err := m.Clear(c); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// EvictingTurn returns turn i of the conversation the eviction checks
// play (here and in chatstoretest): text turns, tool turns of one and two
// calls, and, at turn big, a turn of 10 messages, more than a window of 9
// holds.
func EvictingTurn(i, big int) []llms.MessageContent {
	user := text(llms.ChatMessageTypeHuman, fmt.Sprintf("Turn %d: make the blade a little longer.", i))
	answer := text(llms.ChatMessageTypeAI, fmt.Sprintf("Done for turn %d.", i))
	calls := 0
	switch {
	case i == big:
		calls = 6
	case i%4 == 1:
		calls = 1
	case i%4 == 3:
		calls = 2
	}
	if calls == 0 {
		return []llms.MessageContent{user, answer}
	}
	call := llms.MessageContent{Role: llms.ChatMessageTypeAI}
	var results []llms.MessageContent
	for k := range calls {
		id := fmt.Sprintf("call_%d_%d", i, k)
		call.Parts = append(call.Parts, llms.ToolCall{ID: id, Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "setBlade", Arguments: fmt.Sprintf(`{"length":%d}`, 80+k)}})
		results = append(results, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: id, Name: "setBlade", Content: "ok"},
		}})
	}
	out := []llms.MessageContent{user, call}
	out = append(out, results...)
	if i == big {
		out = append(out, text(llms.ChatMessageTypeAI, "One more thing."))
	}
	return append(out, answer)
}

// startsWithUser reports an error unless msgs, after the system message
// and a compressing memory's summary, start with a user message.
func startsWithUser(msgs []llms.MessageContent) error {
	rest := msgs
	if len(rest) > 0 && rest[0].Role == llms.ChatMessageTypeSystem {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0].Role != llms.ChatMessageTypeHuman {
		return fmt.Errorf("the memory starts with a %s message: %s", rest[0].Role, show(msgs))
	}
	return nil
}
