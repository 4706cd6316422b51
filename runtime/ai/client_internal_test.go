package ai

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// turnMessages is a turn with text before two tool calls and their two
// results, as the memory keeps it.
func turnMessages() []llms.MessageContent {
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris and Rome?"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.TextContent{Text: "Let me look."},
			llms.ToolCall{ID: "a", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}},
			llms.ToolCall{ID: "b", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Rome"}`}},
		}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "a", Name: "weather", Content: "sun"}}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: "b", Name: "weather", Content: "rain"}}},
		llms.TextParts(llms.ChatMessageTypeAI, "Sun in Paris, rain in Rome."),
	}
}

func roles(msgs []llms.MessageContent) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Role) + ":" + string(rune('0'+len(m.Parts)))
	}
	return out
}

func TestDialectMessages(t *testing.T) {
	for _, tc := range []struct {
		client Client
		want   []string
	}{
		{ClientOpenAI, []string{"system:1", "human:1", "ai:3", "tool:1", "tool:1", "ai:1"}},
		{ClientAnthropic, []string{"system:1", "human:1", "ai:1", "ai:1", "ai:1", "tool:1", "tool:1", "ai:1"}},
		{ClientGoogleAI, []string{"system:1", "human:1", "ai:3", "tool:2", "ai:1"}},
	} {
		t.Run(string(tc.client), func(t *testing.T) {
			in := turnMessages()
			before := roles(in)
			got := newDialect(tc.client).messages(in)
			if r := roles(got); !reflect.DeepEqual(r, tc.want) {
				t.Fatalf("shaped %v, want %v", r, tc.want)
			}
			if !reflect.DeepEqual(roles(in), before) || len(in[4].Parts) != 1 {
				t.Fatalf("the memory's messages were changed: %v", roles(in))
			}
			if reflect.DeepEqual(tc.want, before) && &got[0] != &in[0] {
				t.Fatal("messages that need no shaping were copied")
			}
		})
	}
}

func TestDialectAnthropicDropsEmptyText(t *testing.T) {
	in := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "hi"),
		llms.TextParts(llms.ChatMessageTypeAI, ""),
		llms.TextParts(llms.ChatMessageTypeHuman, "again"),
	}
	got := newDialect(ClientAnthropic).messages(in)
	if r := roles(got); !reflect.DeepEqual(r, []string{"human:1", "human:1"}) {
		t.Fatalf("shaped %v", r)
	}
}

func TestDetectClient(t *testing.T) {
	m := llmtest.NewModel(llmtest.Sequence(), nil)
	if c := detectClient(m); c != ClientOpenAI {
		t.Fatalf("llmtest.Model: %v", c)
	}
	if c := detectClient(nil); c != ClientOpenAI {
		t.Fatalf("nil: %v", c)
	}
	s := NewService("x.S", &Config{Model: m, Client: ClientGoogleAI})
	if s.Client() != ClientGoogleAI {
		t.Fatalf("explicit client: %v", s.Client())
	}
	s = NewService("x.S", &Config{Model: m, Client: "gemini"})
	if err := s.Check(); !errors.Is(err, ErrUnknownClient) {
		t.Fatalf("Check of an unknown client: %v", err)
	}
}

