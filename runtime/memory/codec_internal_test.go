package memory

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// reflectMarshal is MarshalMessages as it was before appendMessages: the
// wire form through json.Marshal. appendMessages must write its bytes.
func reflectMarshal(msgs []llms.MessageContent) ([]byte, error) {
	w := make([]wireMessage, len(msgs))
	for i, m := range msgs {
		w[i].Role = m.Role
		if m.Parts == nil {
			continue
		}
		w[i].Parts = make([]*wirePart, len(m.Parts))
		for j, p := range m.Parts {
			wp, err := toWire(p)
			if err != nil {
				return nil, err
			}
			w[i].Parts[j] = wp
		}
	}
	return json.Marshal(w)
}

// trickyTexts are strings whose JSON needs escapes: quotes, backslashes,
// control characters, HTML, invalid UTF-8, U+2028/U+2029, DEL, non-ASCII.
var trickyTexts = []string{
	"", "plain", `q"uote`, `back\slash`, "\b\f\n\r\t\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "\xff\xfeab\xc3", "a\u2028b\u2029c", "héllo, 世界 🙂",
	"{\"json\": [1, 2]}", "\xe2\x80", "end\\",
}

func TestAppendMessagesIsJSON(t *testing.T) {
	var msgs []llms.MessageContent
	for _, s := range trickyTexts {
		msgs = append(msgs,
			llms.MessageContent{Role: llms.ChatMessageType(s), Parts: []llms.ContentPart{llms.TextContent{Text: s}}},
			llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
				&llms.TextContent{Text: s},
				llms.ToolCall{ID: s, Type: "function", FunctionCall: &llms.FunctionCall{Name: s, Arguments: s}},
				llms.ToolCall{ID: s},
			}},
			llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: s, Name: s, Content: s},
				llms.ImageURLContent{URL: s, Detail: s},
				llms.BinaryContent{MIMEType: s, Data: []byte(s)},
				llms.CachedContent{ContentPart: llms.TextContent{Text: s}, CacheControl: &llms.CacheControl{Type: s, Duration: 5}},
				llms.CachedContent{ContentPart: nil},
				nil,
			}},
			llms.MessageContent{Role: llms.ChatMessageTypeHuman},
			llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{}},
		)
	}
	for _, in := range [][]llms.MessageContent{nil, {}, msgs[:1], msgs} {
		checkSameAsReflect(t, in)
	}
}

// checkSameAsReflect fails t unless MarshalMessages writes the bytes of
// reflectMarshal for in.
func checkSameAsReflect(t *testing.T, in []llms.MessageContent) {
	t.Helper()
	want, err := reflectMarshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MarshalMessages(in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("MarshalMessages(%d messages):\n got %s\nwant %s", len(in), got, want)
	}
}

func TestAppendMessagesErrorKeepsDst(t *testing.T) {
	dst := []byte("prefix")
	got, err := appendMessages(dst, []llms.MessageContent{{Role: "ai", Parts: []llms.ContentPart{llms.TextContent{Text: "x"}, unsupportedPart{}}}})
	if err == nil {
		t.Fatal("no error for an unsupported part")
	}
	if string(got) != "prefix" {
		t.Fatalf("dst after error: %q", got)
	}
}

// unsupportedPart is a part of a type toWire does not know.
type unsupportedPart struct{ llms.TextContent }

func FuzzAppendMessagesIsJSON(f *testing.F) {
	for _, s := range trickyTexts {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, role, text string) {
		checkSameAsReflect(t, []llms.MessageContent{{Role: llms.ChatMessageType(role), Parts: []llms.ContentPart{
			llms.TextContent{Text: text}, llms.ToolCallResponse{Content: text},
		}}})
	})
}

// BenchmarkMarshalMessages encodes a window of 20 chat messages (what the
// in-memory conversation store writes each turn of BenchmarkConcurrentTurns)
// with MarshalMessages and with the reflective encoding it replaced.
func BenchmarkMarshalMessages(b *testing.B) {
	msgs := make([]llms.MessageContent, 0, 20)
	for range 10 {
		msgs = append(msgs,
			llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?"),
			llms.TextParts(llms.ChatMessageTypeAI, "It is sunny in Paris."))
	}
	for _, enc := range []struct {
		name string
		fn   func([]llms.MessageContent) ([]byte, error)
	}{{"append", MarshalMessages}, {"reflect", reflectMarshal}} {
		b.Run(enc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := enc.fn(msgs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
