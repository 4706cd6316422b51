package llmtest

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/memory"
)

// CacheRules names the prompt-cache rules of a provider that a simulated
// prompt cache ([Options.PromptCache]) follows.
type CacheRules string

// The providers' prompt-cache rules the simulation knows.
const (
	// CacheRulesWire follows the rules of the provider whose wire the
	// server speaks: OpenAI's for a [Server] and the in-process [Model],
	// Anthropic's for an [AnthropicServer], Gemini's for a [GeminiServer].
	// The [MistralServer] and the [OllamaServer] have no prompt cache (their
	// wires report none).
	CacheRulesWire CacheRules = ""
	// CacheRulesOpenAI is OpenAI's automatic prefix caching: a prompt of
	// at least MinTokens (1,024) tokens is cached; a later prompt that
	// starts with the same content reads the longest cached prefix, rounded
	// down to 1,024 tokens plus a multiple of 128. Nothing is reported as
	// written.
	CacheRulesOpenAI CacheRules = "openai"
	// CacheRulesAnthropic is Anthropic's explicit caching: only the
	// prefixes that end at a block carrying cache_control (a breakpoint;
	// at most 4 per request) are written, when they are at least
	// MinTokens long (the model's profile's minimum, see ModelProfiles:
	// 1,024 tokens on Sonnet 4.5, 2,048 on Sonnet 4.6 and Haiku 3.5, 4,096
	// on Opus 4.5 and 4.6 and Haiku 4.5; 1,024 for a model without one).
	// For each breakpoint the cache looks for a prefix written before
	// that ends at the breakpoint or at one of the 20 block boundaries
	// before it; the longest found is read, and everything from there to
	// the last breakpoint is written.
	CacheRulesAnthropic CacheRules = "anthropic"
	// CacheRulesGemini is Gemini's implicit caching: as OpenAI's, without
	// the 128-token increments, from MinTokens (1,024 tokens; 4,096 for a
	// model whose name holds "pro").
	CacheRulesGemini CacheRules = "gemini"
)

// DefaultCacheTTL is how long a simulated cache entry lives after its last
// use unless [PromptCache.TTL] says otherwise: 5 minutes, the default of
// every provider.
const DefaultCacheTTL = 5 * time.Minute

// anthropicLookback is how many block boundaries before a breakpoint
// Anthropic's cache looks back for a prefix written earlier.
const anthropicLookback = 20

// maxCacheBreakpoints is the most blocks with cache_control one Anthropic
// request may carry.
const maxCacheBreakpoints = 4

// PromptCache configures the prompt cache a [Model] or server simulates
// (see [Options.PromptCache]).
type PromptCache struct {
	// Rules are the provider rules to follow; CacheRulesWire (the zero
	// value) follows the provider whose wire the server speaks.
	Rules CacheRules
	// TTL is how long an entry lives after it was last written or read;
	// 0 means DefaultCacheTTL. An Anthropic breakpoint with "ttl":"1h"
	// writes entries that live an hour.
	TTL time.Duration
	// MinTokens is the shortest prefix that is cached; 0 means the
	// minimum of the requested model's profile ([LookupModelProfile]),
	// else the provider's default (see the CacheRules constants).
	MinTokens int
	// Now is the clock the TTL is measured with; nil means time.Now. Tests
	// pass a fake clock to expire entries without sleeping.
	Now func() time.Time
}

// CacheUse is what a simulated prompt cache did for one request.
type CacheUse struct {
	// ReadTokens is the prompt prefix read from the cache.
	ReadTokens int
	// WriteTokens is the part of the prompt written to the cache (only
	// Anthropic reports writes; it bills them).
	WriteTokens int
}

// cacheBlock is one block of a prompt as a cache sees it.
type cacheBlock struct {
	// key identifies the prompt up to and including this block.
	key [sha256.Size]byte
	// tokens is the size of the prompt up to and including this block.
	tokens int
	// breakpoint: the block carries cache_control (Anthropic); ttl is its
	// requested lifetime, 0 for the default.
	breakpoint bool
	ttl        time.Duration
}

// promptCache is a simulated prompt cache: the prefixes written, by key,
// with their expiry.
type promptCache struct {
	cfg   PromptCache
	rules CacheRules

	mu      sync.Mutex
	entries map[[sha256.Size]byte]time.Time
	writes  int
}

// newPromptCache returns the cache of pc for a wire whose own rules are
// wire; nil when pc is nil or the wire has no cache.
func newPromptCache(pc *PromptCache, wire CacheRules) *promptCache {
	if pc == nil {
		return nil
	}
	rules := pc.Rules
	if rules == CacheRulesWire {
		rules = wire
	}
	if rules == CacheRulesWire {
		return nil
	}
	c := &promptCache{cfg: *pc, rules: rules, entries: map[[sha256.Size]byte]time.Time{}}
	if c.cfg.TTL <= 0 {
		c.cfg.TTL = DefaultCacheTTL
	}
	if c.cfg.Now == nil {
		c.cfg.Now = time.Now
	}
	return c
}

