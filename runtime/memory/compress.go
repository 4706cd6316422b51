package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// DefaultSummaryTimeout bounds each [Summarizer] call of a [Compressing]
// memory whose [CompressOptions.Timeout] is 0.
const DefaultSummaryTimeout = time.Minute

// Errors of a failed compression. Add never returns them (a failed
// compression keeps the messages, see [Compressing]); they reach the
// policy's logger.
var (
	// ErrSummaryTooLong: the new summary does not fit: with the system
	// message it exceeds the memory's maxTokens, or it leaves no room for
	// the turn being added (a summarizer writing far more than
	// SummaryTokens).
	ErrSummaryTooLong = errors.New("memory: the summary does not fit in the memory")
	// ErrSummarizerPanicked: the Summarizer panicked; the panic was
	// recovered.
	ErrSummarizerPanicked = errors.New("memory: the summarizer panicked")
)

// CompressOptions configures a [Compressing] policy. Token counts are
// those of Tokenizer.
type CompressOptions struct {
	// Tokenizer counts the tokens of each message; nil means
	// [EstimateTokens].
	Tokenizer Tokenizer
	// TriggerTokens is the high-water mark: an Add that leaves the system
	// message and the other messages (the summary not counted) over
	// TriggerTokens compresses the memory. 0 means MaxTokens/2.
	TriggerTokens int
	// KeepTokens is the low-water mark: a compression folds the oldest
	// messages into the summary until the system message and the messages
	// kept word for word fit in KeepTokens. 0 means TriggerTokens/2. The
	// gap between the two marks is what makes compressions rare: at least
	// TriggerTokens-KeepTokens tokens of new messages between two of them.
	KeepTokens int
	// SummaryTokens is the size the summary should keep within, passed to
	// the Summarizer ([SummaryRequest.MaxTokens]). 0 means MaxTokens/4.
	SummaryTokens int
	// Timeout bounds each Summarizer call; 0 means
	// [DefaultSummaryTimeout], a negative value no bound but the
	// context's.
	Timeout time.Duration
	// Logger receives a warning for each failed compression and a debug
	// record for each compression; nil means slog.Default().
	Logger *slog.Logger
	// Costs, when set, makes the memory weigh each fold against keeping
	// the messages: past TriggerTokens (and below maxTokens, where it
	// must fold) it folds only when the fold pays. A fold bills the
	// summarizer's input and its output (at Costs.Output, 5× the input
	// price on Anthropic), and the next turn writes its new, smaller
	// prompt to the cache (at Costs.CacheWrite) instead of reading the
	// longer one (at Costs.CacheRead); each later turn saves the
	// difference, read from the cache or, when the cache expired, written
	// again (as often as the gaps between turns so far were longer than
	// CacheTTL, on the clock Now). The fold pays when the saving exceeds
	// its cost over the turns until the smaller prompt grows back to
	// TriggerTokens (at most as many as the memory has had), when it
	// leaves no prompt under Costs.MinCacheTokens while caching pays,
	// and when, after the fold's turn (which bills the summarizer's call)
	// and after the next turn, even if that one finds the cache warm, it
	// keeps the memory's estimated bill, output included, within 1.02× the
	// full history's (what keeping every message would have billed, estimated
	// the same way since the memory was made), so that the memory is
	// never dearer than keeping everything. Set the
	// prices of the model the memory's prompts go to
	// (llmtest.ModelProfiles lists some, with their sources) and a
	// maxTokens as big as that model's context allows: the cap folds
	// whether it pays or not. nil folds at TriggerTokens, as before.
	//
	// With Costs, Messages may fold too: when the gap since the last Add,
	// on the clock Now, exceeds CacheTTL, the request Messages is read
	// for finds the cache expired and writes its whole prompt whether the
	// memory folds or not, so a fold then costs no rewrite of a warm
	// cache. Messages weighs a fold past KeepTokens already (the
	// low-water mark, not TriggerTokens), by the same rules, and asks the
	// Summarizer without the conversation (SummaryRequest.Conversation is
	// nil: no cache would serve it). The summarizer's call then happens
	// before the turn's model call; a failure is logged and keeps the
	// messages.
	Costs *TokenCosts
	// CacheTTL is how long the provider's prompt cache keeps an entry
	// after its last use; 0 means 5 minutes (Anthropic's default, the
	// short end of OpenAI's retention); negative is invalid. Used with
	// Costs only.
	CacheTTL time.Duration
	// Now is the clock Costs' estimates read the gaps between turns on;
	// nil means time.Now.
	Now func() time.Time
	// AppendSummaries makes a fold append a segment to the summary, the
	// summary of the messages it folds only ([SummaryRequest.Append]),
	// instead of rewriting the whole summary, while the summary with the
	// segment stays within 2×SummaryTokens; the fold that would take it
	// past that rewrites it whole, within SummaryTokens, as without the
	// option. A fold then bills the segment's output tokens only, not
	// the whole summary's again (output costs 4–8× input), and the
	// summary's text before the segment stays in place. The Summarizer
	// must honour SummaryRequest.Append ([ModelSummarizer] does): one that
	// returns the whole summary anyway repeats it.
	AppendSummaries bool
	// SummarizerCosts, with Costs, are the prices of the summarizer's
	// calls that do not send the conversation (a fold before a cold
	// request, or any fold of a summarizer that does not reuse the
	// conversation), when another model writes them
	// ([ModelSummarizerOptions.TranscriptCallOptions]); nil means Costs.
	// Only its Input and Output prices are used: no cache serves them.
	SummarizerCosts *TokenCosts
}

