package ai

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// Sub-agents: an AI service called from a tool of another service's turn,
// as that turn's agent (package runtime/agent/subagent builds such tools).
// The link between the two turns is made by [WithAgent]; this file holds
// what the turns share through it: the turn budget of model calls, the
// usage roll-up, the memory owner and the tagged events.

// DefaultAgentConcurrency is how many calls of concurrent tools
// ([Tool.Concurrent], the sub-agent tools) of one model reply run at once
// when [Config.AgentConcurrency] is 0.
const DefaultAgentConcurrency = 4

// DefaultMaxAgentDepth is how deeply sub-agents may nest (an agent calling
// an agent, ...) when [AgentRun.MaxDepth] is 0.
const DefaultMaxAgentDepth = 4

// EventSubAgent is the type of the events a sub-agent's turn sends to the
// client of the request it runs in: each carries an [AgentEvent].
const EventSubAgent = "SubAgent"

// Errors of sub-agent turns, for errors.Is.
var (
	// ErrTurnBudget: the model calls of a turn and of the sub-agent turns
	// it ran reached the turn budget ([Config.TurnBudget]).
	ErrTurnBudget = errors.New("turn budget of model calls spent")
	// ErrAgentDepth: sub-agents nested deeper than [AgentRun.MaxDepth]
	// (an agent calling itself through others, for example).
	ErrAgentDepth = errors.New("sub-agents nested too deeply")
)