// minTokens is the shortest cached prefix for model: PromptCache.MinTokens,
// else the minimum of the model's profile ([LookupModelProfile]) when it
// has the cache's rules, else 1,024 (4,096 for a Gemini model whose name
// holds "pro").
func (c *promptCache) minTokens(model string) int {
	if c.cfg.MinTokens > 0 {
		return c.cfg.MinTokens
	}
	if p, ok := LookupModelProfile(model); ok && p.Rules == c.rules {
		return p.MinCacheTokens
	}
	if c.rules == CacheRulesGemini && strings.Contains(strings.ToLower(model), "pro") {
		return 4096
	}
	return 1024
}

// use looks the prompt of req up in the cache and writes its prefixes, by
// the cache's rules, and returns what was read and written.
func (c *promptCache) use(req *Request) CacheUse {
	blocks := cacheBlocks(req.Messages, req.Tools, req.toolBreakpoints)
	if len(blocks) == 0 {
		return CacheUse{}
	}
	minTokens := c.minTokens(req.Model)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	live := func(k [sha256.Size]byte) bool {
		exp, ok := c.entries[k]
		return ok && now.Before(exp)
	}
	put := func(k [sha256.Size]byte, ttl time.Duration) {
		if ttl <= 0 {
			ttl = c.cfg.TTL
		}
		if exp, ok := c.entries[k]; !ok || exp.Before(now.Add(ttl)) {
			c.entries[k] = now.Add(ttl)
		}
		c.writes++
	}
	var u CacheUse
	if c.rules == CacheRulesAnthropic {
		u = c.useAnthropic(blocks, minTokens, live, put)
	} else {
		// Automatic prefix caching: the longest live prefix is read, and
		// a prompt long enough is cached whole, block by block.
		for i := len(blocks) - 1; i >= 0; i-- {
			if live(blocks[i].key) {
				u.ReadTokens = blocks[i].tokens
				break
			}
		}
		if u.ReadTokens < minTokens {
			u.ReadTokens = 0
		}
		if c.rules == CacheRulesOpenAI && u.ReadTokens > 0 {
			u.ReadTokens = minTokens + (u.ReadTokens-minTokens)/128*128
		}
		if blocks[len(blocks)-1].tokens >= minTokens {
			for _, b := range blocks {
				put(b.key, 0)
			}
		}
	}
	c.sweep(now)
	return u
}

// useAnthropic applies Anthropic's rules to blocks.
func (c *promptCache) useAnthropic(blocks []cacheBlock, minTokens int, live func([sha256.Size]byte) bool, put func([sha256.Size]byte, time.Duration)) CacheUse {
	var u CacheUse
	last := -1
	for i, b := range blocks {
		if !b.breakpoint {
			continue
		}
		last = i
		for j := i; j >= max(0, i-anthropicLookback); j-- {
			if live(blocks[j].key) {
				if blocks[j].tokens > u.ReadTokens {
					u.ReadTokens = blocks[j].tokens
					put(blocks[j].key, 0) // a read refreshes the entry
				}
				break
			}
		}
	}
	if last < 0 {
		return u
	}
	for i := 0; i <= last; i++ {
		if b := blocks[i]; b.breakpoint && b.tokens >= minTokens && !live(b.key) {
			put(b.key, b.ttl)
		}
	}
	if end := blocks[last].tokens; end >= minTokens && end > u.ReadTokens {
		u.WriteTokens = end - u.ReadTokens
	}
	return u
}

// sweep drops expired entries now and then, so a long run does not grow
// the map without bound.
func (c *promptCache) sweep(now time.Time) {
	if c.writes < 4096 {
		return
	}
	c.writes = 0
	for k, exp := range c.entries {
		if !now.Before(exp) {
			delete(c.entries, k)
		}
	}
}

// cacheBlocks returns the blocks of a prompt: each tool, then each content
// part of each message, keyed on everything up to it and sized with the
// package's estimates, so the last block's size is EstimatePromptTokens.
// toolBreaks marks the tools that carry cache_control (Anthropic's wire);
// the parts that do are llms.CachedContent.
func cacheBlocks(msgs []llms.MessageContent, tools []llms.Tool, toolBreaks []bool) []cacheBlock {
	var (
		out   []cacheBlock
		key   [sha256.Size]byte
		total int
	)
	next := func(content []byte) {
		h := sha256.New()
		h.Write(key[:])
		h.Write(content)
		h.Sum(key[:0])
	}
	for i, t := range tools {
		n := EstimatePromptTokens(nil, []llms.Tool{t})
		b, _ := json.Marshal(t)
		next(b)
		total += n
		out = append(out, cacheBlock{key: key, tokens: total, breakpoint: i < len(toolBreaks) && toolBreaks[i]})
	}
	for _, m := range msgs {
		bytes, images := 0, 0
		for j, p := range m.Parts {
			var ttl time.Duration
			bp := false
			if cc, ok := p.(llms.CachedContent); ok {
				p, bp = cc.ContentPart, true
				if cc.CacheControl != nil {
					ttl = cc.CacheControl.Duration
				}
			}
			b, i := billedPart(p)
			bytes += b
			images += i
			enc, _ := json.Marshal(p)
			next(fmt.Appendf(nil, "%s\x00%t\x00%T\x00%s", m.Role, j == 0, p, enc))
			partial := memory.MessageOverheadTokens + (bytes+memory.BytesPerToken-1)/memory.BytesPerToken + images*imageTokens
			out = append(out, cacheBlock{key: key, tokens: total + partial, breakpoint: bp, ttl: ttl})
		}
		total += EstimateBilledTokens(m)
	}
	return out
}