// CompressionStats counts what the memories of a [Compressing] policy did,
// since the policy was made.
type CompressionStats struct {
	// Adds is the number of Add calls.
	Adds int64
	// Compressions is the number of summaries written: each a Summarizer
	// call that succeeded and replaced messages.
	Compressions int64
	// Failures is the number of compressions that failed (the Summarizer
	// returned an error, timed out, panicked, or wrote a summary that does
	// not fit); the messages were kept.
	Failures int64
	// Summarized is the number of messages folded into summaries.
	Summarized int64
	// Dropped is the number of messages evicted without being summarised:
	// at the cap while the Summarizer was failing, the older turns beside
	// a newest turn that alone fills the cap, and the oldest turns of a
	// stored list found over the cap when a memory loads it.
	Dropped int64
}

// CompressingPolicy is the [Policy] returned by [Compressing].
type CompressingPolicy struct {
	max, trigger, keep, summaryTokens int
	tok                               Tokenizer
	sum                               Summarizer
	timeout                           time.Duration
	logger                            *slog.Logger
	costs                             *TokenCosts
	ttl                               time.Duration
	now                               func() time.Time
	appendSummaries                   bool
	sumCosts                          *TokenCosts

	adds, compressions, failures, summarized, dropped atomic.Int64
}

var _ Policy = (*CompressingPolicy)(nil)

