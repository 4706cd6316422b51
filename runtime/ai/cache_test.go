package ai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// cacheServer is a loopback server of one provider's wire with a
// simulated prompt cache, and langchaingo's client for it.
type cacheServer struct {
	name string
	// start starts the server with opts and returns the client and the
	// server's recorded requests.
	start func(t *testing.T, script llmtest.Script, opts *llmtest.Options) (llms.Model, func() []llmtest.Request)
}

// withModelName returns a copy of opts (which may be nil) naming the model
// name.
func withModelName(opts *llmtest.Options, name string) *llmtest.Options {
	var o llmtest.Options
	if opts != nil {
		o = *opts
	}
	o.ModelName = name
	return &o
}

// cacheServers are the wires whose clients report prompt-cache figures.
var cacheServers = []cacheServer{
	{"openai", func(t *testing.T, script llmtest.Script, opts *llmtest.Options) (llms.Model, func() []llmtest.Request) {
		srv := llmtest.NewServer(script, opts)
		t.Cleanup(srv.Close)
		llm, err := srv.Client()
		if err != nil {
			t.Fatal(err)
		}
		return llm, srv.Requests
	}},
	{"anthropic", func(t *testing.T, script llmtest.Script, opts *llmtest.Options) (llms.Model, func() []llmtest.Request) {
		srv := llmtest.NewAnthropicServer(script, withModelName(opts, "claude-sonnet-4-5"))
		t.Cleanup(srv.Close)
		llm, err := llmclient.Anthropic(srv)
		if err != nil {
			t.Fatal(err)
		}
		return llm, srv.Requests
	}},
	{"googleai", func(t *testing.T, script llmtest.Script, opts *llmtest.Options) (llms.Model, func() []llmtest.Request) {
		srv := llmtest.NewGeminiServer(script, withModelName(opts, "gemini-2.5-flash"))
		t.Cleanup(srv.Close)
		llm, err := llmclient.GoogleAI(context.Background(), srv)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = llm.Close() })
		return llm, srv.Requests
	}},
}

// spanInt returns the int attribute key of span, and whether it is set.
func spanInt(span sdktrace.ReadOnlySpan, key attribute.Key) (int, bool) {
	for _, a := range span.Attributes() {
		if a.Key == key {
			return int(a.Value.AsInt64()), true
		}
	}
	return 0, false
}

// TestCacheUsageFromEachClient: the cache figures each client reports
// reach Result.Usage and the chat span (gen_ai.usage.cache_read and
// cache_creation input tokens), the prompt counting the cached tokens
// with every client (Anthropic's input_tokens does not).
func TestCacheUsageFromEachClient(t *testing.T) {
	script := func() llmtest.Script {
		return llmtest.Sequence(llmtest.Reply{Text: "Hi.", Usage: llmtest.Usage{
			PromptTokens: 2000, CompletionTokens: 7, CacheReadTokens: 1500, CacheWriteTokens: 300,
		}})
	}
	for _, cs := range cacheServers {
		t.Run(cs.name, func(t *testing.T) {
			llm, _ := cs.start(t, script(), nil)
			spans := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
			svc := ai.NewService(svcName, &ai.Config{Model: llm, Logger: slog.New(slog.DiscardHandler),
				Telemetry: ai.Telemetry{TracerProvider: tp}})
			r, err := svc.Chat(context.Background(), &ai.Request{Method: &ai.Method{Name: "Ask", System: "Be terse."}, MemoryID: "m", User: "hello"})
			if err != nil {
				t.Fatal(err)
			}
			want := ai.Usage{PromptTokens: 2000, CompletionTokens: 7, TotalTokens: 2007, CacheReadTokens: 1500}
			if cs.name == "anthropic" {
				want.CacheWriteTokens = 300 // only Anthropic reports writes
			}
			if r.Usage != want {
				t.Fatalf("usage %+v, want %+v", r.Usage, want)
			}
			var chat sdktrace.ReadOnlySpan
			for _, s := range spans.Ended() {
				if strings.HasPrefix(s.Name(), "chat") {
					chat = s
				}
			}
			if chat == nil {
				t.Fatal("no chat span")
			}
			if n, _ := spanInt(chat, "gen_ai.usage.input_tokens"); n != 2000 {
				t.Fatalf("input tokens %d, want 2000", n)
			}
			if n, _ := spanInt(chat, "gen_ai.usage.cache_read.input_tokens"); n != 1500 {
				t.Fatalf("cache read %d, want 1500", n)
			}
			n, ok := spanInt(chat, "gen_ai.usage.cache_creation.input_tokens")
			if n != want.CacheWriteTokens || ok != (want.CacheWriteTokens > 0) {
				t.Fatalf("cache creation %d (set %v), want %d", n, ok, want.CacheWriteTokens)
			}
		})
	}
}

