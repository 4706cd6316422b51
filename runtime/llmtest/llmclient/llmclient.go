// Package llmclient builds langchaingo's provider clients pointed at the
// loopback servers of package llmtest, configured as a test needs them:
// a test key, the server's model name and, where the client takes one, an
// HTTP client whose idle connections the server's Close closes.
//
// It is a package of its own so that importing llmtest does not link every
// provider's client (and, for Gemini, Google's API libraries) into the
// programs and tests that only need the in-process Model or the OpenAI
// Server; import llmclient only where the real provider clients are meant
// to be driven.
//
// Each function applies its defaults first, so opts may override them.
package llmclient

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/tmc/langchaingo/llms/mistral"
	"github.com/tmc/langchaingo/llms/ollama"
	"google.golang.org/api/option"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// TestKey is the API key every client of this package sends.
const TestKey = "llmtest-key"

// Anthropic returns langchaingo's anthropic client pointed at srv.
func Anthropic(srv *llmtest.AnthropicServer, opts ...anthropic.Option) (*anthropic.LLM, error) {
	base := []anthropic.Option{
		anthropic.WithBaseURL(srv.URL),
		anthropic.WithToken(TestKey),
		anthropic.WithModel(srv.ModelName()),
		anthropic.WithHTTPClient(srv.HTTPClient()),
	}
	llm, err := anthropic.New(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("llmclient: creating the anthropic client: %w", err)
	}
	return llm, nil
}

// GoogleAI returns langchaingo's googleai client pointed at srv: the
// generative-ai-go REST client with the API key and srv.URL as its
// endpoint (googleai.WithHTTPClient would bypass the key, which the server
// requires). Close it when done.
func GoogleAI(ctx context.Context, srv *llmtest.GeminiServer, opts ...googleai.Option) (*googleai.GoogleAI, error) {
	base := []googleai.Option{
		googleai.WithAPIKey(TestKey),
		googleai.WithDefaultModel(srv.ModelName()),
		func(o *googleai.Options) {
			o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL))
		},
	}
	llm, err := googleai.New(ctx, append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("llmclient: creating the googleai client: %w", err)
	}
	return llm, nil
}

// Ollama returns langchaingo's ollama client pointed at srv.
func Ollama(srv *llmtest.OllamaServer, opts ...ollama.Option) (*ollama.LLM, error) {
	base := []ollama.Option{
		ollama.WithServerURL(srv.URL),
		ollama.WithModel(srv.ModelName()),
		ollama.WithHTTPClient(srv.HTTPClient()),
	}
	llm, err := ollama.New(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("llmclient: creating the ollama client: %w", err)
	}
	return llm, nil
}

// Mistral returns langchaingo's mistral client pointed at srv, with one
// try per call (the SDK retries 429 and 5xx answers five times by default,
// sleeping between tries, and would replay the script). The SDK makes its
// own HTTP client for every call.
func Mistral(srv *llmtest.MistralServer, opts ...mistral.Option) (*mistral.Model, error) {
	base := []mistral.Option{
		mistral.WithEndpoint(srv.URL),
		mistral.WithAPIKey(TestKey),
		mistral.WithModel(srv.ModelName()),
		mistral.WithMaxRetries(1),
	}
	llm, err := mistral.New(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("llmclient: creating the mistral client: %w", err)
	}
	return llm, nil
}