// Compressing returns the policy of a memory that, instead of forgetting
// its oldest messages, replaces them by a summary written by s: an
// AI service's own model, or another ([NewModelSummarizer]). opts may be
// nil. It is AgentScope's AutoContextMemory (compress when a threshold is
// crossed, keep the newest messages) with langchain4j's memory contract.
//
// The memory holds the system message, then the summary message (see
// [SummaryText]), then the newest turns word for word, and sends the
// model exactly that. It works with token counts and whole turns, like
// [TokenWindow]:
//
//   - When an Add leaves the system message and the messages over
//     TriggerTokens (the high-water mark), or everything over maxTokens,
//     the oldest turns are summarised until the system message and the
//     rest fit in KeepTokens (the low-water mark). The Summarizer gets the
//     old summary and only those messages: the summary is updated
//     incrementally, and only when messages leave, once per crossing of
//     the high-water mark rather than on every Add. [CompressionStats]
//     counts how often.
//   - Only whole turns are summarised (a turn: a user message and every
//     message up to the next one), so what the memory keeps word for
//     word starts with a user message, after the summary (itself a user
//     message): never with an AI message or a tool result, and a tool call
//     is never separated from its results. Never summarised: the system
//     message and the newest turn, the current one, which the Add in
//     progress adds or ends.
//   - maxTokens is a hard cap on everything, summary included, but for
//     the newest turn: when the memory would still exceed it, the oldest
//     turns are evicted without being summarised, as by TokenWindow, then
//     the summary (it stands for older messages still). The newest turn
//     is never evicted or split: a turn that alone exceeds maxTokens (or
//     leaves no room for a summary beside it) is kept whole, with the
//     system message only, until the next turn's Add evicts it, as in
//     TokenWindow.
//   - langchain4j's contract holds as for [TokenWindow]: one system
//     message, first, never evicted or summarised (an identical one is
//     ignored, a different one replaces it); no orphan tool results;
//     Add is one transaction, with one store write.
//
// The summary is stored with the messages, as the message after the system
// message, so it survives a restart with any [Store] and any encoding
// (it is an ordinary human message starting with [SummaryPrefix]).
//
// Failures: when the Summarizer returns an error, times out
// ([CompressOptions.Timeout]), panics, or writes a summary that does not
// fit (with the system message and the newest turn it exceeds maxTokens,
// or it would cost the Add in progress a turn: [ErrSummaryTooLong]),
// nothing is summarised
// and nothing is lost: the messages stay and the next Add tries again (one Summarizer
// call per Add at most, so a failing Summarizer costs a call, bounded by
// the timeout, per turn). The room between TriggerTokens and maxTokens is
// what the memory may grow into meanwhile; at maxTokens it evicts the
// oldest turns as TokenWindow would, so the memory stays bounded. A
// failure is logged as a warning and counted in CompressionStats.Failures.
// Add itself fails only when its store does, and then changes nothing.
//
// The Summarizer is called inside Add, with Add's context: the turn that
// crosses the high-water mark waits for it. Over an [InMemoryStore] the
// memory holds its messages in the store only, as the window memories do.
// Consistency is that of TokenWindow: one memory per id per process (a
// [Manager] ensures it). Loading a list whose total exceeds maxTokens
// (written under a bigger budget) evicts its oldest turns, then the
// summary, without summarising them.
//
// Arguments are checked when a memory is made (by [CompressingPolicy.New],
// so on an AI service's first turn): a maxTokens that is not positive, a
// nil Summarizer, or options out of their ranges (1 ≤ TriggerTokens ≤
// maxTokens, 0 ≤ KeepTokens ≤ TriggerTokens, 1 ≤ SummaryTokens ≤
// maxTokens, prices of CompressOptions.Costs that are negative or not
// finite, a negative CacheTTL) fail it with an error wrapping
// [ErrInvalid] that names them.
func Compressing(maxTokens int, s Summarizer, opts *CompressOptions) *CompressingPolicy {
	var o CompressOptions
	if opts != nil {
		o = *opts
	}
	p := &CompressingPolicy{
		max:           maxTokens,
		trigger:       o.TriggerTokens,
		keep:          o.KeepTokens,
		summaryTokens: o.SummaryTokens,
		tok:           o.Tokenizer,
		sum:           s,
		timeout:       o.Timeout,
		logger:        o.Logger,
		ttl:           o.CacheTTL,
		now:           o.Now,

		appendSummaries: o.AppendSummaries,
	}
	if o.Costs != nil {
		k := *o.Costs
		p.costs = &k
		p.sumCosts = p.costs
		if o.SummarizerCosts != nil {
			k := *o.SummarizerCosts
			p.sumCosts = &k
		}
	}
	if p.ttl == 0 {
		p.ttl = 5 * time.Minute
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.tok == nil {
		p.tok = TokenizerFunc(EstimateTokens)
	}
	if p.trigger == 0 {
		p.trigger = max(1, maxTokens/2)
	}
	if p.keep == 0 {
		p.keep = p.trigger / 2
	}
	if p.summaryTokens == 0 {
		p.summaryTokens = max(1, maxTokens/4)
	}
	if p.timeout == 0 {
		p.timeout = DefaultSummaryTimeout
	}
	return p
}

// Stats returns what the policy's memories did so far.
func (p *CompressingPolicy) Stats() CompressionStats {
	return CompressionStats{
		Adds:         p.adds.Load(),
		Compressions: p.compressions.Load(),
		Failures:     p.failures.Load(),
		Summarized:   p.summarized.Load(),
		Dropped:      p.dropped.Load(),
	}
}

func (p *CompressingPolicy) log() *slog.Logger {
	if p.logger != nil {
		return p.logger
	}
	return slog.Default()
}

// cost returns the tokens of m, clamped to [0, math.MaxInt32].
func (p *CompressingPolicy) cost(m *llms.MessageContent) int {
	return min(max(0, p.tok.CountTokens(*m)), math.MaxInt32)
}

// New implements [Policy].
func (p *CompressingPolicy) New(ctx context.Context, store Store, id string) (Memory, error) {
	switch {
	case p.max <= 0:
		return nil, fmt.Errorf("%w: Compressing: maxTokens %d is not positive", ErrInvalid, p.max)
	case p.sum == nil:
		return nil, fmt.Errorf("%w: Compressing: no Summarizer", ErrInvalid)
	case p.trigger <= 0 || p.trigger > p.max:
		return nil, fmt.Errorf("%w: Compressing: CompressOptions.TriggerTokens %d is not in [1, maxTokens %d]", ErrInvalid, p.trigger, p.max)
	case p.keep < 0 || p.keep > p.trigger:
		return nil, fmt.Errorf("%w: Compressing: CompressOptions.KeepTokens %d is not in [0, TriggerTokens %d]", ErrInvalid, p.keep, p.trigger)
	case p.summaryTokens <= 0 || p.summaryTokens > p.max:
		return nil, fmt.Errorf("%w: Compressing: CompressOptions.SummaryTokens %d is not in [1, maxTokens %d]", ErrInvalid, p.summaryTokens, p.max)
	case p.costs != nil && !p.costs.valid():
		return nil, fmt.Errorf("%w: Compressing: CompressOptions.Costs %+v has a negative or non-finite price, or a negative minimum", ErrInvalid, *p.costs)
	case p.sumCosts != nil && !p.sumCosts.valid():
		return nil, fmt.Errorf("%w: Compressing: CompressOptions.SummarizerCosts %+v has a negative or non-finite price, or a negative minimum", ErrInvalid, *p.sumCosts)
	case p.ttl < 0:
		return nil, fmt.Errorf("%w: Compressing: CompressOptions.CacheTTL %v is negative", ErrInvalid, p.ttl)
	case store == nil:
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	case id == "":
		return nil, fmt.Errorf("%w: empty memory id", ErrInvalid)
	}
	list, err := store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("memory: loading %q: %w", id, err)
	}
	c := &compressing{p: p, id: id, store: store}
	c.inc, _ = store.(IncrementalStore)
	c.mem, _ = store.(*InMemoryStore)

	changed := false
	for i, m := range list {
		switch {
		case isSystem(m):
			if c.sys != nil || i != 0 {
				changed = true // a second system message, or one not first
			}
			if c.sys == nil {
				c.sys, c.sysCost = &m, p.cost(&m)
			}
			continue
		case c.summ == nil && c.msgs.len() == 0:
			if text, ok := SummaryText(m); ok {
				c.summ, c.summText, c.summCost = &m, text, p.cost(&m)
				continue
			}
		}
		c.msgs.items = append(c.msgs.items, m)
		cost := p.cost(&m)
		c.meta.items = append(c.meta.items, costOf(&m, cost))
		c.body += cost
	}
	// Written under a bigger budget, the list may no longer fit: whole
	// turns go, then the summary (see Add).
	s := turns{c.meta.live(), nil}
	e, rest := s.fit(0, c.sysCost+c.summCost, c.body, p.max)
	if c.summ != nil && c.sysCost+c.summCost+rest > p.max {
		changed = true
		c.summ, c.summText, c.summCost = nil, "", 0
		e, rest = s.fit(0, c.sysCost, c.body, p.max)
	}
	if e > 0 {
		changed = true
		c.meta.drop(0, e)
		c.msgs.drop(0, e)
		c.body = rest
		p.dropped.Add(int64(e))
	}
	if changed {
		if err := store.Update(ctx, id, c.list(c.sys, c.summ, 0, nil)); err != nil {
			return nil, fmt.Errorf("memory: normalising %q: %w", id, err)
		}
	}
	if c.mem != nil {
		c.msgs = deque[llms.MessageContent]{}
	}
	// The bill is estimated from here: what was loaded is the prompt of
	// both the memory and the full history it stands for.
	c.acct.ownPrompt = c.sysCost + c.summCost + c.body
	c.acct.full, c.acct.sys = c.acct.ownPrompt, c.sysCost
	return c, nil
}

