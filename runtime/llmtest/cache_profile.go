package llmtest

import (
	"strings"
	"time"
)

// Prices are a model's list prices in US dollars per million tokens
// (MTok), as its provider bills them.
type Prices struct {
	// Input is the price of an uncached input token.
	Input float64
	// CacheWrite is the price of an input token written to the prompt
	// cache (Anthropic's 5-minute writes, 1.25× Input); OpenAI bills
	// writes as uncached input, so for it CacheWrite equals Input.
	CacheWrite float64
	// CacheRead is the price of an input token read from the cache.
	CacheRead float64
	// Output is the price of an output token.
	Output float64
}

// Bill returns the price in US dollars of a call that sent uncached,
// written and read input tokens and received output tokens.
func (p Prices) Bill(uncached, written, read, output int) float64 {
	return (p.Input*float64(uncached) + p.CacheWrite*float64(written) + p.CacheRead*float64(read) + p.Output*float64(output)) / 1e6
}

// ModelProfile is a provider's model as a prompt cache and a price list
// see it: the cache's rules, shortest cacheable prompt and lifetime, and
// the model's prices. [ModelProfiles] lists the profiles the package knows;
// [PromptCache] takes its minimum from the profile of the requested model.
type ModelProfile struct {
	// Name is a short name for tables ("sonnet-4.5").
	Name string
	// Rules are the provider's cache rules: CacheRulesOpenAI or
	// CacheRulesAnthropic.
	Rules CacheRules
	// Model is the provider's model name ("claude-sonnet-4-5"); a
	// requested name equal to it or starting with it and a dash (a dated
	// version, "claude-sonnet-4-5-20250929") matches the profile.
	Model string
	// MinCacheTokens is the shortest prompt (OpenAI) or prefix up to a
	// breakpoint (Anthropic) that is cached.
	MinCacheTokens int
	// CacheTTL is how long an entry lives after its last use: Anthropic's
	// default 5 minutes; for OpenAI, the short end of its documented
	// in-memory retention (5 to 10 minutes of inactivity, at most an hour).
	CacheTTL time.Duration
	// Prices are the model's list prices.
	Prices Prices
	// Source is where the minimum and the prices were read, and when.
	Source string
}

// PromptCache returns the configuration of a simulated cache with the
// profile's rules, minimum and lifetime, on the clock now (nil means
// time.Now).
func (p ModelProfile) PromptCache(now func() time.Time) *PromptCache {
	return &PromptCache{Rules: p.Rules, TTL: p.CacheTTL, MinTokens: p.MinCacheTokens, Now: now}
}

// The sources of the profiles, read on 2026-12-02.
const (
	anthropicSource = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching (minimum cacheable prompt length), " +
		"https://platform.claude.com/docs/en/about-claude/pricing (prices), read 2026-12-02"
	openAISource = "https://platform.openai.com/docs/guides/prompt-caching (1,024 tokens, then 128-token steps; in-memory retention " +
		"5 to 10 minutes of inactivity, up to one hour), https://openai.com/api/pricing (prices), read 2026-12-02"
)

// ModelProfiles returns the model profiles the package knows, read from
// the providers' pages on 2026-12-02 (see each Source):
//
//	profile      model               minimum  TTL    input  write  read    output ($/MTok)
//	sonnet-4.5   claude-sonnet-4-5   1,024    5 min  3      3.75   0.30    15
//	sonnet-4.6   claude-sonnet-4-6   2,048    5 min  3      3.75   0.30    15
//	opus-4.5     claude-opus-4-5     4,096    5 min  5      6.25   0.50    25
//	opus-4.6     claude-opus-4-6     4,096    5 min  5      6.25   0.50    25
//	haiku-4.5    claude-haiku-4-5    4,096    5 min  1      1.25   0.10    5
//	haiku-3.5    claude-3-5-haiku    2,048    5 min  0.80   1      0.08    4
//	gpt-4o       gpt-4o              1,024    5 min  2.50   2.50   1.25    10
//	gpt-4.1      gpt-4.1             1,024    5 min  2      2      0.50    8
//	gpt-5        gpt-5               1,024    5 min  1.25   1.25   0.125   10
//
// Opus 4.6's minimum: third-party copies of Anthropic's table disagree
// (1,024 in some); the provider's table lists it with Opus 4.5 and Haiku
// 4.5 at 4,096. Anthropic's 1-hour writes (2× input) are not in the
// table: a breakpoint with "ttl":"1h" is simulated, but billing it is the
// caller's business. The result is a new slice the caller owns.
func ModelProfiles() []ModelProfile {
	anth := func(name, model string, minTokens int, in, out float64) ModelProfile {
		return ModelProfile{
			Name: name, Rules: CacheRulesAnthropic, Model: model, MinCacheTokens: minTokens, CacheTTL: DefaultCacheTTL,
			Prices: Prices{Input: in, CacheWrite: in * 1.25, CacheRead: in / 10, Output: out}, Source: anthropicSource,
		}
	}
	oai := func(name, model string, in, read, out float64) ModelProfile {
		return ModelProfile{
			Name: name, Rules: CacheRulesOpenAI, Model: model, MinCacheTokens: 1024, CacheTTL: DefaultCacheTTL,
			Prices: Prices{Input: in, CacheWrite: in, CacheRead: read, Output: out}, Source: openAISource,
		}
	}
	return []ModelProfile{
		anth("sonnet-4.5", "claude-sonnet-4-5", 1024, 3, 15),
		anth("sonnet-4.6", "claude-sonnet-4-6", 2048, 3, 15),
		anth("opus-4.5", "claude-opus-4-5", 4096, 5, 25),
		anth("opus-4.6", "claude-opus-4-6", 4096, 5, 25),
		anth("haiku-4.5", "claude-haiku-4-5", 4096, 1, 5),
		anth("haiku-3.5", "claude-3-5-haiku", 2048, 0.80, 4),
		oai("gpt-4o", "gpt-4o", 2.50, 1.25, 10),
		oai("gpt-4.1", "gpt-4.1", 2, 0.50, 8),
		oai("gpt-5", "gpt-5", 1.25, 0.125, 10),
	}
}

// LookupModelProfile returns the profile of model (see
// [ModelProfile.Model]) among [ModelProfiles], and whether there is one.
// The longest matching model name wins. A dated or variant name matches
// its family's profile ("gpt-4o-mini" matches gpt-4o's, whose minimum is
// the mini's too, but not its prices).
func LookupModelProfile(model string) (ModelProfile, bool) {
	m := strings.ToLower(model)
	var best ModelProfile
	found := false
	for _, p := range ModelProfiles() {
		if (m == p.Model || strings.HasPrefix(m, p.Model+"-")) && len(p.Model) > len(best.Model) {
			best, found = p, true
		}
	}
	return best, found
}
