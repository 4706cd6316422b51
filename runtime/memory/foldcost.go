package memory

import (
	"github.com/tmc/langchaingo/llms"
	"math"
	"time"
)

// TokenCosts are a model's prices per token class, in any currency per
// any number of tokens (US dollars per million tokens, as the providers
// list them), and its prompt cache's minimum: what a [Compressing] memory
// weighs a fold with ([CompressOptions.Costs]).
type TokenCosts struct {
	// Input is the price of an uncached input token.
	Input float64
	// CacheWrite is the price of an input token written to the prompt
	// cache: 1.25× Input for Anthropic's 5-minute writes; Input for
	// OpenAI, which bills no write.
	CacheWrite float64
	// CacheRead is the price of an input token read from the cache
	// (0.1× Input for Anthropic; 0.1× to 0.5× for OpenAI's models).
	CacheRead float64
	// Output is the price of an output token (the summary's).
	Output float64
	// MinCacheTokens is the shortest prompt the provider caches (1,024 to
	// 4,096 tokens): a shorter prompt is billed at Input every turn.
	MinCacheTokens int
}

// valid reports whether every price is finite and not negative, and the
// minimum not negative.
func (k *TokenCosts) valid() bool {
	for _, v := range []float64{k.Input, k.CacheWrite, k.CacheRead, k.Output} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return k.MinCacheTokens >= 0
}

// foldSlack is how far above the full history's bill a fold may take the
// memory's estimated bill, as a fraction of the full history's: a fold
// costs its summary and a rewrite of the prompt cache at once and earns
// it back turn by turn, and meanwhile the memory should never bill more
// than 1.02× what keeping everything would have. The guard takes the
// fold's worst case (the next turn finds the cache warm), which leaves
// room for the estimate's errors (it counts tokens with the memory's
// Tokenizer and knows only the memory's side of the cache).
const foldSlack = 0.02

// maxFoldHorizon bounds the turns a fold is expected to pay over.
const maxFoldHorizon = 1000

// foldAccount is what a cost-aware [Compressing] memory knows of the bill
// since it was made: estimates, in the currency of TokenCosts, of its own
// bill (its prompts, the answers and its summaries) and of the full
// history's (every message kept), on the same turns.
type foldAccount struct {
	last           time.Time // the previous Add, zero before the first
	gaps, expired  int       // gaps between Adds observed, and those longer than the TTL
	turns          int       // Adds counted
	full           int       // the full history's prompt: every message added, the system message included
	sys            int       // the system message's tokens when full was started
	own, shadow    float64   // the estimated bills
	folded         bool      // the previous Add changed the prompt's prefix (folded, evicted or changed the system message)
	ownPrompt      int       // the prompt the memory sent before this Add (its state then)
	lastSummaryOut int       // the tokens of the last summary written, 0 before the first
}

// rate returns the expected price per token of a prompt of size tokens
// whose prefix was sent on the previous turn: read from the cache, or
// written again when the cache expired (with probability pExpired), or
// billed as input when it is shorter than the cache's minimum.
func (k *TokenCosts) rate(size int, pExpired float64) float64 {
	if size < k.MinCacheTokens {
		return k.Input
	}
	return pExpired*k.CacheWrite + (1-pExpired)*k.CacheRead
}

// write returns the price per token of a prompt of size tokens sent for
// the first time.
func (k *TokenCosts) write(size int) float64 {
	if size < k.MinCacheTokens {
		return k.Input
	}
	return k.CacheWrite
}

// account counts the request of the turn an Add of added tokens ends (at
// now), on the memory's prompt and on the full history's: the state
// before the Add, read from the cache when the previous request is
// within the TTL and had the same prefix, plus the turn's messages,
// written; and, on both, the output tokens of its AI messages, which
// either bills alike.
func (a *foldAccount) account(k *TokenCosts, ttl time.Duration, now time.Time, sysCost, added, output int) {
	warm := false
	if !a.last.IsZero() {
		gap := now.Sub(a.last)
		a.gaps++
		if gap > ttl {
			a.expired++
		} else {
			warm = true
		}
	}
	a.last = now
	a.turns++
	if a.full == 0 {
		a.full, a.sys = sysCost, sysCost
	}
	cost := func(prefix int, cached bool) float64 {
		size := prefix + added
		switch {
		case size < k.MinCacheTokens:
			return k.Input * float64(size)
		case cached && prefix >= k.MinCacheTokens:
			return k.CacheRead*float64(prefix) + k.CacheWrite*float64(added)
		default:
			return k.CacheWrite * float64(size)
		}
	}
	out := k.Output * float64(output)
	a.shadow += cost(a.full, warm) + out
	a.own += cost(a.ownPrompt, warm && !a.folded) + out
	a.full += added
}

// pExpired returns the estimated probability that the cache expires
// before the next turn: the share of the gaps observed longer than the
// TTL, with one of each assumed (Laplace's rule).
func (a *foldAccount) pExpired() float64 {
	return float64(a.expired+1) / float64(a.gaps+2)
}