// compressing is the memory of the Compressing policy.
//
// Like window, it keeps the costs of its messages and, unless its store is
// an InMemoryStore (mem), the messages; the system message and the summary
// message are kept apart. The stored list is sys, summ, then the others.
type compressing struct {
	p     *CompressingPolicy
	id    string
	store Store
	inc   IncrementalStore // store, when it is one
	mem   *InMemoryStore   // store, when it is one

	mu       sync.Mutex
	sys      *llms.MessageContent // the system message: the memory's own copy
	sysCost  int
	summ     *llms.MessageContent // the summary message, nil when there is none
	summText string               // the summary, without SummaryPrefix
	summCost int
	meta     deque[msgCost]             // the other messages' costs, oldest first
	msgs     deque[llms.MessageContent] // the other messages, oldest first, unless mem holds them
	body     int                        // the other messages' total cost
	// kept: the last Add only appended (see Stability.Kept); false after
	// New.
	kept bool
	// acct is the bill's estimate, with CompressOptions.Costs.
	acct      foldAccount
	coldTried time.Time // the last Add whose gap coldFold weighed
	// segIn and segOut are the tokens folded and written by the folds
	// that wrote a summary of the folded messages only (the first, and
	// those that appended a segment): how much a segment takes.
	segIn, segOut int

	// Scratch space of Add, reused across calls.
	added []llms.MessageContent // the non-system messages of an Add, not copied
	costs []msgCost             // their costs
}

