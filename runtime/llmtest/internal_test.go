package llmtest

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/memory"
)

func TestEstimateTextTokens(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {strings.Repeat("x", 400), 100}, {"héllo", 2},
	} {
		if got := EstimateTextTokens(tc.s); got != tc.want {
			t.Errorf("EstimateTextTokens(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
}

func TestEstimateBilledTokens(t *testing.T) {
	m := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
		llms.TextContent{Text: "abcdefgh"}, // 8 bytes
		llms.ToolCall{ID: "ignored", Type: "ignored", FunctionCall: &llms.FunctionCall{Name: "abc", Arguments: "{}"}}, // 5
		llms.ImageURLContent{URL: "http://x"},                                                   // an image: 85
		llms.BinaryContent{MIMEType: "image/png", Data: make([]byte, 10_000)},                   // an image: 85
		llms.CachedContent{ContentPart: llms.ToolCallResponse{Name: "ignored", Content: "xyz"}}, // 3
	}}
	if got, want := EstimateBilledTokens(m), 4+16/4+2*85; got != want { // 16 bytes: 4 tokens
		t.Errorf("EstimateBilledTokens = %d, want %d", got, want)
	}
	tr := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: "id", Name: "ignored", Content: "12345"},
	}}
	if got := EstimateBilledTokens(tr); got != 4+2 {
		t.Errorf("EstimateBilledTokens(tool) = %d", got)
	}
	tool := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: "abcd", Description: "abcdefgh", Parameters: map[string]any{"type": "object"},
	}}
	// {"type":"object"} is 17 bytes: 5 tokens.
	if got := EstimatePromptTokens([]llms.MessageContent{tr}, []llms.Tool{tool}); got != 6+4+1+2+5 {
		t.Errorf("EstimatePromptTokens = %d", got)
	}
}

// TestBilledTokensAgreeWithMemory pins the relation documented in
// tokens.go: the billed estimate is memory.EstimateTokens of what is
// billed. It agrees on text, and on messages without what it leaves out.
func TestBilledTokensAgreeWithMemory(t *testing.T) {
	for _, m := range []llms.MessageContent{
		{Role: llms.ChatMessageTypeHuman},
		llms.TextParts(llms.ChatMessageTypeHuman, ""),
		llms.TextParts(llms.ChatMessageTypeHuman, "héllo wörld, a longer text of several tokens"),
		llms.TextParts(llms.ChatMessageTypeSystem, "a", "bc", "def"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.TextContent{Text: "Let me look."},
			llms.ToolCall{FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}},
		}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{Content: "sunny"}}},
	} {
		if got, want := EstimateBilledTokens(m), memory.EstimateTokens(m); got != want {
			t.Errorf("%v: EstimateBilledTokens = %d, memory.EstimateTokens = %d", m, got, want)
		}
	}
}

func TestSplitWords(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want []string
	}{
		{"", nil},
		{"one", []string{"one"}},
		{"one two  three\nfour ", []string{"one ", "two  ", "three\n", "four "}},
		{"  lead", []string{"  ", "lead"}},
	} {
		got := splitWords(tc.s)
		if !reflect.DeepEqual(got, tc.want) || strings.Join(got, "") != tc.s {
			t.Errorf("splitWords(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

func TestSplitFragments(t *testing.T) {
	for _, s := range []string{"", "{}", `{"city":"Paris"}`, `{"name":"ünïcødé ✓✓✓"}`} {
		got := splitFragments(s)
		if strings.Join(got, "") != s {
			t.Errorf("splitFragments(%q) = %q does not join back", s, got)
		}
		for _, f := range got {
			if f == "" || len(f) > argumentFragmentSize+utf8.UTFMax-1 || !utf8.ValidString(f) {
				t.Errorf("splitFragments(%q): bad fragment %q", s, f)
			}
		}
	}
}

func TestValidateHistory(t *testing.T) {
	call := func(ids ...string) llms.MessageContent {
		m := llms.MessageContent{Role: llms.ChatMessageTypeAI}
		for _, id := range ids {
			m.Parts = append(m.Parts, llms.ToolCall{ID: id, Type: "function", FunctionCall: &llms.FunctionCall{Name: "f"}})
		}
		return m
	}
	result := func(id string) llms.MessageContent {
		return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: id}}}
	}
	user := llms.TextParts(llms.ChatMessageTypeHuman, "hi")
	for _, tc := range []struct {
		name string
		msgs []llms.MessageContent
		want string
	}{
		{"empty", nil, "must not be empty"},
		{"plain", []llms.MessageContent{user, llms.TextParts(llms.ChatMessageTypeAI, "hello"), user}, ""},
		{"answered in any order", []llms.MessageContent{user, call("a", "b"), result("b"), result("a"), user}, ""},
		{"dangling at end", []llms.MessageContent{user, call("a", "b"), result("a")}, "messages[1]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; the following tool_call_ids did not have response messages: b"},
		{"dangling before user", []llms.MessageContent{user, call("a"), user}, "did not have response messages: a"},
		{"orphan", []llms.MessageContent{user, result("a")}, "messages[1]: messages with role 'tool' must be a response"},
		{"stale id", []llms.MessageContent{user, call("a"), result("a"), user, call("b"), result("a")}, `tool_call_id "a" answers no call`},
		{"twice", []llms.MessageContent{user, call("a"), result("a"), result("a")}, `"a" is answered twice`},
		{"no id", []llms.MessageContent{user, call(""), result("")}, "messages[1]: tool call without id"},
		{"no tool_call_id", []llms.MessageContent{user, call("a"), result("")}, "messages[2]: tool message without tool_call_id"},
	} {
		got := validateHistory(tc.msgs)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
