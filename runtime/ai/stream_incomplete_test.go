package ai_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/runtime/ai"
)

// brokenStreamServer is an OpenAI-compatible endpoint whose streamed
// answers end wrongly, as a proxy or a crashing provider can make them: the
// body closes cleanly with no finish reason and no [DONE], or its only data
// line is not JSON. A non-streamed call is answered properly.
func brokenStreamServer(t *testing.T, body string) *openai.LLM {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	llm, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken("test"), openai.WithModel("broken"))
	if err != nil {
		t.Fatal(err)
	}
	return llm
}

// A stream that ends without a finish reason, or that holds nothing a
// model sends, is not a complete answer: the stream fails (a route then
// fails with StreamingFailure) and memory keeps nothing of the turn.
func TestIncompleteStreamsFailAndCommitNothing(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"no finish reason, no [DONE]",
			`data: {"id":"c1","object":"chat.completion.chunk","model":"broken","choices":[{"index":0,"delta":{"role":"assistant","content":"Half an ans"},"finish_reason":null}]}` + "\n\n"},
		{"only data line not JSON", "data: this is not json\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, brokenStreamServer(t, tc.body), &ai.Config{})
			ctx := begin(t)
			_, err := collect(f.svc.Stream(ctx, f.req("hi")))
			if !errors.Is(err, ai.ErrIncompleteStream) {
				t.Fatalf("stream error %v, want ErrIncompleteStream", err)
			}
			wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)))
		})
	}
}