// list returns the stored list of the state sys, summ, the other messages
// without their drop oldest, then tail.
func (c *compressing) list(sys, summ *llms.MessageContent, drop int, tail []llms.MessageContent) []llms.MessageContent {
	list := make([]llms.MessageContent, 0, 2+c.msgs.len()-drop+len(tail))
	if sys != nil {
		list = append(list, *sys)
	}
	if summ != nil {
		list = append(list, *summ)
	}
	list = append(list, c.msgs.live()[drop:]...)
	return append(list, tail...)
}

// ID implements [Memory].
func (c *compressing) ID() string { return c.id }

// MaySummarize implements [SummarizingMemory]: a compressing memory folds
// with its policy's Summarizer.
func (c *compressing) MaySummarize() bool { return true }

// Add implements [Memory].
func (c *compressing) Add(ctx context.Context, msgs ...llms.MessageContent) error {
	if len(msgs) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.p
	p.adds.Add(1)

	// Stage the change without touching the memory, as window does.
	sys, sysCost := c.sys, c.sysCost
	added := c.added[:0]
	defer func() {
		clear(added) // drop the references to the caller's messages
		c.added, c.costs = added[:0], c.costs[:0]
	}()
	for i := range msgs {
		m := &msgs[i]
		if !isSystem(*m) {
			added = append(added, *m)
			continue
		}
		if sys != nil && equalMessages(*sys, *m) {
			continue
		}
		cp := cloneMessage(*m)
		sys, sysCost = &cp, p.cost(&cp)
	}
	sysChanged := sys != c.sys
	costs := c.costs[:0]
	total := c.body
	for i := range added {
		costs = append(costs, costOf(&added[i], p.cost(&added[i])))
		total += int(costs[i].cost)
	}
	c.costs = costs
	old := c.meta.live()
	s := turns{old, costs}

	// Compress: fold the oldest turns, up to the low-water mark but never
	// the newest turn (the current one), into the summary. When the newest
	// turn alone leaves no room for a summary, the cap below keeps it
	// alone: nothing is worth summarising.
	summ, summText, summCost := c.summ, c.summText, c.summCost
	summChanged := false
	if p.costs != nil {
		c.acct.account(p.costs, p.ttl, p.now(), sysCost, total-c.body, outputTokens(costs, added))
	}
	k, folded, plan := c.foldDepth(sysCost, total, summCost, s, &c.acct, false)
	out := 0         // the summarizer's output tokens
	segment := false // the summary written is of the folded messages only
	if k > 0 {
		_, appends := c.appendEstimate(folded)
		text, err := c.summarize(ctx, k, sys, added, true, appends)
		if err == nil {
			out = c.outputCost(text)
			text = c.joinSummary(text, appends)
			// The summary must leave room for the turn being added (what
			// the cap keeps of this Add without it): a bigger one would
			// push it out.
			m := summaryMessage(text)
			cost := p.cost(&m)
			eWith, restWith := s.fit(k, sysCost+cost, total-folded, p.max)
			eWithout, _ := s.fit(k, sysCost, total-folded, p.max)
			switch {
			case sysCost+cost > p.max:
				err = fmt.Errorf("%w: %d tokens with the system message, over %d", ErrSummaryTooLong, sysCost+cost, p.max)
			case sysCost+cost+restWith > p.max || eWith > len(old) && eWithout < eWith:
				err = fmt.Errorf("%w: %d tokens with the system message, and %d of the turn being added, over %d",
					ErrSummaryTooLong, sysCost+cost, restWith, p.max)
			default:
				summ, summText, summCost, summChanged = &m, text, cost, true
				segment = appends || c.summ == nil
			}
		}
		if err != nil {
			p.failures.Add(1)
			p.log().WarnContext(ctx, "memory: compressing failed; the messages are kept and the next Add tries again",
				"memory", c.id, "messages", k, "err", err)
			k, folded = 0, 0
		}
	}
	if summ != nil && sysCost+summCost > p.max {
		// A new, bigger system message leaves no room for the summary.
		p.log().WarnContext(ctx, "memory: the system message leaves no room for the summary; the summary is dropped",
			"memory", c.id, "system_tokens", sysCost, "summary_tokens", summCost, "max_tokens", p.max)
		summ, summText, summCost, summChanged = nil, "", 0, true
	}

	// Enforce the cap, evicting without summarising: the oldest turns,
	// then the summary (older than any of them) when it would cost this
	// Add a turn or does not fit with the newest turn. The newest turn
	// stays, even alone over the cap.
	rest := total - folded
	e := k
	if sysCost+summCost+rest > p.max {
		e, rest = s.fit(k, sysCost+summCost, total-folded, p.max)
		if summ != nil {
			e2, rest2 := s.fit(k, sysCost, total-folded, p.max)
			if sysCost+summCost+rest > p.max || e > len(old) && e2 < e {
				p.log().WarnContext(ctx, "memory: the summary leaves no room for the turn being added; the summary is dropped",
					"memory", c.id, "summary_tokens", summCost, "max_tokens", p.max)
				summ, summText, summCost, summChanged = nil, "", 0, true
				e, rest = e2, rest2
			}
		}
	}

	drop := e
	dropOld := min(drop, len(old))
	tail, tailCosts := added[drop-dropOld:], costs[drop-dropOld:]
	if !sysChanged && !summChanged && drop == 0 && len(tail) == 0 {
		c.kept = true
		return nil // a repeated system message, or all evicted at once
	}
	if err := c.write(ctx, sys, sysChanged, summ, summChanged, dropOld, tail); err != nil {
		return fmt.Errorf("memory: adding to %q: %w", c.id, err)
	}
	c.kept = dropOld == 0 && !summChanged && (!sysChanged || c.sys == nil) // a first system message changes no prefix

	c.sys, c.sysCost = sys, sysCost
	c.summ, c.summText, c.summCost = summ, summText, summCost
	c.meta.drop(0, dropOld)
	c.meta.compact()
	c.meta.items = append(c.meta.items, tailCosts...)
	if c.mem == nil {
		c.msgs.drop(0, dropOld)
		c.msgs.compact()
		c.msgs.items = appendClones(c.msgs.items, tail)
	}
	c.body = rest
	if segment {
		c.segIn, c.segOut = c.segIn+folded, c.segOut+out
	}
	if p.costs != nil {
		c.acct.folded = !c.kept
		c.acct.ownPrompt = sysCost + summCost + rest
		if k > 0 {
			c.acct.own += plan.bill(p.costs, out)
			c.acct.lastSummaryOut = summCost
		}
	}
	if k > 0 {
		p.compressions.Add(1)
		p.summarized.Add(int64(k))
		p.log().DebugContext(ctx, "memory: compressed", "memory", c.id, "messages", k,
			"summary_tokens", summCost, "kept_tokens", sysCost+rest)
	}
	if e > k {
		p.dropped.Add(int64(e - k))
	}
	return nil
}

