package ai

import (
	"io"
	"strings"
	"testing"
)

// TestUsageBodyScan: the scanner finds the usageMetadata of each
// response, in a JSON array or in server-sent events, read in pieces of
// any size, whatever the strings around it hold, and passes the body
// through unchanged.
func TestUsageBodyScan(t *testing.T) {
	first := `{"candidates":[{"content":{"role":"model","parts":[{"text":"a \"usageMetadata\": {\"totalTokenCount\": 999} }]"}]}}],` +
		`"usageMetadata":{"promptTokenCount":20,"totalTokenCount":20},"modelVersion":"g"}`
	last := `{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"w","args":{"usageMetadata":{"totalTokenCount":1}}}}]},"finishReason":1}],` +
		`"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":12,"thoughtsTokenCount":3,"cachedContentTokenCount":8,` +
		`"promptTokensDetails":[{"modality":1,"tokenCount":20}],"totalTokenCount":35},"modelVersion":"g"}`
	want := geminiUsage{Prompt: 20, Candidates: 12, Thoughts: 3, Cached: 8, Total: 35}
	bodies := map[string]string{
		"array": "[" + first + ",\r\n" + last + "]",
		"sse":   "data: " + first + "\r\n\r\ndata: " + last + "\r\n\r\n",
	}
	for name, body := range bodies {
		for _, size := range []int{1, 7, 4096} {
			rec := new(httpRecord)
			b := &usageBody{ReadCloser: io.NopCloser(strings.NewReader(body)), rec: rec}
			var got strings.Builder
			buf := make([]byte, size)
			for {
				n, err := b.Read(buf)
				got.Write(buf[:n])
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if got.String() != body {
				t.Fatalf("%s/%d: the body changed", name, size)
			}
			if u, ok := rec.geminiUsage(); !ok || u != want {
				t.Fatalf("%s/%d: usage %+v (%v), want %+v", name, size, u, ok, want)
			}
		}
	}
	// A stream cut after its first response: the prompt's.
	rec := new(httpRecord)
	b := &usageBody{ReadCloser: io.NopCloser(strings.NewReader("[" + first + ",\r\n" + last[:len(last)/2])), rec: rec}
	if _, err := io.ReadAll(b); err != nil {
		t.Fatal(err)
	}
	if u, _ := rec.geminiUsage(); u != (geminiUsage{Prompt: 20, Total: 20}) {
		t.Fatalf("cut: usage %+v", u)
	}
}

// TestGeminiUsageApply: the usage read off the wire replaces the
// client's, cache figures included, and the dialect reads the thoughts
// as output.
func TestGeminiUsageApply(t *testing.T) {
	info := map[string]any{"PromptTokens": int32(20), "CompletionTokens": int32(0), "TotalTokens": int32(20),
		"CachedTokens": int32(8), "CacheReadInputTokens": int32(8), "NonCachedInputTokens": int32(12)}
	geminiUsage{Prompt: 20, Candidates: 12, Thoughts: 3, ToolPrompt: 5, Total: 40}.apply(info)
	if u := newDialect(ClientGoogleAI).usage(info); u != (Usage{PromptTokens: 25, CompletionTokens: 15, TotalTokens: 40}) {
		t.Fatalf("usage %+v", u)
	}
	geminiUsage{Prompt: 20, Candidates: 12, Cached: 8, Total: 32}.apply(info)
	if u := newDialect(ClientGoogleAI).usage(info); u != (Usage{PromptTokens: 20, CompletionTokens: 12, TotalTokens: 32, CacheReadTokens: 8}) {
		t.Fatalf("usage %+v", u)
	}
}