// TestCacheUsageSimulated: over several turns of one conversation, each
// client's provider (simulated) reads the stable prefix from its cache,
// and the turn's usage says so, matching what the server did. Anthropic
// reads only what the service marked with breakpoints.
func TestCacheUsageSimulated(t *testing.T) {
	system := strings.Repeat("You are the armorer's assistant; answer briefly and precisely. ", 80) // ~1,300 tokens
	for _, cs := range cacheServers {
		t.Run(cs.name, func(t *testing.T) {
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			llm, requests := cs.start(t, llmtest.Rules().WithFallback(llmtest.Reply{Text: "Noted."}), &llmtest.Options{PromptCache: &llmtest.PromptCache{Now: func() time.Time { return now }}})
			svc := ai.NewService(svcName, &ai.Config{Model: llm, Logger: slog.New(slog.DiscardHandler)})
			m := &ai.Method{Name: "Ask", System: system}
			var read, write int
			for i, user := range []string{"one", "two", "three", "four"} {
				r, err := svc.Chat(context.Background(), &ai.Request{Method: m, MemoryID: "m", User: user})
				if err != nil {
					t.Fatal(err)
				}
				req := requests()[i]
				if r.Usage.PromptTokens != req.PromptTokens || r.Usage.CacheReadTokens != req.Cache.ReadTokens || r.Usage.CacheWriteTokens != req.Cache.WriteTokens {
					t.Fatalf("turn %d: usage %+v, the server estimated %d and cached %+v", i, r.Usage, req.PromptTokens, req.Cache)
				}
				if i > 0 && r.Usage.CacheReadTokens < 1024 {
					t.Fatalf("turn %d read %d tokens from the cache, want the system prompt at least", i, r.Usage.CacheReadTokens)
				}
				read += r.Usage.CacheReadTokens
				write += r.Usage.CacheWriteTokens
			}
			if cs.name == "anthropic" && write == 0 {
				t.Fatal("nothing written to Anthropic's cache")
			}
		})
	}
}

// TestRequestsExtendOneAnother: over the OpenAI wire, every request of a
// method, across turns and tool loops, sends the tools byte for byte as
// the first did, and starts with the messages of the request before it,
// byte for byte: a prompt cache serves each one the previous one.
func TestRequestsExtendOneAnother(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}},
		llmtest.Reply{Text: "Sunny in Paris."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "add", Arguments: `{"a":1,"b":2}`}}},
		llmtest.Reply{Text: "3."},
		llmtest.Reply{Text: "Bye."},
	), &ai.Config{})
	for _, user := range []string{"weather in Paris?", "1+2?", "bye"} {
		req := f.req(user) // a new Method each turn, as the same generated one
		req.MemoryID = "m"
		if _, err := f.svc.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	type body struct {
		Messages []json.RawMessage `json:"messages"`
		Tools    json.RawMessage   `json:"tools"`
	}
	var prev body
	if n := len(f.requests()); n != 5 {
		t.Fatalf("%d requests, want 5", n)
	}
	for i, r := range f.requests() {
		var b body
		if err := json.Unmarshal(r.Body, &b); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if !bytes.Equal(b.Tools, prev.Tools) {
				t.Fatalf("request %d: tools\n%s\nwant\n%s", i, b.Tools, prev.Tools)
			}
			if len(b.Messages) <= len(prev.Messages) {
				t.Fatalf("request %d has %d messages, the one before %d", i, len(b.Messages), len(prev.Messages))
			}
			for j, m := range prev.Messages {
				if !bytes.Equal(m, b.Messages[j]) {
					t.Fatalf("request %d: message %d is\n%s\nwas\n%s", i, j, b.Messages[j], m)
				}
			}
		}
		prev = b
	}
}

