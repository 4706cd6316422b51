package ai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

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

// sonnetServer returns llmtest's Anthropic server answering with script as
// Claude Sonnet 4.5, closed with the test, and langchaingo's anthropic
// client of it.
func sonnetServer(t *testing.T, script llmtest.Script) (*llmtest.AnthropicServer, llms.Model) {
	t.Helper()
	srv := llmtest.NewAnthropicServer(script, &llmtest.Options{ModelName: "claude-sonnet-4-5"})
	t.Cleanup(srv.Close)
	llm, err := llmclient.Anthropic(srv)
	if err != nil {
		t.Fatal(err)
	}
	return srv, llm
}

// notedScript answers every request "Noted.".
func notedScript() llmtest.Script { return llmtest.Rules().WithFallback(llmtest.Reply{Text: "Noted."}) }

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
			srv, llm := sonnetServer(t, notedScript())
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

// TestBreakpointsFollowTheGaps: on a clock that moves (Config.Now), the
// service writes a turn's prompt to the cache only while the gaps it has
// seen between the memory's turns give the next request a chance of about
// 0.22 or more to come within the cache's lifetime
// (Config.PromptCacheTTL), where a write at 1.25× pays: a full history is
// marked every turn while its turns come 30 s apart, not once 10-minute
// gaps have made that unlikely, and again when short gaps come back. A sliding window's turn that comes after the cache
// expired does not mark the previous request's prefix, which the next
// eviction drops and no request reads.
func TestBreakpointsFollowTheGaps(t *testing.T) {
	const warm, cold = 30 * time.Second, 10 * time.Minute
	for _, c := range []struct {
		name   string
		policy memory.Policy
		gaps   []time.Duration // before each turn after the first
		want   [][]string
	}{
		{"full history", memory.Window(1000, nil),
			[]time.Duration{warm, cold, cold, cold, cold, cold, cold, cold, warm},
			[][]string{
				{"t1"}, {"t1", "t2"}, {"t1", "t2", "t3"}, {"t1", "t3", "t4"}, {"t1", "t4", "t5"},
				{"t1", "t5", "t6"}, {"t1", "t6", "t7"}, {"t1", "t7", "t8"},
				nil, // 1 gap in 8 within the TTL: (1+1)/(8+2) < 0.22
				{"t1", "t9", "t10"},
			}},
		{"sliding window, cold", memory.Window(5, nil),
			[]time.Duration{warm, cold},
			[][]string{{"t1"}, {"t1", "t2"}, nil}},
		{"sliding window, warm", memory.Window(5, nil),
			[]time.Duration{warm, warm},
			[][]string{{"t1"}, {"t1", "t2"}, {"t1", "t2"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, llm := sonnetServer(t, notedScript())
			now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
			svc := ai.NewService(svcName, &ai.Config{
				Model: llm, Logger: slog.New(slog.DiscardHandler),
				Memory:         memory.NewManager(&memory.ManagerOptions{Policy: c.policy}),
				Now:            func() time.Time { return now },
				PromptCacheTTL: 5 * time.Minute,
			})
			m := &ai.Method{Name: "Ask", System: "Be terse."}
			for i := range c.want {
				if i > 0 {
					now = now.Add(c.gaps[i-1])
				}
				if _, err := svc.Chat(context.Background(), &ai.Request{Method: m, MemoryID: "m", User: fmt.Sprintf("t%d", i+1)}); err != nil {
					t.Fatal(err)
				}
				if got := markedTexts(srv.Requests()[i]); !slices.Equal(got, c.want[i]) {
					t.Fatalf("turn %d: breakpoints on %q, want %q", i+1, got, c.want[i])
				}
			}
		})
	}
}

// conversationSummarizer is a summarizer that reads the conversation
// first (memory.ConversationSummarizer), without a model.
type conversationSummarizer struct{ memory.Summarizer }

func (conversationSummarizer) WantsConversation() bool { return true }

// TestBreakpointsForTheSummary: when the gaps say a write does not pay,
// the turn whose Add summarises with a summarizer that reads the
// conversation (memory.Stability.Summarizes) is still marked: the
// summary's request reads the prompt within the turn. The other turns are
// not.
func TestBreakpointsForTheSummary(t *testing.T) {
	srv, llm := sonnetServer(t, notedScript())
	sum := memory.SummarizerFunc(func(context.Context, memory.SummaryRequest) (string, error) { return "Facts.", nil })
	mgr := memory.NewManager(&memory.ManagerOptions{Policy: memory.Compressing(1000, conversationSummarizer{sum},
		&memory.CompressOptions{TriggerTokens: 120, KeepTokens: 40, Logger: slog.New(slog.DiscardHandler)})})
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	svc := ai.NewService(svcName, &ai.Config{
		Model: llm, Logger: slog.New(slog.DiscardHandler), Memory: mgr,
		Now: func() time.Time { return now },
	})
	mem, err := mgr.Memory(context.Background(), "m")
	if err != nil {
		t.Fatal(err)
	}
	m := &ai.Method{Name: "Ask", System: "Be terse."}
	summarised := 0
	for i := range 12 {
		now = now.Add(time.Hour)
		user := fmt.Sprintf("turn %d: %s", i+1, strings.Repeat("words ", 10))
		st, err := mem.(memory.StableMemory).Stability(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, user)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Chat(context.Background(), &ai.Request{Method: m, MemoryID: "m", User: user}); err != nil {
			t.Fatal(err)
		}
		marked := len(markedTexts(srv.Requests()[i])) > 0
		switch {
		case st.Summarizes:
			summarised++
			if !marked {
				t.Fatalf("turn %d summarises: no breakpoint", i+1)
			}
		case i >= 3 && marked:
			// Three gaps of an hour: (0+1)/(3+2) < 0.22.
			t.Fatalf("turn %d, after hours between turns: breakpoints on %q", i+1, markedTexts(srv.Requests()[i]))
		}
	}
	if summarised < 2 {
		t.Fatalf("%d turns summarised, want at least 2", summarised)
	}
}

// stateSource is a context source (ai.ContextSource) whose block is the
// same every turn.
type stateSource struct{}

func (stateSource) Name() string                                   { return "state" }
func (stateSource) Tools(context.Context) ([]ai.Tool, error)       { return nil, nil }
func (stateSource) RequestContext(context.Context) (string, error) { return "The forge is hot.", nil }

// markedUsers returns the user texts of req (the user's own message of a
// message with a context slot, after "Message:") that carry a breakpoint,
// and whether a marked one carried the slot.
func markedUsers(req llmtest.Request) (marked []string, slot bool) {
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			c, ok := p.(llms.CachedContent)
			if !ok || c.CacheControl == nil {
				continue
			}
			text, ok := c.ContentPart.(llms.TextContent)
			if !ok {
				marked = append(marked, "(tool result)")
				continue
			}
			own := text.Text
			if i := strings.LastIndex(own, "\nMessage:\n"); i >= 0 {
				own, slot = own[i+len("\nMessage:\n"):], true
			}
			marked = append(marked, own)
		}
	}
	return marked, slot
}

