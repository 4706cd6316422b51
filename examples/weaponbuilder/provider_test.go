package main

import (
	"context"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// env returns a getenv over vars.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestProviderFlag drives each -provider's client against a loopback
// server that speaks its wire.
func TestProviderFlag(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(llmtest.Sequence(llmtest.Reply{Text: "Hail."}, llmtest.Reply{Text: "Hail again."}), nil)
	defer srv.Close()
	claude := llmtest.NewAnthropicServer(llmtest.Sequence(llmtest.Reply{Text: "Hail."}), &llmtest.Options{ModelName: "claude-sonnet-4-5"})
	defer claude.Close()
	gemini := llmtest.NewGeminiServer(llmtest.Sequence(llmtest.Reply{Text: "Hail."}), &llmtest.Options{ModelName: "gemini-2.5-flash"})
	defer gemini.Close()
	for _, tc := range []struct {
		provider string
		vars     map[string]string
		model    string
		client   ai.Client
		srv      interface{ Requests() []llmtest.Request }
	}{
		{providerOpenAI, map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": srv.URL}, "gpt-4o-mini", ai.ClientOpenAI, srv},
		{providerOllama, map[string]string{"OLLAMA_HOST": strings.TrimSuffix(srv.URL, "/v1"), "CHATGEN_MODEL": "qwen3"}, "qwen3", ai.ClientOpenAI, srv},
		{providerAnthropic, map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": claude.URL}, "claude-sonnet-4-5", ai.ClientAnthropic, claude},
		{providerGemini, map[string]string{"GEMINI_API_KEY": "k", "GEMINI_BASE_URL": gemini.URL}, "gemini-2.5-flash", ai.ClientGoogleAI, gemini},
	} {
		m, about, err := modelFor(ctx, tc.provider, env(tc.vars))
		if err != nil {
			t.Fatalf("%s: %v", tc.provider, err)
		}
		if got := ai.NewService("x.S", &ai.Config{Model: m}).Client(); got != tc.client {
			t.Errorf("%s: client %v, want %v", tc.provider, got, tc.client)
		}
		if _, err := llms.GenerateFromSinglePrompt(ctx, m, "hi"); err != nil {
			t.Fatalf("%s (%s): %v", tc.provider, about, err)
		}
		reqs := tc.srv.Requests()
		if got := reqs[len(reqs)-1].Model; got != tc.model {
			t.Errorf("%s: model %q, want %q", tc.provider, got, tc.model)
		}
	}
	for _, tc := range []struct{ provider, want string }{
		{providerAnthropic, "needs ANTHROPIC_API_KEY"},
		{providerGemini, "needs GEMINI_API_KEY or GOOGLE_API_KEY"},
		{"claude", `unknown -provider "claude"`},
	} {
		if _, _, err := modelFor(ctx, tc.provider, env(nil)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("-provider %s without its key: %v, want %q", tc.provider, err, tc.want)
		}
	}
	m, about, err := modelFor(ctx, providerAuto, env(nil))
	if _, offline := m.(*llmtest.Model); err != nil || !offline {
		t.Fatalf("no provider, no key: %T %q %v", m, about, err)
	}
}

// TestGeminiProviderUsage: the -provider gemini client counts the whole
// call's usage (Google's SDK alone reports the prompt's count of a
// stream's first response).
func TestGeminiProviderUsage(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewGeminiServer(llmtest.Sequence(llmtest.Reply{
		Text:  "Hail, smith.",
		Usage: llmtest.Usage{PromptTokens: 20, CompletionTokens: 12},
	}), &llmtest.Options{ModelName: "gemini-2.5-flash"})
	defer srv.Close()
	m, _, err := modelFor(ctx, providerGemini, env(map[string]string{"GEMINI_API_KEY": "k", "GEMINI_BASE_URL": srv.URL}))
	if err != nil {
		t.Fatal(err)
	}
	svc := ai.NewService("x.S", &ai.Config{Model: m})
	reply, err := svc.Chat(ctx, &ai.Request{Method: &ai.Method{Name: "Ask", System: "Be brief."}, MemoryID: "m", User: "Hi!"})
	if err != nil {
		t.Fatal(err)
	}
	if u := reply.Usage; u.PromptTokens != 20 || u.CompletionTokens != 12 || u.TotalTokens != 32 {
		t.Fatalf("usage %+v, want the whole call's: 20 + 12 = 32", u)
	}
}
