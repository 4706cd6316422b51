package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/tmc/langchaingo/llms"
)

// A Memory is the chat memory of one memory id: the messages an AI service
// sends to the model before the new user message. Implementations are safe
// for concurrent use.
type Memory interface {
	// ID returns the memory id.
	ID() string
	// Add adds msgs, in order, as one atomic change: the store is written
	// once, after all of msgs are in and the eviction policy has run, or,
	// on error, not at all and the memory is unchanged. Add copies msgs.
	Add(ctx context.Context, msgs ...llms.MessageContent) error
	// Messages returns the messages, oldest first (the system message, if
	// any, first). The result is a deep copy the caller owns. A
	// cost-aware [Compressing] memory may fold its oldest turns into its
	// summary first, when the cache has expired since its last Add (see
	// [CompressOptions.Costs]).
	Messages(ctx context.Context) ([]llms.MessageContent, error)
	// Clear removes every message, the system message included, and
	// deletes the id from the store. The memory stays usable.
	Clear(ctx context.Context) error
}

// A Policy builds the [Memory] of an id over a [Store]. [Window] and
// [TokenWindow] are the policies of this package.
type Policy interface {
	// New returns the memory of id, loading its messages from store.
	New(ctx context.Context, store Store, id string) (Memory, error)
}

// ErrInvalid reports a policy or memory built with invalid arguments (a
// non-positive size, a nil store, an empty id).
var ErrInvalid = errors.New("memory: invalid argument")

// Window returns the policy of langchain4j's MessageWindowChatMemory, by
// whole turns: the memory keeps the newest turns that total at most
// maxMessages messages, the system message included. Because a turn is
// evicted whole, the memory often holds fewer than maxMessages messages
// (a Window(10) of turns of four messages holds two of them and the
// system message, nine messages); because the newest turn is never
// evicted, it holds more when that turn alone has more. See [TokenWindow]
// for the rules both share, and [WindowOptions.EvictTo] for eviction in
// blocks. A nil opts is the zero WindowOptions.
func Window(maxMessages int, opts *WindowOptions) Policy {
	return windowPolicy{name: "window", max: maxMessages}.with(opts)
}

// WindowOptions configures [Window] or [TokenWindow]. The zero value is a
// sliding window.
type WindowOptions struct {
	// EvictTo, when not 0, makes the window evict in blocks: when an Add
	// takes it over its budget (the high-water mark), it evicts its oldest
	// turns until it holds at most EvictTo messages (for [Window]) or
	// tokens (for [TokenWindow]), the system message included, instead of
	// just enough to fit the budget. It evicts whole turns, as a sliding
	// window does, and never the newest one, so it may stop above EvictTo.
	// A turn that ends in the Add in progress is evicted only as far as the
	// budget itself requires, as in a sliding window.
	//
	// A sliding window evicts on every Add once full, so everything after
	// the system message changes on every request and a provider's prompt
	// cache (which serves only a request that starts with exactly the bytes
	// of an earlier one) reads nothing but the system message. A window that
	// evicts in blocks is append-only between evictions: its requests extend
	// one another for the (budget-EvictTo)/turn size turns the gap lasts, so
	// the cache serves all but the newest turn of most of them (see
	// docs/numbers.md for the figures).
	//
	// The price is memory: right after an eviction the model sees as little
	// as EvictTo of history, where a sliding window always shows it a full
	// budget. That is why it is off (0) by default: it changes what the
	// model sees within the budget. Compressing memories evict in blocks
	// already (their TriggerTokens and KeepTokens marks). EvictTo must be 0
	// or in [1, budget]; EvictTo equal to the budget is the sliding window.
	// A value out of range fails the policy's New with an error wrapping
	// [ErrInvalid].
	EvictTo int
}

