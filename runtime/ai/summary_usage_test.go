package ai_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// TestSummarizerUsageCounted: the calls a compressing memory's summarizer
// makes during a turn (a fold in the turn's Add, or before its request
// when the cache has expired) are in the turn's Reply.Usage, as the
// server billed them.
func TestSummarizerUsageCounted(t *testing.T) {
	for _, cold := range []bool{false, true} {
		name := "fold after the turn"
		if cold {
			name = "fold before a cold request"
		}
		t.Run(name, func(t *testing.T) {
			// The summaries are short; the answers repeat the question.
			srv := llmtest.NewServer(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
				if len(req.Messages) > 0 && textOf(req.Messages[0]) == memory.DefaultSummaryInstructions {
					return llmtest.Reply{Text: "The user talked."}, nil
				}
				return llmtest.Reply{Text: "Noted: " + req.LastUserText()}, nil
			}), nil)
			t.Cleanup(srv.Close)
			llm, err := srv.Client()
			if err != nil {
				t.Fatal(err)
			}
			clock := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
			opts := &memory.CompressOptions{TriggerTokens: 1200, KeepTokens: 600, SummaryTokens: 40, Logger: slog.New(slog.DiscardHandler)}
			if cold {
				// Folds pay only before a request the cache has expired
				// for: every turn comes 10 minutes after the previous one.
				opts.Costs = &memory.TokenCosts{Input: 3, CacheWrite: 3.75, CacheRead: 0.3, Output: 15}
				opts.Now = func() time.Time { return clock }
			}
			svc := ai.NewService("example.com/usage.Assistant", &ai.Config{
				Model: llm, Logger: slog.New(slog.DiscardHandler),
				Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Compressing(4000, memory.NewModelSummarizer(llm, nil), opts)}),
			})
			method := &ai.Method{Name: "Chat", System: "You are terse."}
			folds := 0
			for i := range 20 {
				clock = clock.Add(10 * time.Minute)
				before := len(srv.Requests())
				r, err := svc.Chat(t.Context(), &ai.Request{Method: method, MemoryID: "m", User: strings.Repeat("word ", 100) + string(rune('a'+i))})
				if err != nil {
					t.Fatal(err)
				}
				reqs := srv.Requests()[before:]
				prompt := 0
				for _, q := range reqs {
					prompt += q.PromptTokens
				}
				if len(reqs) > 1 {
					folds++
				}
				if r.Usage.PromptTokens != prompt || r.Usage.CompletionTokens == 0 || r.Usage.TotalTokens != r.Usage.PromptTokens+r.Usage.CompletionTokens {
					t.Fatalf("turn %d: %d requests of %d prompt tokens, usage %+v", i, len(reqs), prompt, r.Usage)
				}
			}
			if folds == 0 {
				t.Fatal("no turn folded: the test shows nothing")
			}
		})
	}
}
