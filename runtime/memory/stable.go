package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"
)

// Stability is what a memory tells of the front of its history, for the
// prompt-cache breakpoints an AI service places (see [StableMemory]).
// Counts are of the messages Messages returns, the system message
// included; a count equal to their number means all of them, and the
// messages the turn adds after them.
type Stability struct {
	// Kept is how many leading messages the last Add left in place: all of
	// them when it only appended (so the previous turn's requests are a
	// prefix of this turn's), 0 when it evicted or summarised, or when
	// the memory does not know (it was loaded from its store since).
	Kept int
	// Keeps is how many leading messages the next Add will leave in
	// place, when it adds the given messages and a reply about as long as
	// the newest turn's: all of them when it will only append (or when
	// its summarizer reads the conversation first:
	// [ConversationSummarizer]), 0 when it will evict or summarise.
	Keeps int
	// Summarizes reports that the next Add will summarise with a
	// summarizer that reads the conversation first
	// ([ConversationSummarizer]): the turn's prompt is sent again within
	// the turn, so a prompt-cache breakpoint on it pays whenever the next
	// request comes.
	Summarizes bool
}

// ErrNoStability is the error of Stability on a memory that does not
// know its stability: a [Manager]'s memory over a policy whose memories
// are not StableMemory. An AI service then marks the prompt as if the
// memory only appended.
var ErrNoStability = errors.New("memory: the memory does not tell its stability")

// A StableMemory is a [Memory] that tells which prefix of its history
// stays in place from turn to turn. An AI service marks prompt-cache
// breakpoints (Anthropic's cache_control) only where they pay: on a
// message the next request will start with too (Keeps), whose prefix
// is written for it, or one the previous request had (Kept), whose prefix
// it may have written; a memory that evicts on every turn gets no mark.
// The memories of [Window], [TokenWindow] and [Compressing] implement it,
// as do those a [Manager] hands out when the policy's do. A memory that
// does not implement it is marked as if it only appended.
type StableMemory interface {
	Memory
	// Stability returns the stability of the history, before the turn
	// whose messages so far are next is added.
	Stability(ctx context.Context, next []llms.MessageContent) (Stability, error)
}

// Stability implements [StableMemory].
func (w *window) Stability(ctx context.Context, next []llms.MessageContent) (Stability, error) {
	if err := ctx.Err(); err != nil {
		return Stability{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.meta.len()
	if w.sys != nil {
		n++
	}
	st := Stability{}
	if w.kept {
		st.Kept = n
	}
	total := w.total
	var added []msgCost
	for i := range next {
		if isSystem(next[i]) {
			continue
		}
		c := costOf(&next[i], w.cost(&next[i]))
		added = append(added, c)
		total += int(c.cost)
	}
	if reply := newestReply(w.meta.live()); reply.cost > 0 {
		added = append(added, reply)
		total += int(reply.cost)
	}
	if e, _ := w.evictions(total, w.meta.live(), added); e == 0 {
		st.Keeps = n
	}
	return st, nil
}

// newestReply returns the cost of what followed the newest user message
// of costs (the newest turn's reply and tool exchange), as one AI
// message: an estimate of the next reply.
func newestReply(costs []msgCost) msgCost {
	var c msgCost
	for i := len(costs) - 1; i >= 0 && !costs[i].human; i-- {
		c.cost += costs[i].cost
	}
	return c
}

// Stability implements [StableMemory].
func (c *compressing) Stability(ctx context.Context, next []llms.MessageContent) (Stability, error) {
	if err := ctx.Err(); err != nil {
		return Stability{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.p
	n := c.meta.len()
	if c.sys != nil {
		n++
	}
	if c.summ != nil {
		n++
	}
	st := Stability{}
	if c.kept {
		st.Kept = n
	}
	total := c.body
	var added []msgCost
	for i := range next {
		if !isSystem(next[i]) {
			m := costOf(&next[i], p.cost(&next[i]))
			added = append(added, m)
			total += int(m.cost)
		}
	}
	reply := newestReply(c.meta.live())
	if reply.cost > 0 {
		added = append(added, reply)
		total += int(reply.cost)
	}
	acct := c.acct
	if p.costs != nil {
		// What Add will account first: the turn's request.
		acct.account(p.costs, p.ttl, p.now(), c.sysCost, total-c.body, int(reply.cost))
	}
	k, _, _ := c.foldDepth(c.sysCost, total, c.summCost, turns{c.meta.live(), added}, &acct, false)
	if cs, ok := p.sum.(ConversationSummarizer); ok && cs.WantsConversation() {
		// A summary reads the conversation, this turn included, first:
		// its prefix pays even when the Add summarises.
		st.Keeps, st.Summarizes = n, k > 0
		return st, nil
	}
	if k == 0 {
		st.Keeps = n
	}
	return st, nil
}

// Stability implements [StableMemory]: the wrapped memory's, when it is
// a StableMemory; else an error wrapping [ErrNoStability].
func (g *managed) Stability(ctx context.Context, next []llms.MessageContent) (Stability, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.deleted {
		return Stability{}, fmt.Errorf("memory: reading %q: %w", g.mem.ID(), ErrDeleted)
	}
	s, ok := g.mem.(StableMemory)
	if !ok {
		return Stability{}, fmt.Errorf("memory %q (%T): %w", g.mem.ID(), g.mem, ErrNoStability)
	}
	return s.Stability(ctx, next)
}
