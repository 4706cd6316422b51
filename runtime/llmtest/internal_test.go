package llmtest

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want int
	}{
		{"", 0}, {"a", 1}, {"abcd", 1}, {"abcde", 2}, {strings.Repeat("x", 400), 100}, {"héllo", 2},
	} {
		if got := EstimateTokens(tc.s); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.s, got, tc.want)
		}
	}
	m := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
		llms.TextContent{Text: "abcdefgh"}, // 2
		llms.ToolCall{ID: "ignored", FunctionCall: &llms.FunctionCall{Name: "abc", Arguments: "{}"}}, // 1 + 1
		llms.ImageURLContent{URL: "http://x"},                                                        // 85
	}}
	if got := EstimateMessageTokens(m); got != 4+2+2+85 {
		t.Errorf("EstimateMessageTokens = %d", got)
	}
	tr := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: "id", Name: "ignored", Content: "12345"},
	}}
	if got := EstimateMessageTokens(tr); got != 4+2 {
		t.Errorf("EstimateMessageTokens(tool) = %d", got)
	}
	tool := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: "abcd", Description: "abcdefgh", Parameters: map[string]any{"type": "object"},
	}}
	// {"type":"object"} is 17 bytes: 5 tokens.
	if got := EstimatePromptTokens([]llms.MessageContent{tr}, []llms.Tool{tool}); got != 6+4+1+2+5 {
		t.Errorf("EstimatePromptTokens = %d", got)
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
