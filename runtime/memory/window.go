package memory

import (
	"context"
	"errors"
	"fmt"
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
	// any, first). The result is a deep copy the caller owns.
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

// Window returns the policy of langchain4j's MessageWindowChatMemory: the
// memory keeps at most the last maxMessages messages, the system message
// included. See [TokenWindow] for the rules both share.
func Window(maxMessages int) Policy {
	return windowPolicy{name: "window", max: maxMessages}
}

// TokenWindow returns the policy of langchain4j's TokenWindowChatMemory: the
// memory keeps the newest messages whose tokens, counted by t, total at most
// maxTokens, the system message included. A nil t means [EstimateTokens].
//
// Rules shared with [Window], as in langchain4j:
//
//   - Eviction removes the oldest messages first; messages are indivisible.
//   - There is at most one system message and it is always first. Adding a
//     system message equal (same role and parts) to the current one does
//     nothing; adding a different one replaces it, at the front. The system
//     message is never evicted: if it alone exceeds the budget, the memory
//     holds just it (langchain4j 1.x does the same).
//   - A message that alone exceeds the budget is evicted as soon as it is
//     added, with every message older than it: it is never sent.
//   - No orphan tool results: when eviction removes an AI message, the tool
//     messages that follow it (its results) are evicted too. More strictly
//     than langchain4j, whenever anything is evicted, tool messages left at
//     the front (after the system message) are evicted as well, so the
//     memory never starts with a tool result whose call is gone.
//   - Add is a transaction: eviction runs once, after all the messages of
//     the call are in, and the store is written once. An AI message is
//     therefore never evicted while its results are kept, nor kept with its
//     results dropped.
//
// Token accounting is incremental: each message is counted once, when it is
// added or loaded, and the memory keeps a running total, so Add costs
// O(messages added + messages evicted) — not a recount or a copy of the
// history — when the store is an [IncrementalStore]; over a plain Store, Add
// writes the whole list with Update.
//
// Consistency: a memory reads its store once, in New, and then keeps the
// list and the counts in process; the store is the source of truth only at
// construction. Use one memory per id per process ([Manager] ensures it) and
// do not change the id's list through the store while the memory is in use.
// When New finds a list that breaks the rules (for example written under a
// bigger budget, or with several system messages, of which the first is
// kept), it normalises it and writes it back.
func TokenWindow(maxTokens int, t Tokenizer) Policy {
	if t == nil {
		t = TokenizerFunc(EstimateTokens)
	}
	return windowPolicy{name: "token window", max: maxTokens, tok: t}
}

type windowPolicy struct {
	name string
	max  int
	tok  Tokenizer // nil: every message costs 1
}

// New implements [Policy].
func (p windowPolicy) New(ctx context.Context, store Store, id string) (Memory, error) {
	switch {
	case p.max <= 0:
		return nil, fmt.Errorf("%w: %s size %d is not positive", ErrInvalid, p.name, p.max)
	case store == nil:
		return nil, fmt.Errorf("%w: nil store", ErrInvalid)
	case id == "":
		return nil, fmt.Errorf("%w: empty memory id", ErrInvalid)
	}
	list, err := store.Get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("memory: loading %q: %w", id, err)
	}
	w := &window{id: id, store: store, max: p.max, tok: p.tok}
	w.inc, _ = store.(IncrementalStore)

	changed := false
	for i, m := range list {
		c := w.cost(m)
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
		w.body.push(m, c)
		w.total += c
	}
	n := w.body.len()
	e, total := w.evictions(w.total, n, func(i int) (*llms.MessageContent, int) {
		return w.body.at(i)
	})
	if e > 0 {
		changed = true
		w.body.popFront(e)
		w.total = total
	}
	if changed {
		if err := store.Update(ctx, id, w.list()); err != nil {
			return nil, fmt.Errorf("memory: normalising %q: %w", id, err)
		}
	}
	return w, nil
}

// window is the memory of both window policies.
type window struct {
	id    string
	store Store
	inc   IncrementalStore // store, when it is one
	max   int
	tok   Tokenizer

	mu      sync.Mutex
	sys     *llms.MessageContent // the system message, kept first
	sysCost int
	body    deque // the other messages, oldest first
	total   int   // cost of sys and body

	// Scratch space of Add, reused to keep it free of allocations beyond
	// the copies of the added messages. Stores never retain what they get.
	added []llms.MessageContent
	costs []int
	head  [1]llms.MessageContent
}

func (w *window) cost(m llms.MessageContent) int {
	if w.tok == nil {
		return 1
	}
	return max(0, w.tok.CountTokens(m))
}