// foldDepth returns how many of the messages of s (the memory's, then
// those being added, total tokens beside the system message's sysCost and
// the summary's summCost) a compression folds, and their tokens: none
// under the high-water mark, down to the low-water mark past it, but
// never the newest turn; with CompressOptions.Costs, none but at the cap
// when the fold does not pay on the bill acct estimates. A cold fold
// (before a request the cache has expired for) is weighed past the
// low-water mark already, and never forced.
func (c *compressing) foldDepth(sysCost, total, summCost int, s turns, acct *foldAccount, cold bool) (k, folded int, plan foldPlan) {
	p := c.p
	forced := !cold && sysCost+total+summCost > p.max
	trigger, low := p.trigger, p.keep
	if cold {
		_, low = c.coldMarks()
		trigger = low
	}
	if (sysCost+total > trigger || forced) && sysCost+s.cost(s.newest(), s.len()) < p.max {
		for rest := total; sysCost+rest > low && k < s.len(); {
			j, cost, ok := s.next(k)
			if !ok {
				break
			}
			k, rest, folded = j, rest-cost, folded+cost
		}
	}
	if k > 0 && p.costs != nil {
		plan = c.plan(sysCost, total, folded, cold)
		if cold {
			plan.trigger, _ = c.coldMarks()
		}
		if !forced && !acct.pays(p.costs, plan, cold) {
			return 0, 0, plan
		}
	}
	return k, folded, plan
}

// coldMarks returns the marks of a cold fold: it folds down to low, the
// low-water mark or, when that is under the cache's minimum, an eighth
// over the minimum (the estimate counts tokens with the memory's
// tokenizer, not the provider's), so that the prompts that follow are
// cached; and weighs its saving until the prompt grows back to high, as
// far past low as the high-water mark is past the low one.
func (c *compressing) coldMarks() (high, low int) {
	p := c.p
	low = max(p.keep, p.costs.MinCacheTokens+p.costs.MinCacheTokens/8)
	return low + max(0, p.trigger-p.keep), low
}