func TestGeminiSchema(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{``, `{}`},
		{`{"type":"object"}`, `{}`},
		{`{"type":"object","properties":{},"additionalProperties":false}`, `{}`},
		{`{"type":"object","properties":{"n":{"type":["integer","null"],"description":"N"},"tags":{"type":"array"},` +
			`"kind":{"enum":["a","b"],"type":"string"},"any":{"anyOf":[{"type":"null"},{"type":"number"}]}},` +
			`"required":["n"],"additionalProperties":false,"$schema":"x"}`,
			`{"properties":{"any":{"type":"number"},"kind":{"enum":["a","b"],"type":"string"},"n":{"description":"N","type":"integer"},` +
				`"tags":{"items":{"type":"string"},"type":"array"}},"required":["n"],"type":"object"}`},
	} {
		got, err := geminiSchema(json.RawMessage(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		b, _ := json.Marshal(got)
		if string(b) != tc.want {
			t.Errorf("geminiSchema(%s)\n got %s\nwant %s", tc.in, b, tc.want)
		}
	}
	if _, err := geminiSchema(json.RawMessage(`[1]`)); err == nil {
		t.Fatal("an array schema was accepted")
	}
}

func TestDialectUsage(t *testing.T) {
	type usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
	for _, tc := range []struct {
		name string
		info map[string]any
		want Usage
	}{
		{"openai", map[string]any{"PromptTokens": 3, "CompletionTokens": int32(2), "TotalTokens": int64(5)}, Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}},
		{"anthropic", map[string]any{"InputTokens": int32(10), "OutputTokens": 4}, Usage{PromptTokens: 10, CompletionTokens: 4, TotalTokens: 14}},
		{"numbers", map[string]any{"PromptTokens": 1.0, "CompletionTokens": json.Number("1")}, Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}},
		{"mistral", map[string]any{"usage": usage{7, 3, 10}, "model": "m"}, Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}},
		{"gemini thoughts", map[string]any{"PromptTokens": int32(10), "CompletionTokens": int32(5), "TotalTokens": int32(40)}, Usage{PromptTokens: 10, CompletionTokens: 30, TotalTokens: 40}},
		{"openai cached", map[string]any{"PromptTokens": 2000, "CompletionTokens": 5, "TotalTokens": 2005, "PromptCachedTokens": 1536},
			Usage{PromptTokens: 2000, CompletionTokens: 5, TotalTokens: 2005, CacheReadTokens: 1536}},
		{"anthropic cached", map[string]any{"InputTokens": 200, "OutputTokens": 5, "CacheReadInputTokens": 1500, "CacheCreationInputTokens": 300},
			Usage{PromptTokens: 2000, CompletionTokens: 5, TotalTokens: 2005, CacheReadTokens: 1500, CacheWriteTokens: 300}},
		{"gemini cached", map[string]any{"PromptTokens": int32(2000), "CompletionTokens": int32(5), "TotalTokens": int32(2005),
			"CachedTokens": int32(1500), "CacheReadInputTokens": int32(1500)},
			Usage{PromptTokens: 2000, CompletionTokens: 5, TotalTokens: 2005, CacheReadTokens: 1500}},
		{"none", nil, Usage{}},
	} {
		if got := (dialect{}).usage(tc.info); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDialectFinish(t *testing.T) {
	ollama, gemini := newDialect(ClientOllama), newDialect(ClientGoogleAI)
	for _, tc := range []struct {
		name   string
		d      dialect
		choice llms.ContentChoice
		reason string
		clean  bool
	}{
		{"reason", dialect{}, llms.ContentChoice{StopReason: "stop"}, "stop", true},
		{"none", dialect{}, llms.ContentChoice{Content: "x"}, "", false},
		{"gemini unspecified", gemini, llms.ContentChoice{Content: "x", StopReason: "FinishReasonUnspecified"}, "", false},
		{"gemini stop", gemini, llms.ContentChoice{StopReason: "FinishReasonStop"}, "FinishReasonStop", true},
		{"ollama done", ollama, llms.ContentChoice{Content: "x", GenerationInfo: map[string]any{"PromptTokens": 3, "CompletionTokens": 1}}, "", true},
		{"ollama cut", ollama, llms.ContentChoice{GenerationInfo: map[string]any{"PromptTokens": 0, "CompletionTokens": 0}}, "", false},
	} {
		r, c := tc.d.finish(&tc.choice)
		if r != tc.reason || c != tc.clean {
			t.Errorf("%s: finish = %q, %v; want %q, %v", tc.name, r, c, tc.reason, tc.clean)
		}
	}
}

// TestPickChoiceAnthropicBlocks: llms/anthropic returns a choice per
// content block, the thinking block's reasoning in GenerationInfo only.
func TestPickChoiceAnthropicBlocks(t *testing.T) {
	info := func(extra map[string]any) map[string]any {
		m := map[string]any{"InputTokens": 10, "OutputTokens": 5}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	resp := &llms.ContentResponse{Choices: []*llms.ContentChoice{
		{StopReason: "tool_use", GenerationInfo: info(map[string]any{"ThinkingContent": "Paris first.", "ThinkingSignature": "sig"})},
		{Content: "Let me look.", StopReason: "tool_use", GenerationInfo: info(map[string]any{"ThinkingContent": ""})},
		{ToolCalls: []llms.ToolCall{{ID: "t1", FunctionCall: &llms.FunctionCall{Name: "weather"}}}, StopReason: "tool_use", GenerationInfo: info(nil)},
	}}
	c := pickChoice(resp)
	if c.Content != "Let me look." || len(c.ToolCalls) != 1 || c.ReasoningContent != "Paris first." || c.StopReason != "tool_use" {
		t.Fatalf("merged %+v", c)
	}
	if u := newDialect(ClientAnthropic).usage(c.GenerationInfo); u != (Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}) {
		t.Fatalf("usage %+v", u)
	}
}

// marked lists the indexes of the messages whose last part is a
// prompt-cache breakpoint.
func marked(msgs []llms.MessageContent) []int {
	var out []int
	for i, m := range msgs {
		if len(m.Parts) > 0 {
			if _, ok := m.Parts[len(m.Parts)-1].(llms.CachedContent); ok {
				out = append(out, i)
			}
		}
	}
	return out
}

// TestDialectAnthropicCacheMarks: the Anthropic client's requests carry
// breakpoints on the last part of the first, the second-to-last and the
// last human messages, never more than 4 marks with the caller's, and the
// memory's messages are not changed; other clients get none.
func TestDialectAnthropicCacheMarks(t *testing.T) {
	human := func(s string) llms.MessageContent { return llms.TextParts(llms.ChatMessageTypeHuman, s) }
	aiText := func(s string) llms.MessageContent { return llms.TextParts(llms.ChatMessageTypeAI, s) }
	in := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		human("Summary: the user likes swords."),
		aiText("ok"), human("one"), aiText("ok"), human("two"), aiText("ok"),
	}
	in = append(in, turnMessages()[1:5]...) // a turn in a tool loop: human, ai with calls, results
	got := newDialect(ClientAnthropic).messages(in)
	// shaped: 0 system, 1 summary, 2 ai, 3 one, 4 ai, 5 two, 6 ai, 7 human, 8-10 ai parts, 11-12 results
	if m := marked(got); !reflect.DeepEqual(m, []int{1, 5, 7}) {
		t.Fatalf("marked %v, want [1 5 7]", m)
	}
	if m := marked(in); m != nil {
		t.Fatalf("the memory's messages were marked: %v", m)
	}
	if c := got[7].Parts[0].(llms.CachedContent); c.ContentPart != (llms.TextContent{Text: "Weather in Paris and Rome?"}) || c.CacheControl.Type != "ephemeral" {
		t.Fatalf("mark %+v", c)
	}

	// The caller's marks count: with three, one is added, on the last.
	own := slices.Clone(in)
	for _, i := range []int{1, 3, 5} {
		own[i] = llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
			llms.CachedContent{ContentPart: in[i].Parts[0], CacheControl: &llms.CacheControl{Type: "ephemeral"}}}}
	}
	if m := marked(newDialect(ClientAnthropic).messages(own)); !reflect.DeepEqual(m, []int{1, 3, 5, 7}) {
		t.Fatalf("with the caller's marks: %v", m)
	}

	// More than 4: the first and the last three are sent, none is added;
	// a CachedContent without CacheControl is no mark.
	five := slices.Clone(in)
	for _, i := range []int{1, 2, 3, 4, 5} {
		five[i] = llms.MessageContent{Role: in[i].Role, Parts: []llms.ContentPart{
			llms.CachedContent{ContentPart: in[i].Parts[0], CacheControl: &llms.CacheControl{Type: "ephemeral"}}}}
	}
	five[6] = llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{llms.CachedContent{ContentPart: in[6].Parts[0]}}}
	got = newDialect(ClientAnthropic).messages(five)
	var sent []int
	for i, m := range got {
		for _, p := range m.Parts {
			if c, ok := p.(llms.CachedContent); ok && c.CacheControl != nil {
				sent = append(sent, i)
			}
		}
	}
	if !reflect.DeepEqual(sent, []int{1, 3, 4, 5}) || got[2].Parts[0] != in[2].Parts[0] {
		t.Fatalf("with five of the caller's marks: sent %v, message 2 %#v", sent, got[2].Parts)
	}
	if _, ok := five[2].Parts[0].(llms.CachedContent); !ok {
		t.Fatal("the caller's messages were changed")
	}

	// No other client marks, or copies what needs no shaping.
	for _, c := range []Client{ClientOpenAI, ClientGoogleAI, ClientOllama, ClientMistral} {
		msgs := in[:7]
		if got := newDialect(c).messages(msgs); marked(got) != nil || &got[0] != &msgs[0] {
			t.Fatalf("%s: marked %v", c, marked(got))
		}
	}
}