// TokenWindow returns the policy of langchain4j's TokenWindowChatMemory, by
// whole turns: the memory keeps the newest turns whose tokens, counted by
// t, total at most maxTokens, the system message included. A nil t means
// [EstimateTokens].
//
// Rules shared with [Window] (langchain4j's, but for whole turns):
//
//   - Eviction removes the oldest turns first. A turn is a user message and
//     every message up to the next user message: AI messages, tool calls,
//     tool results. It is evicted whole, so after an eviction the memory
//     starts (after the system message) with a user message, never with
//     an AI message or a tool result, which providers such as Anthropic,
//     Mistral and Gemini refuse; a tool call is never kept without its
//     results nor its results without it. Nothing is added or dropped to
//     make it so: the memory holds the messages it was given, less whole
//     turns. Messages added before any user message (an application's
//     greeting, say) are evicted first, one at a time, each AI message
//     with the tool results after it.
//   - The newest turn (from the last user message on) is never evicted:
//     a turn that alone exceeds the budget is kept, whole and alone after
//     the system message, until the next turn's Add evicts it. Dropping
//     its head instead would leave its answer or tool results first, and
//     dropping all of it would leave the model knowing nothing of what it
//     just did. The budget bounds the memory, then, but for that one turn.
//   - There is at most one system message and it is always first. Adding a
//     system message equal (same role and parts) to the current one does
//     nothing; adding a different one replaces it, at the front. The system
//     message is never evicted: if it alone exceeds the budget, the memory
//     holds just it and the newest turn (langchain4j 1.x keeps it too).
//   - Add is a transaction: eviction runs once, after all the messages of
//     the call are in, and the store is written once. An AI turn (user
//     message, tool calls, tool results, answer) goes in whole or not at
//     all, and one Add may continue the newest turn (the answer to a
//     confirmation, say, without a user message).
//
// Token accounting is incremental: each message is counted once, when it is
// added or loaded, and the memory keeps a running total, so Add costs
// O(messages added + messages evicted + the newest turn's length) — not a
// recount or a copy of the history — when the store is an
// [IncrementalStore]; over a plain Store, Add writes the whole list with
// Update.
//
// Memory held: each message is copied once, when it is added, and held
// once. Over an [InMemoryStore] the memory keeps its messages in the store
// only, and keeps the counts; over any other store it keeps the list and the
// counts in process.
//
// Consistency: a memory reads its store in New, and then relies on its
// counts (and, over a store other than an InMemoryStore, on its own list);
// the store is the source of truth only at construction. Use one memory per
// id per process ([Manager] ensures it) and do not change the id's list
// through the store while the memory is in use.
// When New finds a list that breaks the rules (for example written under a
// bigger budget, or with several system messages, of which the first is
// kept), it normalises it, by the same rules, and writes it back. A list
// that starts with an AI message (such as one written by an earlier
// version of this package, which evicted single messages) is kept as it
// is: those messages are the first the next eviction removes.
//
// A nil opts is the zero [WindowOptions]: a sliding window.
func TokenWindow(maxTokens int, t Tokenizer, opts *WindowOptions) Policy {
	if t == nil {
		t = TokenizerFunc(EstimateTokens)
	}
	return windowPolicy{name: "token window", max: maxTokens, tok: t}.with(opts)
}

type windowPolicy struct {
	name string
	max  int
	low  int       // the low-water mark of block eviction; 0: none (see WindowOptions.EvictTo)
	tok  Tokenizer // nil: every message costs 1
}

// with returns p with opts applied; a nil opts changes nothing.
func (p windowPolicy) with(opts *WindowOptions) windowPolicy {
	if opts != nil {
		p.low = opts.EvictTo
	}
	return p
}

// New implements [Policy].
func (p windowPolicy) New(ctx context.Context, store Store, id string) (Memory, error) {
	switch {
	case p.max <= 0:
		return nil, fmt.Errorf("%w: %s size %d is not positive", ErrInvalid, p.name, p.max)
	case p.low != 0 && (p.low < 1 || p.low > p.max):
		return nil, fmt.Errorf("%w: %s evicts to %d, not in [1, %d]", ErrInvalid, p.name, p.low, p.max)
	case store == nil:
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	case id == "":
		return nil, fmt.Errorf("%w: empty memory id", ErrInvalid)
	}
	list, err := store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("memory: loading %q: %w", id, err)
	}
	w := &window{id: id, store: store, max: p.max, low: p.low, tok: p.tok}
	w.inc, _ = store.(IncrementalStore)
	w.mem, _ = store.(*InMemoryStore)

	// Load into the window's own deques, normalise, and then, over an
	// InMemoryStore, let the messages go: the store has them.
	changed := false
	for i, m := range list {
		c := w.cost(&m)
		if isSystem(m) {
			if w.sys != nil || i != 0 {
				changed = true // a second system message, or one not first
			}
			if w.sys == nil {
				w.sys, w.sysCost = &m, c
				w.total += c
			}
			continue
		}
		w.msgs.items = append(w.msgs.items, m)
		w.meta.items = append(w.meta.items, costOf(&m, c))
		w.total += c
	}
	e, total := w.evictions(w.total, w.meta.live(), nil)
	if e > 0 {
		changed = true
		w.meta.drop(0, e)
		w.msgs.drop(0, e)
		w.total = total
	}
	if changed {
		list := make([]llms.MessageContent, 0, 1+w.msgs.len())
		if w.sys != nil {
			list = append(list, *w.sys)
		}
		list = append(list, w.msgs.live()...)
		if err := store.Update(ctx, id, list); err != nil {
			return nil, fmt.Errorf("memory: normalising %q: %w", id, err)
		}
	}
	if w.mem != nil {
		w.msgs = deque[llms.MessageContent]{}
	}
	return w, nil
}

