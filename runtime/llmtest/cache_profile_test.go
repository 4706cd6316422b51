package llmtest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// TestModelProfiles: every profile is complete (rules, minimum, lifetime,
// the four prices, a dated source), Anthropic's prices follow its
// multipliers (writes 1.25×, reads 0.1× the input price), and a model
// name finds its profile, dated versions included.
func TestModelProfiles(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range llmtest.ModelProfiles() {
		pr := p.Prices
		switch {
		case seen[p.Name] || p.Name == "":
			t.Errorf("profile %q: empty or repeated name", p.Name)
		case p.Rules != llmtest.CacheRulesAnthropic && p.Rules != llmtest.CacheRulesOpenAI:
			t.Errorf("%s: rules %q", p.Name, p.Rules)
		case p.MinCacheTokens < 1024 || p.CacheTTL <= 0:
			t.Errorf("%s: minimum %d, TTL %v", p.Name, p.MinCacheTokens, p.CacheTTL)
		case pr.Input <= 0 || pr.CacheRead <= 0 || pr.CacheRead >= pr.Input || pr.CacheWrite < pr.Input || pr.Output <= pr.Input:
			t.Errorf("%s: prices %+v", p.Name, pr)
		case !strings.Contains(p.Source, "https://") || !strings.Contains(p.Source, "2026-12-02"):
			t.Errorf("%s: source %q has no address or date", p.Name, p.Source)
		case p.Rules == llmtest.CacheRulesAnthropic && (pr.CacheWrite != pr.Input*1.25 || pr.CacheRead != pr.Input/10):
			t.Errorf("%s: Anthropic bills writes at 1.25× and reads at 0.1×: %+v", p.Name, pr)
		}
		seen[p.Name] = true
		if got, ok := llmtest.LookupModelProfile(p.Model + "-20251001"); !ok || got.Name != p.Name {
			t.Errorf("LookupModelProfile(%q) = %q, %v; want %q", p.Model+"-20251001", got.Name, ok, p.Name)
		}
	}
	for model, want := range map[string]int{
		"claude-sonnet-4-5": 1024, "claude-sonnet-4-6": 2048, "claude-opus-4-5-20251101": 4096, "claude-opus-4-6": 4096,
		"claude-haiku-4-5": 4096, "claude-3-5-haiku-20241022": 2048, "gpt-4o-mini": 1024, "gpt-5": 1024,
	} {
		if p, ok := llmtest.LookupModelProfile(model); !ok || p.MinCacheTokens != want {
			t.Errorf("LookupModelProfile(%q) = %+v, %v; want a minimum of %d", model, p, ok, want)
		}
	}
	if p, ok := llmtest.LookupModelProfile("claude-sonnet-4-50"); ok {
		t.Errorf("claude-sonnet-4-50 matched %q: only the name or the name and a dash match", p.Name)
	}
	if got := (llmtest.Prices{Input: 3, CacheWrite: 3.75, CacheRead: 0.3, Output: 15}).Bill(1e6, 1e6, 1e6, 1e6); got < 22.04 || got > 22.06 {
		t.Errorf("Bill of a million of each = %v, want 22.05", got)
	}
}

// TestPromptCacheMinimumFromProfile: the simulated Anthropic cache writes
// a prefix only from the minimum of the requested model's profile: a
// prefix of about 3,000 tokens is written for Sonnet 4.5 (1,024) and
// Sonnet 4.6 (2,048), not for Haiku 4.5 or Opus 4.5 (4,096), whatever the
// name says ("haiku" alone decided before); one of 2,000 not for Haiku
// 3.5 (2,048); a model without a profile takes 1,024; MinTokens overrides
// the profile.
func TestPromptCacheMinimumFromProfile(t *testing.T) {
	for _, c := range []struct {
		model     string
		tokens    int
		minTokens int
		written   bool
	}{
		{"claude-sonnet-4-5", 3000, 0, true},
		{"claude-sonnet-4-6", 3000, 0, true},
		{"claude-sonnet-4-6", 1500, 0, false},
		{"claude-haiku-4-5-20251001", 3000, 0, false},
		{"claude-haiku-4-5", 4300, 0, true},
		{"claude-opus-4-5", 3000, 0, false},
		{"claude-opus-4-6", 3000, 0, false},
		{"claude-3-5-haiku-20241022", 2000, 0, false},
		{"claude-3-5-haiku-20241022", 2200, 0, true},
		{"claude-unknown", 1100, 0, true},
		{"claude-haiku-4-5", 3000, 2048, true},
	} {
		model := llmtest.NewModel(llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), &llmtest.Options{
			ModelName:   c.model,
			PromptCache: &llmtest.PromptCache{Rules: llmtest.CacheRulesAnthropic, MinTokens: c.minTokens, Now: newClock().Now},
		})
		msgs := []llms.MessageContent{system(longText(c.tokens)), {Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{cached("q")}}}
		if _, err := model.GenerateContent(context.Background(), msgs); err != nil {
			t.Fatal(err)
		}
		if got := model.Requests()[0].Cache.WriteTokens > 0; got != c.written {
			t.Errorf("%s, %d tokens, MinTokens %d: written %v, want %v", c.model, c.tokens, c.minTokens, got, c.written)
		}
	}
}
