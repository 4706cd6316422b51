package llmtest_test

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

func TestSequence(t *testing.T) {
	s := llmtest.Sequence(llmtest.Reply{Text: "a"}, llmtest.Reply{Text: "b"})
	for _, want := range []string{"a", "b"} {
		r, err := s.Next(&llmtest.Request{})
		if err != nil || r.Text != want {
			t.Fatalf("Next = %q, %v; want %q", r.Text, err, want)
		}
	}
	_, err := s.Next(&llmtest.Request{})
	if !errors.Is(err, llmtest.ErrScriptExhausted) || err.Error() != "llmtest: script exhausted after 2 replies" {
		t.Fatalf("exhausted: %v", err)
	}
	if s.Remaining() != 0 {
		t.Fatalf("Remaining = %d", s.Remaining())
	}
	s.Reset()
	if r, _ := s.Next(&llmtest.Request{}); r.Text != "a" || s.Remaining() != 1 {
		t.Fatalf("after Reset: %q, %d remaining", r.Text, s.Remaining())
	}
}

func TestSequenceConcurrent(t *testing.T) {
	replies := make([]llmtest.Reply, 100)
	s := llmtest.Sequence(replies...)
	var wg sync.WaitGroup
	var mu sync.Mutex
	errs := 0
	for range 110 {
		wg.Go(func() {
			if _, err := s.Next(&llmtest.Request{}); err != nil {
				mu.Lock()
				errs++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if errs != 10 {
		t.Fatalf("%d calls failed, want 10", errs)
	}
}

// request returns a Request holding msgs and offering tools.
func request(msgs []llms.MessageContent, tools ...llms.Tool) *llmtest.Request {
	return &llmtest.Request{Messages: msgs, Tools: tools}
}

func TestRules(t *testing.T) {
	rules := llmtest.Rules(
		llmtest.When(llmtest.AfterToolResult("weather"), llmtest.Reply{Text: "after weather"}),
		llmtest.When(llmtest.LastUserContains("SWORD"), llmtest.Reply{Text: "sword"}),
		llmtest.When(llmtest.LastUserContains("sword"), llmtest.Reply{Text: "shadowed"}),
		llmtest.When(llmtest.LastUserMatches(regexp.MustCompile(`^\d+$`)), llmtest.Reply{Text: "number"}),
		llmtest.WhenFunc(llmtest.All(llmtest.HasTool("time"), llmtest.Not(llmtest.HasTool("weather"))),
			func(req *llmtest.Request) (llmtest.Reply, error) {
				return llmtest.Reply{Text: "time for " + req.LastUserText()}, nil
			}),
		llmtest.When(llmtest.Any(llmtest.HasTool("nope"), llmtest.LastUserContains("fail")), llmtest.Reply{Text: "any"}),
	)
	for _, tc := range []struct {
		name string
		req  *llmtest.Request
		want string
	}{
		{"case-insensitive contains, first match wins", request([]llms.MessageContent{human("A Sword, please")}), "sword"},
		{"regexp", request([]llms.MessageContent{human("42")}), "number"},
		{"func reply", request([]llms.MessageContent{human("Paris")}, timeTool), "time for Paris"},
		{"not", request([]llms.MessageContent{human("Paris")}, timeTool, weatherTool), "no match"},
		{"any", request([]llms.MessageContent{human("fail")}), "any"},
		// The user's message is still the last human message: rule order decides.
		{"after tool result", request(append([]llms.MessageContent{human("sword")}, conversation()[2:]...)), "after weather"},
		{"no messages", request(nil), "no match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := rules.Next(tc.req)
			if tc.want == "no match" {
				if !errors.Is(err, llmtest.ErrNoRuleMatched) {
					t.Fatalf("got %q, %v; want ErrNoRuleMatched", r.Text, err)
				}
				return
			}
			if err != nil || r.Text != tc.want {
				t.Fatalf("got %q, %v; want %q", r.Text, err, tc.want)
			}
		})
	}

	_, err := rules.Next(&llmtest.Request{Index: 3, Messages: []llms.MessageContent{human("hello")}})
	if err == nil || err.Error() != `llmtest: no rule matched request 3 (last user message "hello")` {
		t.Fatalf("no match error: %v", err)
	}
	fallback := rules.WithFallback(llmtest.Reply{Text: "fallback"})
	if r, err := fallback.Next(request([]llms.MessageContent{human("hello")})); err != nil || r.Text != "fallback" {
		t.Fatalf("fallback: %q %v", r.Text, err)
	}
	if r, _ := fallback.Next(request([]llms.MessageContent{human("sword")})); r.Text != "sword" {
		t.Fatalf("fallback shadows a rule: %q", r.Text)
	}
	if _, err := rules.Next(request([]llms.MessageContent{human("hello")})); err == nil {
		t.Fatalf("WithFallback changed the original rules")
	}
	byFunc := rules.WithFallbackFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: "heard " + req.LastUserText()}, nil
	})
	if r, _ := byFunc.Next(request([]llms.MessageContent{human("hello")})); r.Text != "heard hello" {
		t.Fatalf("fallback func: %q", r.Text)
	}
	if r, _ := llmtest.Rules(llmtest.When(nil, llmtest.Reply{Text: "always"})).Next(request(nil)); r.Text != "always" {
		t.Fatalf("nil match: %q", r.Text)
	}
}

