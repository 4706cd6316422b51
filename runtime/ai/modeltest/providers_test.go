package modeltest_test

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/runtime/ai/modeltest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
)

// The clients of langchaingo v0.1.14 the suite runs against, each pointed
// at a loopback server of runtime/llmtest that speaks its provider's wire
// and refuses what the provider refuses.
func providerClients() []modeltest.Client {
	return []modeltest.Client{
		{
			Name:     "openai",
			Tools:    true,
			Thinking: true,
			New: func(t *testing.T, script llmtest.Script) (llms.Model, modeltest.Recorder) {
				srv := llmtest.NewServer(script, nil)
				t.Cleanup(srv.Close)
				llm, err := srv.Client()
				if err != nil {
					t.Fatal(err)
				}
				return llm, srv
			},
		},
		{
			Name:     "anthropic",
			Tools:    true,
			Thinking: true,
			// Thinking needs a model the client knows reasons (the
			// server's name), a budget under max_tokens and temperature 1.
			ThinkingOptions: []llms.CallOption{llms.WithMaxTokens(4096), llms.WithTemperature(1), llms.WithThinkingMode(llms.ThinkingModeLow)},
			Limitations: map[string]string{
				"ThinkingWithTools": "anthropicllm.go:386 handleAIMessage cannot send a thinking block back, and Anthropic wants the assistant turn of a tool loop to start with one",
			},
			New: func(t *testing.T, script llmtest.Script) (llms.Model, modeltest.Recorder) {
				srv := llmtest.NewAnthropicServer(script, &llmtest.Options{ModelName: "claude-sonnet-4-5"})
				t.Cleanup(srv.Close)
				llm, err := llmclient.Anthropic(srv)
				if err != nil {
					t.Fatal(err)
				}
				return llm, srv
			},
		},
		{
			Name:     "googleai",
			Tools:    true,
			Thinking: true,
			New: func(t *testing.T, script llmtest.Script) (llms.Model, modeltest.Recorder) {
				srv := llmtest.NewGeminiServer(script, nil)
				t.Cleanup(srv.Close)
				llm, err := llmclient.GoogleAI(context.Background(), srv)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = llm.Close() })
				return llm, srv
			},
			Limitations: map[string]string{
				"Thinking":          "googleai.go:136 convertCandidates keeps no thought parts, and generative-ai-go v0.15.1 cannot ask for them (no thinkingConfig)",
				"ThinkingWithTools": "googleai.go:136 convertCandidates keeps no thought parts",
			},
		},
		{
			Name:     "ollama",
			Thinking: true,
			New: func(t *testing.T, script llmtest.Script) (llms.Model, modeltest.Recorder) {
				srv := llmtest.NewOllamaServer(script, nil)
				t.Cleanup(srv.Close)
				llm, err := llmclient.Ollama(srv)
				if err != nil {
					t.Fatal(err)
				}
				return llm, srv
			},
			Limitations: map[string]string{
				"Thinking": "ollamallm.go:327 puts think in the model options, where Ollama ignores it, not in the request",
			},
		},
		{
			// The OpenAI client on Mistral's OpenAI-compatible endpoint,
			// which enforces Mistral's rules.
			Name:  "openai→mistral",
			Tools: true,
			New: func(t *testing.T, script llmtest.Script) (llms.Model, modeltest.Recorder) {
				srv := llmtest.NewMistralServer(script, nil)
				t.Cleanup(srv.Close)
				llm, err := openai.New(openai.WithBaseURL(srv.URL+"/v1"), openai.WithToken(llmclient.TestKey),
					openai.WithModel(srv.ModelName()), openai.WithHTTPClient(srv.HTTPClient()))
				if err != nil {
					t.Fatal(err)
				}
				return llm, srv
			},
		},
		{
			Name:     "mistral",
			Thinking: true,
			New: func(t *testing.T, script llmtest.Script) (llms.Model, modeltest.Recorder) {
				srv := llmtest.NewMistralServer(script, nil)
				t.Cleanup(srv.Close)
				llm, err := llmclient.Mistral(srv)
				if err != nil {
					t.Fatal(err)
				}
				return llm, srv
			},
			Limitations: map[string]string{
				"Thinking": "mistralmodel.go:69 GenerateContent passes no reasoning on",
			},
		},
	}
}
