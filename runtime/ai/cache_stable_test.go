package ai_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// markedTexts returns the texts of the parts of req that carry a
// breakpoint.
func markedTexts(req llmtest.Request) []string {
	var out []string
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if c, ok := p.(llms.CachedContent); ok && c.CacheControl != nil {
				out = append(out, fmt.Sprint(c.ContentPart.(llms.TextContent).Text))
			}
		}
	}
	return out
}

// plainPolicy makes memories that are not memory.StableMemory.
type plainPolicy struct{ memory.Policy }

func (p plainPolicy) New(ctx context.Context, store memory.Store, id string) (memory.Memory, error) {
	m, err := p.Policy.New(ctx, store, id)
	return struct{ memory.Memory }{m}, err
}

// TestBreakpointsOnlyWhereTheyPay: through langchaingo's anthropic client,
// the service marks only the messages the memory keeps for the next
// request or that the previous request had (memory.StableMemory). A full
// history marks every turn; a sliding window of five messages (the system
// message and two turns) marks its turns while it grows, only the turns
// the previous request had on the turn before it evicts (not the new one,
// whose prefix the eviction drops), and nothing once it evicts on every
// turn. A memory that does not tell its stability is marked as if it only
// appended.
func TestBreakpointsOnlyWhereTheyPay(t *testing.T) {
	users := []string{"one", "two", "three", "four", "five"}
	for _, c := range []struct {
		name   string
		policy memory.Policy
		want   [][]string // the marked user messages, turn by turn
	}{
		{"full history", memory.Window(1000, nil), [][]string{
			{"one"}, {"one", "two"}, {"one", "two", "three"}, {"one", "three", "four"}, {"one", "four", "five"},
		}},
		{"sliding window", memory.Window(5, nil), [][]string{
			{"one"}, {"one", "two"}, {"one", "two"}, nil, nil,
		}},
		{"memory that tells nothing", plainPolicy{memory.Window(5, nil)}, [][]string{
			{"one"}, {"one", "two"}, {"one", "two", "three"}, {"two", "three", "four"}, {"three", "four", "five"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewAnthropicServer(llmtest.Rules().WithFallback(llmtest.Reply{Text: "Noted."}), &llmtest.Options{ModelName: "claude-sonnet-4-5"})
			t.Cleanup(srv.Close)
			llm, err := llmclient.Anthropic(srv)
			if err != nil {
				t.Fatal(err)
			}
			svc := ai.NewService(svcName, &ai.Config{Model: llm, Logger: slog.New(slog.DiscardHandler), Memory: memory.NewManager(&memory.ManagerOptions{Policy: c.policy})})
			m := &ai.Method{Name: "Ask", System: "Be terse."}
			for i, user := range users {
				if _, err := svc.Chat(context.Background(), &ai.Request{Method: m, MemoryID: "m", User: user}); err != nil {
					t.Fatal(err)
				}
				if got := markedTexts(srv.Requests()[i]); !slices.Equal(got, c.want[i]) {
					t.Fatalf("turn %d: breakpoints on %q, want %q", i+1, got, c.want[i])
				}
			}
		})
	}
}