// window is the memory of both window policies.
//
// It keeps the system message and, for the other messages, their costs
// and whether they are tool results: all that eviction needs. Over an
// [InMemoryStore] (mem) it keeps no other message, and reads and writes
// the store's list, which holds the one copy of each message; over any
// other store it keeps the messages too (msgs), and the store is written
// through and read only in New.
type window struct {
	id    string
	store Store
	inc   IncrementalStore // store, when it is one
	mem   *InMemoryStore   // store, when it is one
	max   int
	low   int // the low-water mark of block eviction; 0: none
	tok   Tokenizer

	mu      sync.Mutex
	sys     *llms.MessageContent // the system message, kept first: the window's own copy
	sysCost int
	meta    deque[msgCost]             // the other messages' costs, oldest first
	msgs    deque[llms.MessageContent] // the other messages, oldest first, unless mem holds them
	total   int                        // cost of sys and the other messages
	// kept: the last Add only appended (see Stability.Kept); false after
	// New.
	kept bool

	// Scratch space of Add, reused to keep it free of allocations beyond
	// the copies of the added messages. Stores never retain what they get.
	added []llms.MessageContent // the messages of an Add but the system ones, when copied
	costs []msgCost             // the costs of those messages
	head  [1]llms.MessageContent
}

// cost returns the cost of m: 1 for a message window, its tokens,
// clamped to [0, math.MaxInt32], for a token window.
func (w *window) cost(m *llms.MessageContent) int {
	if w.tok == nil {
		return 1
	}
	return min(max(0, w.tok.CountTokens(*m)), math.MaxInt32)
}

// evictions returns how many of the oldest non-system messages, whose
// costs are those of kept followed by those of added, must go for total to
// fit, and the total after that: whole turns, the oldest first, never the
// newest one (see turns). With a low-water mark, once something must go,
// the turns that are wholly kept messages go until total fits in it.
func (w *window) evictions(total int, kept, added []msgCost) (int, int) {
	if total <= w.max {
		return 0, total
	}
	s := turns{kept, added}
	e, total := s.fit(0, 0, total, w.max)
	if e > 0 && w.low > 0 {
		for total > w.low && e < s.len() {
			j, c, ok := s.next(e)
			if !ok || j > len(kept) {
				break // the newest turn, or one that runs into the Add in progress
			}
			e, total = j, total-c
		}
	}
	return e, total
}

// pop removes the n oldest non-system messages from the window's deques
// (after New, msgs holds messages only when mem does not).
func (w *window) pop(n int) {
	w.meta.drop(0, n)
	w.meta.compact()
	if w.mem == nil {
		w.msgs.drop(0, n)
		w.msgs.compact()
	}
}

// ID implements [Memory].
func (w *window) ID() string { return w.id }

