package ai

import (
	"reflect"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// TestCacheMarksLimit: with a limit, the Anthropic client's breakpoints go
// on the human messages before it only; the limit is carried across the
// shaping that splits an AI message with text and tool calls into several
// (the human messages keep their order); a limit of 0 marks nothing, and
// a negative one everything as before.
func TestCacheMarksLimit(t *testing.T) {
	d := newDialect(ClientAnthropic)
	h := func(s string) llms.MessageContent { return llms.TextParts(llms.ChatMessageTypeHuman, s) }
	msgs := append(turnMessages(), h("second"), llms.TextParts(llms.ChatMessageTypeAI, "ok"), h("third"))
	// msgs: 0 system, 1 human, 2 ai (text and 2 calls), 3-4 tool, 5 ai, 6 human, 7 ai, 8 human.
	for _, c := range []struct {
		limit int
		want  []string
	}{
		{-1, []string{"Weather in Paris and Rome?", "second", "third"}},
		{8, []string{"Weather in Paris and Rome?", "second"}},
		{7, []string{"Weather in Paris and Rome?", "second"}},
		{6, []string{"Weather in Paris and Rome?"}},
		{2, []string{"Weather in Paris and Rome?"}},
		{0, nil},
	} {
		got := d.messagesMarked(msgs, c.limit)
		if len(got) == len(msgs) {
			t.Fatalf("limit %d: the AI message with tool calls was not split: the test shows nothing", c.limit)
		}
		var texts []string
		for _, m := range got {
			for _, p := range m.Parts {
				if cc, ok := p.(llms.CachedContent); ok && cc.CacheControl != nil {
					texts = append(texts, cc.ContentPart.(llms.TextContent).Text)
				}
			}
		}
		if !reflect.DeepEqual(texts, c.want) {
			t.Errorf("limit %d: marked %q, want %q", c.limit, texts, c.want)
		}
	}
}