// evictions returns how many of the n oldest non-system messages (read
// through at) must go for total to fit, and the total after that.
func (w *window) evictions(total, n int, at func(i int) (*llms.MessageContent, int)) (int, int) {
	e := 0
	for ; total > w.max && e < n; e++ {
		_, c := at(e)
		total -= c
	}
	if e > 0 {
		for ; e < n; e++ {
			m, c := at(e)
			if !isToolResult(*m) {
				break
			}
			total -= c
		}
	}
	return e, total
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

	// Stage the change without touching the memory.
	sys, sysCost, total := w.sys, w.sysCost, w.total
	added, costs := w.added[:0], w.costs[:0]
	defer func() {
		clear(added) // drop references; the memory keeps its own
		w.added, w.costs = added[:0], costs[:0]
	}()
	for _, m := range msgs {
		if isSystem(m) {
			if sys != nil && equalMessages(*sys, m) {
				continue
			}
			if sys != nil {
				total -= sysCost
			}
			c := cloneMessage(m)
			sys, sysCost = &c, w.cost(c)
			total += sysCost
			continue
		}
		c := w.cost(m)
		added = append(added, cloneMessage(m))
		costs = append(costs, c)
		total += c
	}
	sysChanged := sys != w.sys

	n := w.body.len()
	e, total := w.evictions(total, n+len(added), func(i int) (*llms.MessageContent, int) {
		if i < n {
			return w.body.at(i)
		}
		return &added[i-n], costs[i-n]
	})
	drop := min(e, n)
	tail, tailCosts := added[e-drop:], costs[e-drop:]
	if !sysChanged && drop == 0 && len(tail) == 0 {
		return nil // nothing to store: a repeated system message, or all evicted at once
	}

	if err := w.write(ctx, sys, sysChanged, drop, tail); err != nil {
		return fmt.Errorf("memory: adding to %q: %w", w.id, err)
	}

	w.sys, w.sysCost, w.total = sys, sysCost, total
	w.body.popFront(drop)
	for i := range tail {
		w.body.push(tail[i], tailCosts[i])
	}
	return nil
}

// write stores the staged state: sys first, the body without its drop
// oldest messages, then tail.
func (w *window) write(ctx context.Context, sys *llms.MessageContent, sysChanged bool, drop int, tail []llms.MessageContent) error {
	if w.inc != nil {
		c := Change{Tail: tail}
		if sysChanged || drop > 0 {
			c.Drop = drop
			if w.sys != nil {
				c.Drop++ // the old system message, rewritten through Head
			}
			if sys != nil {
				w.head[0] = *sys
				c.Head = w.head[:]
				defer clear(w.head[:])
			}
		}
		return w.inc.Apply(ctx, w.id, c)
	}
	n := w.body.len()
	list := make([]llms.MessageContent, 0, 1+n-drop+len(tail))
	if sys != nil {
		list = append(list, *sys)
	}
	for i := drop; i < n; i++ {
		m, _ := w.body.at(i)
		list = append(list, *m)
	}
	list = append(list, tail...)
	return w.store.Update(ctx, w.id, list)
}

// list returns the memory's messages, not copied.
func (w *window) list() []llms.MessageContent {
	n := w.body.len()
	out := make([]llms.MessageContent, 0, n+1)
	if w.sys != nil {
		out = append(out, *w.sys)
	}
	for i := range n {
		m, _ := w.body.at(i)
		out = append(out, *m)
	}
	return out
}

// Messages implements [Memory].
func (w *window) Messages(ctx context.Context) ([]llms.MessageContent, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return cloneMessages(w.list()), nil
}

// Clear implements [Memory].
func (w *window) Clear(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.store.Delete(ctx, w.id); err != nil {
		return fmt.Errorf("memory: clearing %q: %w", w.id, err)
	}
	w.sys, w.sysCost, w.total = nil, 0, 0
	w.body = deque{}
	return nil
}

// deque is a queue of messages and their costs: the live entries are
// msgs[head:] and costs[head:]. Popping moves head; the dead prefix is
// reclaimed by copying the live entries down once it is at least as long as
// them, so each pop pays O(1) for its share of the copy.
type deque struct {
	msgs  []llms.MessageContent
	costs []int
	head  int
}

func (d *deque) len() int { return len(d.msgs) - d.head }

func (d *deque) at(i int) (*llms.MessageContent, int) {
	return &d.msgs[d.head+i], d.costs[d.head+i]
}

func (d *deque) push(m llms.MessageContent, cost int) {
	d.msgs = append(d.msgs, m)
	d.costs = append(d.costs, cost)
}

func (d *deque) popFront(n int) {
	if n == 0 {
		return
	}
	clear(d.msgs[d.head : d.head+n]) // let the messages be collected
	d.head += n
	if live := len(d.msgs) - d.head; d.head >= compactMin && d.head >= live {
		copy(d.msgs, d.msgs[d.head:])
		clear(d.msgs[live:])
		copy(d.costs, d.costs[d.head:])
		d.msgs, d.costs, d.head = d.msgs[:live], d.costs[:live], 0
	}
}
