package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	airt "github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// stockPrefix starts the user message of a tool turn of
// TestLongConversationThroughAnthropic.
const stockPrefix = "STOCK: how many "

// stockUser returns the user message of turn i of the conversation of
// TestLongConversationThroughAnthropic: the benchmark's, but one filler turn
// in five asks for the stock of an item, which the model looks up with a
// tool.
func stockUser(i int) string {
	if i >= convFacts && i < convTurns-convFacts && i%5 == 0 {
		return fmt.Sprintf("%sblades of kind %d are left?", stockPrefix, i)
	}
	return convUser(i)
}

// stockModel is convModel with the stock tool: a stock question is
// answered by a call of the tool, and its result by a sentence quoting it.
func stockModel() llmtest.Script {
	next := convModel()
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if isSummaryRequest(req) {
			return next.Next(req)
		}
		if res := req.LastToolResults(); len(res) > 0 {
			return llmtest.Reply{Text: "The ledger says: " + res[0].Content + "."}, nil
		}
		if q, ok := strings.CutPrefix(req.LastUserText(), stockPrefix); ok {
			kind := strings.TrimSuffix(strings.TrimPrefix(q, "blades of kind "), " are left?")
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "stock", Arguments: `{"kind":"` + kind + `"}`}}}, nil
		}
		return next.Next(req)
	})
}

// TestLongConversationThroughAnthropic plays the 200-turn conversation of
// the long-conversation benchmark, with a tool turn in every five filler
// turns, through langchaingo's anthropic client against llmtest's
// Anthropic server, which refuses a conversation whose first message is
// not the user's, with the default memory and the windows of the guide.
// Once a memory is full it evicts on every turn: every turn must still
// succeed, and every request must start (after the system prompt) with a
// user message.
func TestLongConversationThroughAnthropic(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	for _, mc := range []struct {
		name   string
		policy func(memory.Summarizer) memory.Policy // nil: the Manager's default
	}{
		{"default", nil},
		{"TokenWindow(2000)", func(memory.Summarizer) memory.Policy { return memory.TokenWindow(2000, nil, nil) }},
		{"TokenWindow(2000,EvictTo(1200))", func(memory.Summarizer) memory.Policy {
			return memory.TokenWindow(2000, nil, &memory.WindowOptions{EvictTo: 1200})
		}},
		{"TokenWindow(4000,EvictTo(2400))", func(memory.Summarizer) memory.Policy {
			return memory.TokenWindow(4000, nil, &memory.WindowOptions{EvictTo: 2400})
		}},
		{"Compressing(2000)", func(s memory.Summarizer) memory.Policy {
			return memory.Compressing(2000, s, &memory.CompressOptions{Logger: quiet})
		}},
	} {
		t.Run(mc.name, func(t *testing.T) {
			srv := llmtest.NewAnthropicServer(stockModel(), nil)
			t.Cleanup(srv.Close)
			llm, err := llmclient.Anthropic(srv)
			if err != nil {
				t.Fatal(err)
			}
			var cfg memory.ManagerOptions
			if mc.policy != nil {
				cfg.Policy = mc.policy(memory.NewModelSummarizer(llm, nil))
			}
			svc := airt.NewService("example.com/armory.Assistant", &airt.Config{
				Model: llm, Logger: quiet, Memory: memory.NewManager(&cfg),
			})
			method := &airt.Method{Name: "Chat", System: convSystem, Tools: []airt.Tool{{
				Name: "stock", Description: "Stock tells how many blades of a kind are left.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"kind":{"type":"string"}},"required":["kind"]}`),
				Invoke: func(_ context.Context, args string) (any, error) {
					var v struct{ Kind string }
					if err := json.Unmarshal([]byte(args), &v); err != nil {
						return nil, err
					}
					return "kind " + v.Kind + ": " + fmt.Sprint(len(v.Kind)*7) + " left", nil
				},
			}}}
			failed, tools := 0, 0
			var first error
			for i := range convTurns {
				reply, err := svc.Chat(t.Context(), &airt.Request{Method: method, MemoryID: "conversation", User: stockUser(i)})
				if err == nil && strings.HasPrefix(stockUser(i), stockPrefix) {
					if !strings.HasPrefix(reply.Content, "The ledger says: kind ") {
						err = fmt.Errorf("the tool turn was answered %q", reply.Content)
					}
					tools++
				}
				if err != nil {
					failed++
					if first == nil {
						first = fmt.Errorf("turn %d: %w", i, err)
					}
				}
			}
			t.Logf("%s: %d of %d turns failed (%d tool turns passed)", mc.name, failed, convTurns, tools)
			if failed > 0 {
				t.Fatalf("%d of %d turns failed; the first: %v", failed, convTurns, first)
			}
			for _, req := range srv.Requests() {
				if err := startsWithUser(req.Messages); err != nil {
					t.Fatalf("request %d: %v", req.Index, err)
				}
			}
		})
	}
}

// startsWithUser reports an error unless msgs, after the system messages,
// start with a user message.
func startsWithUser(msgs []llms.MessageContent) error {
	for _, m := range msgs {
		switch m.Role {
		case llms.ChatMessageTypeSystem:
			continue
		case llms.ChatMessageTypeHuman:
			return nil
		}
		return fmt.Errorf("the conversation starts with a %s message: %s", m.Role, summary(msgs))
	}
	return nil
}