func TestAfterToolResult(t *testing.T) {
	conv := conversation() // ends with results of weather (named) and time (unnamed)
	for _, tc := range []struct {
		msgs []llms.MessageContent
		name string
		want bool
	}{
		{conv, "weather", true},
		{conv, "time", true}, // name taken from the assistant's call
		{conv, "", true},
		{conv, "other", false},
		{conv[:4], "weather", true},
		{conv[:4], "time", false},
		{append(conv, human("thanks")), "weather", false}, // no longer last
		{conv[:3], "", false},
	} {
		if got := llmtest.AfterToolResult(tc.name)(request(tc.msgs)); got != tc.want {
			t.Errorf("AfterToolResult(%q) on %d messages = %v, want %v", tc.name, len(tc.msgs), got, tc.want)
		}
	}
	got := request(conv).LastToolResults()
	if len(got) != 2 || got[0].Name != "weather" || got[1].Name != "time" || got[1].Content != "12:00" {
		t.Fatalf("LastToolResults = %+v", got)
	}
	// One tool message holding both results (as Gemini and Anthropic
	// carry them) keeps their order.
	both := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: append(append([]llms.ContentPart{}, conv[3].Parts...), conv[4].Parts...)}
	got = request(append(append([]llms.MessageContent{}, conv[:3]...), both)).LastToolResults()
	if len(got) != 2 || got[0].Name != "weather" || got[1].Name != "time" {
		t.Fatalf("LastToolResults of one message = %+v", got)
	}
}

// TestRulesDemo plays an offline tool loop with the in-process Model.
func TestRulesDemo(t *testing.T) {
	script := llmtest.Rules(
		llmtest.When(llmtest.AfterToolResult("weather"), llmtest.Reply{Text: "It is sunny in Paris."}),
		llmtest.When(llmtest.All(llmtest.LastUserContains("weather"), llmtest.HasTool("weather")),
			llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}}),
	).WithFallback(llmtest.Reply{Text: "Ask me about the weather."})
	m := llmtest.NewModel(script, nil)
	ctx := context.Background()
	msgs := []llms.MessageContent{human("What's the weather?")}
	tools := llms.WithTools([]llms.Tool{weatherTool})

	resp, err := m.GenerateContent(ctx, msgs, tools)
	c := choice0(t, resp, err)
	assertCalls(t, c, `call_1 weather {"city":"Paris"}`)
	msgs = append(msgs,
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{c.ToolCalls[0]}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: c.ToolCalls[0].ID, Content: "sunny"},
		}})
	resp, err = m.GenerateContent(ctx, msgs, tools)
	if c := choice0(t, resp, err); c.Content != "It is sunny in Paris." {
		t.Fatalf("after the tool: %q", c.Content)
	}
	resp, err = m.GenerateContent(ctx, []llms.MessageContent{human("hello")})
	if c := choice0(t, resp, err); c.Content != "Ask me about the weather." {
		t.Fatalf("fallback: %q", c.Content)
	}
}

// TestLastUserTyped: a user message with passages before it (as
// runtime/ai's generic knowledge sends it) is matched on what follows
// them; another message whole.
func TestLastUserTyped(t *testing.T) {
	augmented := "Passages from the knowledge base that may help (answer from them when they are relevant, " +
		"and cite their titles; say so when they do not answer):\n\n[1] Returns (policy.md)\nA weapon may be returned.\n\nMessage:\nIs my sword sharp?"
	req := func(text string) *llmtest.Request {
		return &llmtest.Request{Messages: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, text)}}
	}
	s := llmtest.Rules(
		llmtest.When(llmtest.LastUserTyped("RETURN"), llmtest.Reply{Text: "return"}),
		llmtest.When(llmtest.LastUserTypedMatches(regexp.MustCompile(`^Is my \w+ sharp\?$`)), llmtest.Reply{Text: "sharp"}),
	).WithFallback(llmtest.Reply{Text: "fallback"})
	for text, want := range map[string]string{augmented: "sharp", "I want to return it": "return", "hello": "fallback"} {
		if r, err := s.Next(req(text)); err != nil || r.Text != want {
			t.Fatalf("%q: %q, %v; want %q", text, r.Text, err, want)
		}
	}
	if got := req(augmented).UserTyped(); got != "Is my sword sharp?" {
		t.Fatalf("UserTyped %q", got)
	}
	if !llmtest.LastUserContains("return")(req(augmented)) {
		t.Fatal("LastUserContains does not see the passages")
	}
}