// TestNoBreakpointOnTheContextSlot: a user message the service sent with
// a per-request context slot (here a context source's block) is not
// marked on the turn's first call: the memory keeps the user's own
// message, which the next request sends instead, so no request would read
// that prefix. The user messages before it are, and the next turn marks
// the one the memory kept. A tool loop's next call, which sends the
// message again, marks it.
func TestNoBreakpointOnTheContextSlot(t *testing.T) {
	srv, llm := sonnetServer(t, llmtest.Sequence(
		llmtest.Reply{Text: "One."},
		llmtest.Reply{Text: "Two."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "look", Arguments: `{}`}}},
		llmtest.Reply{Text: "Three."},
	))
	svc := ai.NewService(svcName, &ai.Config{Model: llm, Logger: slog.New(slog.DiscardHandler), ToolSources: []ai.ToolSource{stateSource{}}})
	look := ai.Tool{Name: "look", Parameters: json.RawMessage(`{"type":"object"}`),
		Invoke: func(context.Context, string) (any, error) { return "nothing", nil }}
	m := &ai.Method{Name: "Ask", System: "Be terse.", Tools: []ai.Tool{look}}
	for _, user := range []string{"t1", "t2", "t3"} {
		if _, err := svc.Chat(context.Background(), &ai.Request{Method: m, MemoryID: "m", User: user}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for i, want := range [][]string{nil, {"t1"}, {"t1", "t2"}} {
		got, slot := markedUsers(reqs[i])
		if !slices.Equal(got, want) || slot {
			t.Fatalf("request %d: breakpoints on %q (on the slot: %v), want %q", i+1, got, slot, want)
		}
	}
	if got, slot := markedUsers(reqs[3]); !slot {
		t.Fatalf("the tool loop's second call: breakpoints on %q, none on the message with the slot", got)
	}
}