// summarize asks the Summarizer for the summary of the current one and the
// k oldest messages (those the memory keeps, then those of added), with
// the policy's timeout, turning a panic or an empty summary into an error.
// With reuse, a ConversationSummarizer that wants it is sent the
// conversation.
func (c *compressing) summarize(ctx context.Context, k int, sys *llms.MessageContent, added []llms.MessageContent, reuse, appends bool) (text string, err error) {
	kept := min(k, c.meta.len())
	msgs, err := c.oldest(ctx, kept)
	if err != nil {
		return "", err
	}
	// An older turn may end in this Add, before the turn it starts.
	msgs = appendClones(msgs, added[:k-kept])
	var conv []llms.MessageContent
	if cs, ok := c.p.sum.(ConversationSummarizer); ok && cs.WantsConversation() && reuse {
		if conv, err = c.conversation(ctx, sys, added); err != nil {
			return "", err
		}
	}
	if c.p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.p.timeout)
		defer cancel()
	}
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("%w: %v", ErrSummarizerPanicked, r)
		}
	}()
	req := SummaryRequest{Previous: c.summText, Messages: msgs, MaxTokens: c.p.summaryTokens, Conversation: conv, Append: appends}
	if appends {
		req.MaxTokens = max(1, 2*c.p.summaryTokens-c.summCost)
	}
	text, err = c.p.sum.Summarize(ctx, req)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err // a summarizer that ignored its deadline is not trusted
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return "", ErrEmptySummary
	}
	return text, nil
}

// appendEstimate reports whether a fold of folded tokens appends a
// segment to the summary (CompressOptions.AppendSummaries: there is a
// summary, and with the segment it stays within 2×SummaryTokens), and the
// segment's estimated tokens: as many per folded token as the summaries
// of folded messages only written so far, at most SummaryTokens (and
// SummaryTokens, or the tokens folded, before the first).
func (c *compressing) appendEstimate(folded int) (seg int, ok bool) {
	p := c.p
	if !p.appendSummaries || c.summ == nil {
		return 0, false
	}
	seg = min(p.summaryTokens, max(1, folded))
	if c.segIn > 0 {
		seg = min(seg, max(1, int(math.Ceil(float64(folded)*float64(c.segOut)/float64(c.segIn)))))
	}
	return seg, c.summCost+seg <= 2*p.summaryTokens
}

// joinSummary returns the summary text of a fold whose summarizer wrote
// text: text, or, when the fold appends, the current summary then text.
func (c *compressing) joinSummary(text string, appends bool) string {
	if !appends || c.summText == "" {
		return text
	}
	return c.summText + "\n\n" + text
}

// outputCost returns the tokens of text as the summarizer's answer: what
// its call bills as output.
func (c *compressing) outputCost(text string) int {
	m := llms.TextParts(llms.ChatMessageTypeAI, text)
	return c.p.cost(&m)
}

// conversation returns copies of what the memory holds, with sys as its
// system message (the Add in progress may change it), followed by added:
// the conversation as the model last saw it, and the turn's answer.
func (c *compressing) conversation(ctx context.Context, sys *llms.MessageContent, added []llms.MessageContent) ([]llms.MessageContent, error) {
	var list []llms.MessageContent
	if c.mem != nil {
		var err error
		if list, err = c.mem.Get(ctx, c.id); err != nil {
			return nil, fmt.Errorf("memory: reading %q: %w", c.id, err)
		}
		if c.sys != nil && len(list) > 0 {
			list = list[1:]
		}
	} else {
		list = cloneMessages(c.list(nil, c.summ, 0, nil))
	}
	out := make([]llms.MessageContent, 0, 1+len(list)+len(added))
	if sys != nil {
		out = append(out, cloneMessage(*sys))
	}
	out = append(out, list...)
	return append(out, cloneMessages(added)...), nil
}

// oldest returns copies of the k oldest messages after the system message
// and the summary.
func (c *compressing) oldest(ctx context.Context, k int) ([]llms.MessageContent, error) {
	if c.mem == nil {
		return cloneMessages(c.msgs.live()[:k]), nil
	}
	from := 0
	if c.sys != nil {
		from++
	}
	if c.summ != nil {
		from++
	}
	msgs, err := c.mem.slice(ctx, c.id, from, k)
	if err != nil {
		return nil, fmt.Errorf("memory: reading %q: %w", c.id, err)
	}
	return msgs, nil
}

// write stores the staged state: sys, summ, the other messages without
// their drop oldest, then tail.
func (c *compressing) write(ctx context.Context, sys *llms.MessageContent, sysChanged bool, summ *llms.MessageContent, summChanged bool, drop int, tail []llms.MessageContent) error {
	if c.inc == nil {
		return c.store.Update(ctx, c.id, c.list(sys, summ, drop, tail))
	}
	ch := Change{Drop: drop, Tail: tail, Len: c.meta.len()}
	if c.sys != nil {
		ch.Len++
	}
	if c.summ != nil {
		ch.Len++
	}
	if sysChanged || summChanged || drop > 0 {
		// Drop counts from the front: rewrite the system message and the
		// summary.
		if c.sys != nil {
			ch.Drop++
		}
		if c.summ != nil {
			ch.Drop++
		}
		ch.Head = make([]llms.MessageContent, 0, 2)
		if sys != nil {
			ch.Head = append(ch.Head, *sys)
		}
		if summ != nil {
			ch.Head = append(ch.Head, *summ)
		}
	}
	if c.mem != nil {
		return c.mem.apply(ctx, c.id, ch, 0)
	}
	return c.inc.Apply(ctx, c.id, ch)
}