// An AgentEvent is the data of an [EventSubAgent] event: one step of a
// sub-agent's turn, tagged with the agent, so that a page can show the
// progress of each sub-agent of a fan-out apart.
type AgentEvent struct {
	// Agent is the sub-agent's name ([AgentRun.Name]); Session the
	// sub-conversation it continues.
	Agent   string `json:"agent"`
	Session string `json:"session,omitempty"`
	// Type is what happened: "Thinking" (Text: the model's reasoning),
	// "Stream" (Text: a chunk of the text of a model reply, as it
	// streams: the final answer's and the text before tool calls),
	// "Text" (Text: the text of a model reply that calls tools, when the
	// provider did not stream it), "ToolCall" (Tool, ID, Arguments: the sub-agent calls
	// one of its tools) or "ToolResult" (Tool, ID, Failed: it returned).
	// A remote A2A agent called as a tool (package runtime/a2atools) also
	// sends "Status" and "Artifact" steps, and "Stream" for its messages.
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	Tool      string `json:"tool,omitempty"`
	ID        string `json:"id,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	Failed    bool   `json:"failed,omitempty"`
}

// A MemoryOwner holds the chat memories of a sub-agent's turns in place of
// the current chat scope: an AI service whose method is chat-scoped makes
// its memory id from OwnerID ("<OwnerID>#<service>.<Method>") and
// registers its memory with AttachMemory, so that ending the owner (a
// sub-agent session) deletes them.
type MemoryOwner interface {
	// OwnerID is the owner's id, unique in the process.
	OwnerID() string
	// AttachMemory registers mem under key with the owner (once per key),
	// which clears or deletes it as a chat scope would.
	AttachMemory(ctx context.Context, key string, mem chatimpl.ScopedMemory) error
}

// AgentRun describes one run of a sub-agent, from a tool call of the turn
// that runs in the ctx given to [WithAgent].
type AgentRun struct {
	// Name is the agent's name, as its events are tagged.
	Name string
	// Session is the sub-conversation the run continues or starts.
	Session string
	// Owner, when set, holds the chat-scoped memories of the sub-agent's
	// turns (a session's own memory); nil keeps the current scope's.
	Owner MemoryOwner
	// MaxDepth bounds how deeply sub-agents nest; 0 means
	// [DefaultMaxAgentDepth].
	MaxDepth int
}

// agentLink is a sub-agent run in a context: the AI service turns run
// directly in it (not from one of their own tools) are the sub-agent's.
type agentLink struct {
	context.Context // the tool call's: the link is the sub-agent's ctx
	run             AgentRun
	parent          *turn      // the turn whose tool call runs the sub-agent
	depth           int        // 1 for a sub-agent of a top-level turn
	call            *agentCall // the tool call, when it is a concurrent tool's
}

type agentKey struct{}

// Value returns the link for agentKey and asks the parent for every other
// key.
func (a *agentLink) Value(key any) any {
	if _, ok := key.(agentKey); ok {
		return a
	}
	return a.Context.Value(key)
}

// WithAgent returns ctx in which the AI service turns run are those of
// the sub-agent run describes: ctx must be that of a tool call of a turn
// (the ctx a [Tool.Invoke] is given). The sub-agent's turns:
//
//   - count their model calls against the turn budget of the top-level
//     turn ([Config.TurnBudget]), each also bounded by its own service's
//     MaxModelCalls;
//   - add their token usage (cache figures included) to the parent turn's
//     Reply.Usage when they end, done or failed;
//   - send their steps to the client as [EventSubAgent] events tagged with
//     run's Name and Session, the model's reasoning among them
//     instead of Thinking events;
//   - fail on a call of a tool they do not offer (ErrUnknownTool), rather
//     than telling their model;
//   - keep their chat-scoped memory with run.Owner when it is set.
//
// Outside a turn's tool call it returns an error; nested deeper than
// run.MaxDepth, an error matching [ErrAgentDepth].
func WithAgent(ctx context.Context, run *AgentRun) (context.Context, error) {
	h, _ := ctx.Value(heldKey{}).(*heldTurn)
	if h == nil || h.t == nil {
		return ctx, fmt.Errorf("ai: sub-agent %q: not called from a tool of an AI service turn: %w", run.Name, chat.ErrNotActive)
	}
	max := run.MaxDepth
	if max <= 0 {
		max = DefaultMaxAgentDepth
	}
	depth := 1
	if p := h.t.agent; p != nil {
		depth = p.depth + 1
	}
	if depth > max {
		return ctx, fmt.Errorf("ai: sub-agent %q: %w: %d levels, the limit is %d", run.Name, ErrAgentDepth, depth, max)
	}
	a := &agentLink{Context: ctx, run: *run, parent: h.t, depth: depth}
	if c, _ := ctx.Value(agentCallKey{}).(*agentCall); c != nil && c.turn == h.t {
		a.call = c
	}
	return a, nil
}

// agentOf returns the sub-agent link of a turn about to run in ctx: the
// one of ctx when the turn runs directly in it, not from a tool of
// another turn of the sub-agent.
func agentOf(ctx context.Context) *agentLink {
	a, _ := ctx.Value(agentKey{}).(*agentLink)
	if a == nil {
		return nil
	}
	if h, _ := ctx.Value(heldKey{}).(*heldTurn); h == nil || h.t != a.parent {
		return nil
	}
	return a
}

// budget is the model calls a top-level turn and its sub-agents made.
type budget struct {
	used atomic.Int64
	max  int64
}

// agentState is what the sub-agents of a turn share with it.
type agentState struct {
	mu   sync.Mutex // guards the Reply's Usage, which sub-agents add to
	done bool       // the turn returned: late roll-ups are dropped
}

// initBudget gives t its budget: that of its sub-agent's parent, or its
// own.
func (t *turn) initBudget(a *agentLink) {
	t.agent = a
	if a != nil {
		t.budget = a.parent.budget
		return
	}
	t.ownBudget.max = int64(t.s.turnBudget)
	t.budget = &t.ownBudget
}

// overBudget reports an error when the turn budget is spent.
func (t *turn) overBudget() error {
	b := t.budget
	if b.used.Load() < b.max {
		return nil
	}
	return t.errorf("%w: %d model calls made by the turn and its sub-agents, the budget of the top-level turn (Config.TurnBudget)", ErrTurnBudget, b.max)
}

// addUsage adds u to the turn's usage.
func (t *turn) addUsage(u Usage) {
	t.sh.mu.Lock()
	t.reply.Usage.add(u)
	t.sh.mu.Unlock()
}

// finish ends the sharing of t with its sub-agents, whose usage it adds
// to its parent's: a sub-agent still running (a tool left to finish after
// its timeout) no longer adds to t's Reply, which the caller now owns.
func (t *turn) finish() {
	t.sh.mu.Lock()
	if t.sh.done {
		t.sh.mu.Unlock()
		return
	}
	t.sh.done = true
	u := t.reply.Usage
	t.sh.mu.Unlock()
	a := t.agent
	if a == nil {
		return
	}
	p := a.parent
	p.sh.mu.Lock()
	if !p.sh.done {
		p.reply.Usage.add(u)
	}
	p.sh.mu.Unlock()
}

// agentEvent sends ev, tagged with t's sub-agent, to the client of the
// request in ctx; outside a request it does nothing.
func (t *turn) agentEvent(ctx context.Context, ev AgentEvent) {
	if !t.agentStream { // outside a request
		return
	}
	a := t.agent
	ev.Agent, ev.Session = a.run.Name, a.run.Session
	if err := chat.Response(ctx).Event(EventSubAgent, ev); err != nil && !errors.Is(err, chat.ErrNotActive) {
		t.s.log().DebugContext(ctx, "ai: sending a sub-agent event", "service", t.s.name, "method", t.m.Name, "err", err)
	}
}

// onAgentChunk sends a streamed chunk of the text of a sub-agent's reply
// as a Stream step (never a tool call's fragment).
func (t *turn) onAgentChunk(ctx context.Context, chunk []byte) error {
	if len(chunk) == 0 || isToolCallDelta(chunk) {
		return nil
	}
	t.agentChunked.Store(true)
	t.agentEvent(ctx, AgentEvent{Type: "Stream", Text: string(chunk)})
	return nil
}

// agentCalls sends the ToolCall events of a sub-agent's reply, after its
// text when it did not stream.
func (t *turn) agentCalls(ctx context.Context, text string, calls []llms.ToolCall) {
	if text != "" && !t.agentChunked.Load() {
		t.agentEvent(ctx, AgentEvent{Type: "Text", Text: text})
	}
	for _, c := range calls {
		t.agentEvent(ctx, AgentEvent{Type: "ToolCall", Tool: c.FunctionCall.Name, ID: c.ID, Arguments: c.FunctionCall.Arguments})
	}
}

// agentResults sends the ToolResult events of the executions from first
// and fails the sub-agent's turn on a call of a tool it does not offer.
func (t *turn) agentResults(ctx context.Context, first int) error {
	var unknown error
	for _, ex := range t.reply.Executions[first:] {
		if unknown == nil && errors.Is(ex.Err, ErrUnknownTool) {
			unknown = ex.Err
		}
		t.agentEvent(ctx, AgentEvent{Type: "ToolResult", Tool: ex.Name, ID: ex.ID, Failed: ex.Err != nil})
	}
	if unknown != nil {
		return t.errorf("sub-agent %q: %w: the tools are %s", t.agent.run.Name, unknown, toolNames(t.tools))
	}
	return nil
}

// concurrentCalls reports how many of calls are of concurrent tools.
func (t *turn) concurrentCalls(calls []llms.ToolCall) int {
	n := 0
	for _, c := range calls {
		if tool, ok := findTool(t.tools, c.FunctionCall.Name); ok && tool.Concurrent {
			n++
		}
	}
	return n
}

// runConcurrent runs calls, those of concurrent tools at most
// AgentConcurrency at once, in goroutines, the others in order in this
// one, into out.
func (t *turn) runConcurrent(ctx context.Context, calls []llms.ToolCall, out []ToolExecution) error {
	errs := make([]error, len(calls))
	sem := make(chan struct{}, t.s.agentConc)
	var wg sync.WaitGroup
	for i, c := range calls {
		if tool, ok := findTool(t.tools, c.FunctionCall.Name); ok && tool.Concurrent {
			wg.Go(func() {
				select {
				case sem <- struct{}{}:
					defer func() { <-sem }()
				case <-ctx.Done(): // the call fails at once on ctx
				}
				out[i], errs[i] = t.runTool(ctx, calls[i])
			})
		}
	}
	for i, c := range calls {
		if tool, ok := findTool(t.tools, c.FunctionCall.Name); !ok || !tool.Concurrent {
			out[i], errs[i] = t.runTool(ctx, c)
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// AddUsage adds u to the token usage of the turn whose tool call ctx is
// the context of (its Reply.Usage, and the figures of its span): the
// model calls a tool makes other than through a sub-agent's turn (the
// summary of a hand-off, say) count in the turn that called the tool. It
// reports whether it did: false outside a tool call of a turn, or once the
// turn returned.
func AddUsage(ctx context.Context, u Usage) bool {
	h, _ := ctx.Value(heldKey{}).(*heldTurn)
	if h == nil || h.t == nil {
		return false
	}
	t := h.t
	t.sh.mu.Lock()
	defer t.sh.mu.Unlock()
	if t.sh.done {
		return false
	}
	t.reply.Usage.add(u)
	return true
}
