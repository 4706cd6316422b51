package ai_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/googleai"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
)

// newGeminiWithTransport returns langchaingo's googleai client pointed at
// srv through ai.Transport, as ai.Transport's doc tells users to build
// it: Google's transport adds the API key over ai.Transport, and the
// client takes it as its HTTP client (and the key again, for its cache
// client, which generative-ai-go builds without the HTTP client).
func newGeminiWithTransport(t *testing.T, srv *llmtest.GeminiServer) llms.Model {
	t.Helper()
	ctx := context.Background()
	rt, err := htransport.NewTransport(ctx, ai.Transport(srv.HTTPClient().Transport), option.WithAPIKey(llmclient.TestKey))
	if err != nil {
		t.Fatal(err)
	}
	llm, err := googleai.New(ctx,
		googleai.WithAPIKey(llmclient.TestKey),
		googleai.WithDefaultModel(srv.ModelName()),
		googleai.WithHTTPClient(&http.Client{Transport: rt}),
		func(o *googleai.Options) { o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL)) },
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llm.Close() })
	return llm
}

// TestGeminiUsageWholeCall: Gemini sends usageMetadata in every response
// of a stream, the prompt's before the last and the whole call's in the
// last, and Google's SDK keeps the first; through ai.Transport, a turn's
// usage (its Reply's, its invoke_agent span's, each chat span's) counts
// every model call whole, once, streamed or not, with text and tools.
func TestGeminiUsageWholeCall(t *testing.T) {
	text := llmtest.Sequence(llmtest.Reply{Text: "Hello there, brave new world.", Usage: llmtest.Usage{PromptTokens: 20, CompletionTokens: 12}})
	tool := func() llmtest.Script {
		return llmtest.Sequence(
			llmtest.Reply{Text: "Let me check.", ToolCalls: []llmtest.ToolCall{call("weather", `{"city":"Paris"}`)},
				Usage: llmtest.Usage{PromptTokens: 30, CompletionTokens: 8}},
			llmtest.Reply{Text: "It is sunny in Paris today.", Usage: llmtest.Usage{PromptTokens: 25, CompletionTokens: 10}},
		)
	}
	cases := []struct {
		name   string
		script func() llmtest.Script
		want   ai.Usage
		calls  []ai.Usage
	}{
		{"text", func() llmtest.Script { text.Reset(); return text }, ai.Usage{PromptTokens: 20, CompletionTokens: 12, TotalTokens: 32},
			[]ai.Usage{{PromptTokens: 20, CompletionTokens: 12, TotalTokens: 32}}},
		{"tool", tool, ai.Usage{PromptTokens: 55, CompletionTokens: 18, TotalTokens: 73},
			[]ai.Usage{{PromptTokens: 30, CompletionTokens: 8, TotalTokens: 38}, {PromptTokens: 25, CompletionTokens: 10, TotalTokens: 35}}},
	}
	for _, tc := range cases {
		for _, streamed := range []bool{false, true} {
			name := tc.name
			if streamed {
				name += "/streamed"
			}
			t.Run(name, func(t *testing.T) {
				srv := llmtest.NewGeminiServer(tc.script(), &llmtest.Options{ModelName: "gemini-2.5-flash"})
				t.Cleanup(srv.Close)
				spans := tracetest.NewSpanRecorder()
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
				f := newFixture(t, newGeminiWithTransport(t, srv), &ai.Config{Telemetry: ai.Telemetry{TracerProvider: tp}})
				ctx := begin(t)
				req := f.req("Weather in Paris?")
				if streamed {
					if _, err := collect(f.svc.Stream(ctx, req)); err != nil {
						t.Fatal(err)
					}
				} else {
					r, err := f.svc.Chat(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					if r.Usage != tc.want {
						t.Fatalf("usage %+v, want %+v", r.Usage, tc.want)
					}
				}
				var chats []ai.Usage
				for _, s := range spans.Ended() {
					in, _ := spanInt(s, "gen_ai.usage.input_tokens")
					out, _ := spanInt(s, "gen_ai.usage.output_tokens")
					u := ai.Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
					switch {
					case strings.HasPrefix(s.Name(), "chat"):
						chats = append(chats, u)
					case strings.HasPrefix(s.Name(), "invoke_agent"):
						if u != tc.want {
							t.Errorf("invoke_agent span: usage %+v, want %+v", u, tc.want)
						}
					}
				}
				if len(chats) != len(tc.calls) {
					t.Fatalf("%d chat spans, want %d", len(chats), len(tc.calls))
				}
				for i, u := range chats {
					if u != tc.calls[i] {
						t.Errorf("chat span %d: usage %+v, want %+v", i, u, tc.calls[i])
					}
				}
				// Several responses each time: the first's usage is not the call's.
				if n := len(srv.Requests()); n != len(tc.calls) {
					t.Fatalf("%d requests", n)
				}
			})
		}
	}
}

// TestGeminiUsageWithoutTransport: without ai.Transport the googleai
// client's usage is the first response's, the prompt's; the service says
// so in a warning, once, and counts what the client reported.
func TestGeminiUsageWithoutTransport(t *testing.T) {
	reply := llmtest.Reply{Text: "Hello there, brave new world.", Usage: llmtest.Usage{PromptTokens: 20, CompletionTokens: 12}}
	srv := llmtest.NewGeminiServer(llmtest.Sequence(reply, reply), &llmtest.Options{ModelName: "gemini-2.5-flash"})
	t.Cleanup(srv.Close)
	llm, err := llmclient.GoogleAI(context.Background(), srv)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = llm.Close() })
	f := newFixture(t, llm, &ai.Config{})
	ctx := begin(t)
	for range 2 {
		r, err := f.svc.Chat(ctx, f.req("hello"))
		if err != nil {
			t.Fatal(err)
		}
		if want := (ai.Usage{PromptTokens: 20, TotalTokens: 20}); r.Usage != want {
			t.Fatalf("usage %+v, want %+v", r.Usage, want)
		}
	}
	if n := strings.Count(f.logs.String(), "give the client ai.Transport"); n != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", n, f.logs.String())
	}
}