// Messages implements [Memory]: with CompressOptions.Costs it first
// weighs a fold before a request the cache has expired for (coldFold).
func (c *compressing) Messages(ctx context.Context) ([]llms.MessageContent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.coldFold(ctx)
	if c.mem != nil {
		msgs, err := c.mem.Get(ctx, c.id)
		if err != nil {
			return nil, fmt.Errorf("memory: reading %q: %w", c.id, err)
		}
		if msgs == nil {
			msgs = []llms.MessageContent{}
		}
		return msgs, nil
	}
	return cloneMessages(c.list(c.sys, c.summ, 0, nil)), nil
}

// coldFold folds the oldest turns into the summary before a request the
// cache has expired for, when the fold pays (CompressOptions.Costs): the
// gap since the last Add, on the clock Now, exceeds CacheTTL, so the
// request writes its whole prompt whether the memory folds or not, and
// the fold costs no rewrite of a warm cache. The summarizer is not sent
// the conversation (no cache would serve it). It tries once per gap; a
// failure keeps the messages, as Add's does.
func (c *compressing) coldFold(ctx context.Context) {
	p := c.p
	if p.costs == nil || p.ttl <= 0 || c.acct.last.IsZero() || c.acct.last.Equal(c.coldTried) {
		return
	}
	now := p.now()
	if now.Sub(c.acct.last) <= p.ttl {
		return
	}
	c.coldTried = c.acct.last
	old := c.meta.live()
	s := turns{old, nil}
	acct := c.acct
	// The request is cold: the gap counts as Add will count it.
	acct.gaps++
	acct.expired++
	k, folded, plan := c.foldDepth(c.sysCost, c.body, c.summCost, s, &acct, true)
	if k == 0 || k > len(old) {
		return
	}
	_, appends := c.appendEstimate(folded)
	text, err := c.summarize(ctx, k, c.sys, nil, false, appends)
	var m llms.MessageContent
	cost, out := 0, 0
	if err == nil {
		out = c.outputCost(text)
		text = c.joinSummary(text, appends)
		m = summaryMessage(text)
		cost = p.cost(&m)
		if rest := c.body - folded; c.sysCost+cost+rest > p.max {
			err = fmt.Errorf("%w: %d tokens with the system message, and %d kept, over %d", ErrSummaryTooLong, c.sysCost+cost, rest, p.max)
		}
	}
	if err == nil {
		err = c.write(ctx, c.sys, false, &m, true, k, nil)
	}
	if err != nil {
		p.failures.Add(1)
		p.log().WarnContext(ctx, "memory: compressing before a cold request failed; the messages are kept",
			"memory", c.id, "messages", k, "err", err)
		return
	}
	if appends || c.summ == nil {
		c.segIn, c.segOut = c.segIn+folded, c.segOut+out
	}
	c.summ, c.summText, c.summCost = &m, text, cost
	c.meta.drop(0, k)
	c.meta.compact()
	if c.mem == nil {
		c.msgs.drop(0, k)
		c.msgs.compact()
	}
	c.body -= folded
	c.kept = false
	c.acct.folded = true
	c.acct.ownPrompt = c.sysCost + cost + c.body
	c.acct.own += plan.bill(p.costs, out)
	c.acct.lastSummaryOut = cost
	p.compressions.Add(1)
	p.summarized.Add(int64(k))
	p.log().DebugContext(ctx, "memory: compressed before a cold request", "memory", c.id, "messages", k,
		"summary_tokens", cost, "kept_tokens", c.sysCost+c.body)
}

// Clear implements [Memory].
func (c *compressing) Clear(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.store.Delete(ctx, c.id); err != nil {
		return fmt.Errorf("memory: clearing %q: %w", c.id, err)
	}
	c.sys, c.sysCost, c.kept = nil, 0, false
	c.summ, c.summText, c.summCost = nil, "", 0
	c.meta, c.msgs, c.body = deque[msgCost]{}, deque[llms.MessageContent]{}, 0
	c.acct, c.coldTried = foldAccount{}, time.Time{}
	c.segIn, c.segOut = 0, 0
	return nil
}