// TestCallerBreakpointsAtMostFour: breakpoints a model hook places on
// every user message reach Anthropic through langchaingo's real client,
// never more than the 4 it takes (llmtest's server refuses a fifth, as
// Anthropic does): with more, the first and the last three are sent, and
// the service adds none of its own.
func TestCallerBreakpointsAtMostFour(t *testing.T) {
	srv, llm := sonnetServer(t, notedScript())
	markAll := func(next ai.ModelHandler) ai.ModelHandler {
		return func(ctx context.Context, call *ai.ModelCall) (*llms.ContentResponse, error) {
			msgs := make([]llms.MessageContent, len(call.Messages))
			for i, m := range call.Messages {
				msgs[i] = m
				if m.Role == llms.ChatMessageTypeHuman {
					msgs[i].Parts = []llms.ContentPart{llms.CachedContent{ContentPart: m.Parts[0], CacheControl: anthropic.EphemeralCache()}}
				}
			}
			call.Messages = msgs
			return next(ctx, call)
		}
	}
	svc := ai.NewService(svcName, &ai.Config{Model: llm, Logger: slog.New(slog.DiscardHandler),
		ModelHooks: []ai.ModelHook{markAll}, Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(20, nil)})})
	m := &ai.Method{Name: "Ask", System: "Be terse."}
	users := []string{"one", "two", "three", "four", "five", "six"}
	for i, user := range users {
		if _, err := svc.Chat(context.Background(), &ai.Request{Method: m, MemoryID: "m", User: user}); err != nil {
			t.Fatalf("turn %d (%d breakpoints placed): %v", i+1, i+1, err)
		}
		var sent []string
		for _, msg := range srv.Requests()[i].Messages {
			for _, p := range msg.Parts {
				if c, ok := p.(llms.CachedContent); ok {
					sent = append(sent, c.ContentPart.(llms.TextContent).Text)
				}
			}
		}
		want := users[:i+1]
		if len(want) > 4 {
			want = append([]string{want[0]}, want[len(want)-3:]...)
		}
		if !slices.Equal(sent, want) {
			t.Fatalf("turn %d: breakpoints on %q, want %q", i+1, sent, want)
		}
	}
}

// TestPerRequestSystemPromptNeverRead pins what the docs say of a system
// prompt that changes per request: through Anthropic's wire and its
// simulated cache, every turn writes the prompt and none reads it; the
// same template with the same data reads it.
func TestPerRequestSystemPromptNeverRead(t *testing.T) {
	long := strings.Repeat("You are the armorer's assistant; answer briefly and precisely. ", 80) // ~1,300 tokens
	tmpl := template.Must(template.New("system").Parse("The user is {{.name}}. " + long))
	for _, varies := range []bool{true, false} {
		t.Run(fmt.Sprintf("varies=%v", varies), func(t *testing.T) {
			now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			anthropicWire := cacheServers[slices.IndexFunc(cacheServers, func(c cacheServer) bool { return c.name == "anthropic" })]
			llm, _ := anthropicWire.start(t, llmtest.Rules().WithFallback(llmtest.Reply{Text: "Noted."}), &llmtest.Options{PromptCache: &llmtest.PromptCache{Now: func() time.Time { return now }}})
			svc := ai.NewService(svcName, &ai.Config{Model: llm, Logger: slog.New(slog.DiscardHandler)})
			m := &ai.Method{Name: "Ask", SystemTemplate: tmpl}
			for i, user := range []string{"one", "two", "three"} {
				name := "Ada"
				if varies {
					name = fmt.Sprintf("Ada at %d", i)
				}
				r, err := svc.Chat(context.Background(), &ai.Request{Method: m, MemoryID: "m", User: user, Data: map[string]any{"name": name}})
				if err != nil {
					t.Fatal(err)
				}
				if r.Usage.CacheWriteTokens == 0 && (varies || i == 0) {
					t.Fatalf("turn %d wrote nothing to the cache: %+v", i, r.Usage)
				}
				if read := r.Usage.CacheReadTokens; (read == 0) != (varies || i == 0) {
					t.Fatalf("turn %d read %d tokens from the cache", i, read)
				}
			}
		})
	}
}
