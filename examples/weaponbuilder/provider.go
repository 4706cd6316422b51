package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/tmc/langchaingo/llms/openai"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// The providers of -provider.
const (
	providerAuto      = ""          // OpenAI when OPENAI_API_KEY is set, else offline
	providerOffline   = "offline"   // the scripted armorer
	providerOpenAI    = "openai"    // OPENAI_API_KEY, OPENAI_BASE_URL
	providerAnthropic = "anthropic" // ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
	providerGemini    = "gemini"    // GEMINI_API_KEY (or GOOGLE_API_KEY), GEMINI_BASE_URL
	providerOllama    = "ollama"    // OLLAMA_HOST, through its OpenAI-compatible /v1
)

// providers lists the values of -provider, for its usage text.
var providers = []string{providerOffline, providerOpenAI, providerAnthropic, providerGemini, providerOllama}

// defaultModels are the model names used when CHATGEN_MODEL is unset.
var defaultModels = map[string]string{
	providerOpenAI:    "gpt-4o-mini",
	providerAnthropic: "claude-sonnet-4-5",
	providerGemini:    "gemini-2.5-flash",
	providerOllama:    "llama3.2",
}

// modelFor returns the model of provider, configured from getenv (the
// keys in the usual environment variables; CHATGEN_MODEL names the model),
// and a description of the choice. Each goes through langchaingo's own
// client for the provider, except Ollama: its native client cannot carry
// tool calls, so the armorer talks to Ollama's OpenAI-compatible endpoint
// through the OpenAI client (see docs/models.md).
func modelFor(ctx context.Context, provider string, getenv func(string) string) (llms.Model, string, error) {
	if provider == providerAuto {
		provider = providerOffline
		if getenv("OPENAI_API_KEY") != "" {
			provider = providerOpenAI
		}
	}
	name := getenv("CHATGEN_MODEL")
	if name == "" {
		name = defaultModels[provider]
	}
	need := func(vars ...string) (string, error) {
		for _, v := range vars {
			if s := getenv(v); s != "" {
				return s, nil
			}
		}
		return "", fmt.Errorf("-provider %s needs %s set", provider, strings.Join(vars, " or "))
	}
	switch provider {
	case providerOffline:
		return llmtest.NewModel(llmtest.ScriptFunc(playArmorer), nil), "the offline scripted armorer (-provider chooses a real model)", nil
	case providerOpenAI:
		key, err := need("OPENAI_API_KEY")
		if err != nil {
			return nil, "", err
		}
		opts := []openai.Option{openai.WithToken(key), openai.WithModel(name)}
		where := "OpenAI"
		if base := getenv("OPENAI_BASE_URL"); base != "" {
			opts = append(opts, openai.WithBaseURL(base))
			where = base
		}
		m, err := openai.New(opts...)
		if err != nil {
			return nil, "", fmt.Errorf("creating the OpenAI client: %w", err)
		}
		return m, fmt.Sprintf("%s at %s", name, where), nil
	case providerAnthropic:
		key, err := need("ANTHROPIC_API_KEY")
		if err != nil {
			return nil, "", err
		}
		opts := []anthropic.Option{anthropic.WithToken(key), anthropic.WithModel(name)}
		where := "Anthropic"
		if base := getenv("ANTHROPIC_BASE_URL"); base != "" {
			opts = append(opts, anthropic.WithBaseURL(base))
			where = base
		}
		m, err := anthropic.New(opts...)
		if err != nil {
			return nil, "", fmt.Errorf("creating the Anthropic client: %w", err)
		}
		return m, fmt.Sprintf("%s at %s", name, where), nil
	case providerGemini:
		key, err := need("GEMINI_API_KEY", "GOOGLE_API_KEY")
		if err != nil {
			return nil, "", err
		}
		// Through ai.Transport, which reads the usage of the whole call
		// (Google's SDK keeps a stream's first usageMetadata, the
		// prompt's count only); Google's transport adds the key on top.
		rt, err := htransport.NewTransport(ctx, ai.Transport(nil), option.WithAPIKey(key))
		if err != nil {
			return nil, "", fmt.Errorf("creating the Google AI transport: %w", err)
		}
		opts := []googleai.Option{
			googleai.WithAPIKey(key),
			googleai.WithHTTPClient(&http.Client{Transport: rt}),
			googleai.WithDefaultModel(name),
		}
		where := "Google AI"
		if base := getenv("GEMINI_BASE_URL"); base != "" {
			opts = append(opts, func(o *googleai.Options) {
				o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(base))
			})
			where = base
		}
		m, err := googleai.New(ctx, opts...)
		if err != nil {
			return nil, "", fmt.Errorf("creating the Google AI client: %w", err)
		}
		return m, fmt.Sprintf("%s at %s", name, where), nil
	case providerOllama:
		host := getenv("OLLAMA_HOST")
		if host == "" {
			host = "http://localhost:11434"
		}
		if !strings.Contains(host, "://") {
			host = "http://" + host
		}
		base := strings.TrimSuffix(host, "/") + "/v1"
		m, err := openai.New(openai.WithToken("ollama"), openai.WithModel(name), openai.WithBaseURL(base))
		if err != nil {
			return nil, "", fmt.Errorf("creating the OpenAI client for Ollama: %w", err)
		}
		return m, fmt.Sprintf("%s at Ollama (%s)", name, base), nil
	}
	return nil, "", fmt.Errorf("unknown -provider %q: use one of %s", provider, strings.Join(providers, ", "))
}
