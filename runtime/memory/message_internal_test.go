package memory

import (
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// clonePart copies p with a copier that has no room reserved, as a copier
// does for parts it was not sized for.
func clonePart(p llms.ContentPart) llms.ContentPart {
	var c copier
	return c.part(p)
}

func partsForEquality() []llms.ContentPart {
	return []llms.ContentPart{
		llms.TextContent{Text: "t"},
		llms.ImageURLContent{URL: "u", Detail: "low"},
		llms.BinaryContent{MIMEType: "image/png", Data: []byte{1, 2}},
		llms.ToolCall{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"}},
		llms.ToolCall{ID: "c", Type: "function"},
		llms.ToolCallResponse{ToolCallID: "c", Name: "f", Content: "r"},
		llms.CachedContent{ContentPart: llms.TextContent{Text: "t"}, CacheControl: &llms.CacheControl{Type: "ephemeral", Duration: time.Minute}},
		llms.CachedContent{ContentPart: llms.TextContent{Text: "t"}},
		nil,
	}
}

func TestEqualParts(t *testing.T) {
	parts := partsForEquality()
	for i, a := range parts {
		for j, b := range partsForEquality() {
			if got := equalParts(a, b); got != (i == j) {
				t.Errorf("equalParts(%#v, %#v) = %v", a, b, got)
			}
		}
		if !equalParts(a, clonePart(a)) {
			t.Errorf("part %#v differs from its clone", a)
		}
	}
	// Pointers compare as their values; nil and empty data are equal.
	tc := llms.TextContent{Text: "t"}
	if !equalParts(&tc, tc) || equalParts((*llms.TextContent)(nil), tc) || !equalParts((*llms.ToolCall)(nil), nil) {
		t.Error("pointer parts")
	}
	if !equalParts(llms.BinaryContent{}, llms.BinaryContent{Data: []byte{}}) {
		t.Error("nil and empty binary data differ")
	}
	for _, p := range []llms.ContentPart{
		&llms.TextContent{Text: "t"}, &llms.ImageURLContent{URL: "u"}, &llms.BinaryContent{Data: []byte{1}},
		&llms.ToolCall{ID: "c"}, &llms.ToolCallResponse{ToolCallID: "c"}, &llms.CachedContent{ContentPart: llms.TextContent{}},
	} {
		c := clonePart(p)
		if !equalParts(p, c) {
			t.Errorf("clone of %#v = %#v", p, c)
		}
		if c != nil && derefPart(c) != nil && isPointer(c) {
			t.Errorf("clone of %T is still a pointer", p)
		}
	}
	if !equalMessages(llms.MessageContent{Role: "ai"}, llms.MessageContent{Role: "ai", Parts: []llms.ContentPart{}}) {
		t.Error("nil and empty parts differ")
	}
	if equalMessages(llms.TextParts("ai", "x"), llms.TextParts("human", "x")) {
		t.Error("roles ignored")
	}
}

func isPointer(p llms.ContentPart) bool {
	switch p.(type) {
	case *llms.TextContent, *llms.ImageURLContent, *llms.BinaryContent, *llms.ToolCall, *llms.ToolCallResponse, *llms.CachedContent:
		return true
	}
	return false
}

func TestClonePartIsDeep(t *testing.T) {
	fc := &llms.FunctionCall{Name: "f"}
	tc := clonePart(llms.ToolCall{FunctionCall: fc}).(llms.ToolCall)
	fc.Name = "changed"
	if tc.FunctionCall.Name != "f" {
		t.Error("tool call shares its function call")
	}
	data := []byte{1}
	bc := clonePart(llms.BinaryContent{Data: data}).(llms.BinaryContent)
	data[0] = 2
	if bc.Data[0] != 1 {
		t.Error("binary content shares its data")
	}
	cc := &llms.CacheControl{Type: "a"}
	c := clonePart(llms.CachedContent{ContentPart: llms.BinaryContent{Data: data}, CacheControl: cc}).(llms.CachedContent)
	cc.Type, data[0] = "b", 3
	if c.CacheControl.Type != "a" || c.ContentPart.(llms.BinaryContent).Data[0] != 2 {
		t.Error("cached content is shallow")
	}
}

func TestEstimateTokensAllParts(t *testing.T) {
	m := llms.MessageContent{Role: "human", Parts: []llms.ContentPart{
		llms.ImageURLContent{URL: "1234", Detail: "5678"},                     // 8
		llms.BinaryContent{MIMEType: "ab", Data: []byte{1, 2}},                // 4
		llms.CachedContent{ContentPart: llms.TextContent{Text: "1234"}},       // 4
		&llms.ToolCallResponse{ToolCallID: "1", Name: "2", Content: "3"},      // 3
		llms.ToolCall{ID: "1", Type: "2", FunctionCall: &llms.FunctionCall{}}, // 2
		nil, // 0
	}}
	if got, want := EstimateTokens(m), (21+3)/4+MessageOverheadTokens; got != want {
		t.Fatalf("EstimateTokens = %d, want %d", got, want)
	}
}