// foldPlan is a fold the memory considers: the prompts of the next turn
// with and without it, and what the summarizer would read and write.
type foldPlan struct {
	keep     int  // the next prompt without the fold: system message, summary, messages
	fold     int  // the next prompt with it: system message, the new summary, the messages kept
	summary  int  // the new summary's estimated tokens
	sumInput int  // the summarizer's input tokens
	reuse    bool // the summarizer reads the conversation: its input is the cached prompt
	// transcript are the prices of a summarizer's call that does not
	// read the conversation (CompressOptions.SummarizerCosts).
	transcript *TokenCosts
	trigger    int // the high-water mark, system message included: the memory weighs its next fold there
}

// pays reports whether the fold of plan pays: its cost now (the
// summarizer's input and output, and writing the new prompt to the cache
// instead of reading the kept one) against what the smaller prompt saves
// on each of the turns expected next (as many as the memory has had: the
// conversation is expected to last as long again, at least one turn),
// each read from the cache or, when it expires, written again, until the
// smaller prompt grows back to the high-water mark; and it
// must neither leave a prompt under the cache's minimum, while caching
// pays, nor take the memory's estimated bill over (1+foldSlack)× the full
// history's. A cold fold is one done before a request the clock shows
// the cache has expired for: that request writes its whole prompt
// whether the memory folds or not.
func (a *foldAccount) pays(k *TokenCosts, plan foldPlan, cold bool) bool {
	p := a.pExpired()
	if plan.fold < k.MinCacheTokens && k.rate(k.MinCacheTokens, p) < k.Input {
		// A prompt under the minimum is billed in full on every turn,
		// while the full history's, once over it, is read from the cache.
		return false
	}
	foldCost := plan.bill(k, plan.summary)
	keepNext := k.rate(plan.keep, p) * float64(plan.keep)
	if cold {
		keepNext = k.write(plan.keep) * float64(plan.keep)
	}
	// The first turn after the fold writes its whole prompt; each of the
	// following ones pays the smaller prompt's rate.
	first := foldCost + k.write(plan.fold)*float64(plan.fold) - keepNext
	// Both prompts grow by the conversation's average turn meanwhile,
	// and may cross the cache's minimum.
	grow := 0
	if a.turns > 0 {
		grow = max(0, a.full-a.sys) / a.turns
	}
	saved := 0.0
	for h := 1; h < min(max(1, a.turns), maxFoldHorizon); h++ {
		keep, fold := plan.keep+h*grow, plan.fold+h*grow
		if fold > plan.trigger {
			break // the memory weighs its next fold there
		}
		saved += k.rate(keep, p)*float64(keep) - k.rate(fold, p)*float64(fold)
	}
	if saved <= first {
		return false
	}
	// The guard takes the worst case: the next turn might find the
	// cache warm, and the kept prompt would have been read at CacheRead.
	worst := foldCost + k.write(plan.fold)*float64(plan.fold) - k.rate(plan.keep, 0)*float64(plan.keep)
	if cold {
		worst = first // the next request finds the cache expired
	} else if a.own+foldCost > (1+foldSlack)*a.shadow {
		// The summarizer's call of a fold after a turn is billed in
		// that turn, before the next one saves anything: where the
		// smaller prompt costs no more to send than the kept one costs
		// to read (OpenAI bills no write), that turn is the fold's
		// dearest.
		return false
	}
	return a.own+max(first, worst) <= (1+foldSlack)*a.shadow
}

// plan returns the fold of folded tokens the memory considers at an Add
// that leaves total tokens of messages beside the system message's
// sysCost and the current summary; cold, the summarizer is not sent the
// conversation (the cache that would serve it has expired).
func (c *compressing) plan(sysCost, total, folded int, cold bool) foldPlan {
	p := c.p
	summary := c.acct.lastSummaryOut
	if summary == 0 {
		summary = min(p.summaryTokens, c.summCost+folded)
	}
	plan := foldPlan{
		keep:     sysCost + c.summCost + total,
		fold:     sysCost + summary + total - folded,
		summary:  summary,
		sumInput: c.summCost + folded,
		trigger:  p.trigger,
	}
	if seg, ok := c.appendEstimate(folded); ok {
		// The summary grows by the segment, which alone is written.
		plan.fold, plan.summary = sysCost+c.summCost+seg+total-folded, seg
	}
	if cs, ok := p.sum.(ConversationSummarizer); ok && cs.WantsConversation() && !cold {
		plan.reuse, plan.sumInput = true, plan.keep
	} else {
		plan.transcript = p.sumCosts
	}
	return plan
}

// bill returns the estimated bill of the summarizer's call of plan that
// wrote a summary of summary tokens: at k's prices, or, when it does not
// read the conversation, at the summarizer's.
func (plan foldPlan) bill(k *TokenCosts, summary int) float64 {
	if !plan.reuse && plan.transcript != nil {
		k = plan.transcript
	}
	return plan.input(k) + k.Output*float64(summary)
}

// input returns the estimated bill of the summarizer's input: read from
// the cache the turn's request just wrote when it reads the conversation,
// else uncached.
func (plan foldPlan) input(k *TokenCosts) float64 {
	if plan.reuse {
		return k.rate(plan.keep, 0) * float64(plan.sumInput)
	}
	return k.Input * float64(plan.sumInput)
}

// outputTokens returns the tokens of the AI messages among costs.
func outputTokens(costs []msgCost, added []llms.MessageContent) int {
	n := 0
	for i := range added {
		if added[i].Role == llms.ChatMessageTypeAI {
			n += int(costs[i].cost)
		}
	}
	return n
}