// Add implements [Memory].
func (w *window) Add(ctx context.Context, msgs ...llms.MessageContent) error {
	if len(msgs) == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()

	// Stage the change without touching the memory. The messages are
	// copied once, by the write: into the InMemoryStore, or into msgs.
	sys, sysCost, total := w.sys, w.sysCost, w.total
	for i := range msgs {
		m := &msgs[i]
		if !isSystem(*m) || sys != nil && equalMessages(*sys, *m) {
			continue
		}
		if sys != nil {
			total -= sysCost
		}
		c := cloneMessage(*m)
		sys, sysCost = &c, w.cost(&c)
		total += sysCost
	}
	sysChanged := sys != w.sys
	body := w.nonSystem(msgs)
	defer w.release()
	costs := w.costs[:0]
	for i := range body {
		c := costOf(&body[i], w.cost(&body[i]))
		costs = append(costs, c)
		total += int(c.cost)
	}
	w.costs = costs

	e, total := w.evictions(total, w.meta.live(), costs)
	drop := min(e, w.meta.len())
	tail, tailCosts := body[e-drop:], costs[e-drop:]
	if !sysChanged && drop == 0 && len(tail) == 0 {
		w.kept = true
		return nil // nothing to store: a repeated system message, or all evicted at once
	}

	if err := w.write(ctx, sys, sysChanged, drop, tail); err != nil {
		return fmt.Errorf("memory: adding to %q: %w", w.id, err)
	}
	w.kept = drop == 0 && (!sysChanged || w.sys == nil) // a first system message changes no prefix

	w.sys, w.sysCost, w.total = sys, sysCost, total
	w.pop(drop)
	w.meta.items = append(w.meta.items, tailCosts...)
	if w.mem == nil {
		w.msgs.items = appendClones(w.msgs.items, tail)
	}
	return nil
}

// nonSystem returns the messages of msgs that are not system messages, in
// order: msgs itself or a subslice of it when the system messages come
// first (as an AI turn adds them), else a copy in the scratch space of Add,
// which release empties.
func (w *window) nonSystem(msgs []llms.MessageContent) []llms.MessageContent {
	lead := 0
	for lead < len(msgs) && isSystem(msgs[lead]) {
		lead++
	}
	if !slices.ContainsFunc(msgs[lead:], isSystem) {
		return msgs[lead:]
	}
	body := w.added[:0]
	for _, m := range msgs {
		if !isSystem(m) {
			body = append(body, m)
		}
	}
	w.added = body
	return body
}

// release empties the scratch space of Add, dropping its references to the
// caller's messages.
func (w *window) release() {
	clear(w.added)
	w.added, w.costs = w.added[:0], w.costs[:0]
}

// write stores the staged state: sys first, the other messages without
// their drop oldest, then tail.
func (w *window) write(ctx context.Context, sys *llms.MessageContent, sysChanged bool, drop int, tail []llms.MessageContent) error {
	if w.inc == nil {
		n := w.msgs.len()
		list := make([]llms.MessageContent, 0, 1+n-drop+len(tail))
		if sys != nil {
			list = append(list, *sys)
		}
		list = append(list, w.msgs.live()[drop:]...)
		list = append(list, tail...)
		return w.store.Update(ctx, w.id, list)
	}
	c := Change{Drop: drop, Tail: tail, Len: w.meta.len()}
	if w.sys != nil {
		c.Len++
	}
	keep := 0
	switch {
	case sysChanged:
		if w.sys != nil {
			c.Drop++ // the old system message
		}
		if sys != nil {
			w.head[0] = *sys
			c.Head = w.head[:]
			defer clear(w.head[:])
		}
	case sys != nil && drop > 0:
		if w.mem != nil {
			keep = 1 // the system message stays first
			break
		}
		// Drop counts from the front: rewrite the system message.
		c.Drop++
		w.head[0] = *sys
		c.Head = w.head[:]
		defer clear(w.head[:])
	}
	if w.mem != nil {
		return w.mem.apply(ctx, w.id, c, keep)
	}
	return w.inc.Apply(ctx, w.id, c)
}

// Messages implements [Memory].
func (w *window) Messages(ctx context.Context) ([]llms.MessageContent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mem != nil {
		msgs, err := w.mem.Get(ctx, w.id)
		if err != nil {
			return nil, fmt.Errorf("memory: reading %q: %w", w.id, err)
		}
		if msgs == nil {
			msgs = []llms.MessageContent{} // as over other stores
		}
		return msgs, nil
	}
	var one [1]llms.MessageContent
	sys := one[:0]
	if w.sys != nil {
		sys = append(sys, *w.sys)
	}
	live := w.msgs.live()
	c := newCopier(sys, live)
	out := make([]llms.MessageContent, 0, len(sys)+len(live))
	return c.appendTo(c.appendTo(out, sys), live), nil
}

// Clear implements [Memory].
func (w *window) Clear(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.store.Delete(ctx, w.id); err != nil {
		return fmt.Errorf("memory: clearing %q: %w", w.id, err)
	}
	w.sys, w.sysCost, w.total, w.kept = nil, 0, 0, false
	w.meta, w.msgs = deque[msgCost]{}, deque[llms.MessageContent]{}
	return nil
}
