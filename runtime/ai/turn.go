package ai

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// runMode is how a turn asks and what it accepts.
type runMode struct {
	// json asks for JSON: JSON mode and the schema instruction.
	json bool
	// check, when set, validates the final answer: it returns the content
	// to report, or an error that earns the model one corrective retry.
	check func(content string) (string, error)
	// stream, when set, receives the text chunks.
	stream *streamSink
}

// turn is one request in progress.
type turn struct {
	s      *Service
	m      *Method
	mode   runMode
	prompt []llms.MessageContent // what the model is sent
	msgs   []llms.MessageContent // what the memory gets if the turn completes
	tools  []Tool                // what the model may call: m.Tools, then the sources'
	defs   []llms.Tool           // the definitions of tools
	opts   []llms.CallOption
	optBuf [5]llms.CallOption // the service's first option and the turn's 4 at most
	held   heldTurn
	reply  *Reply
	turnFlags
	convID string // the conversation's id, for telemetry (when it is on)

	guard *guarded // nil without guardrails
	// passages are what a generic retrieval put in the prompt's user
	// message, for the long-term facts placed after them.
	passages []schema.Document
	// facts are the long-term facts a generic recall put there, and
	// blocks what the context sources put after them (placeContext).
	facts  []string
	blocks []contextBlock
	// committed: commit added the turn to the memory.
	committed bool
	// stable is what the memory tells of its front (memory.StableMemory),
	// nil when it tells nothing; markLimit, set by start from it, is the
	// index of the first prompt message that may not carry a prompt-cache
	// breakpoint, -1 for none (see markCache).
	stable    *memory.Stability
	markLimit int
	// cache is what the service knew of the memory's prompt cache when
	// the turn started (set with stable).
	cache cacheView
	// slot is 1 + the index in prompt of the user message that carries
	// the per-request context slot (passages, facts, blocks), 0 when it
	// carries none: sent as it is once, never committed as it is.
	slot int

	// agent is the sub-agent run t is a turn of, nil for a turn of its
	// own; budget is the turn budget t counts its model calls against:
	// ownBudget, or its top-level turn's. sh guards reply.Usage, which
	// t's sub-agents add to.
	agent *agentLink
	// agentStream: t is a sub-agent's turn inside a request, whose steps
	// go to the client and whose text streams to it as Stream steps; agentChunked reports that
	// the current model call streamed some.
	agentStream  bool
	agentChunked atomic.Bool
	budget       *budget
	ownBudget    budget
	sh           agentState
}

// run runs one turn of req: see [Service.Chat].
func (s *Service) run(ctx context.Context, req *Request, mode runMode) (*Reply, error) {
	if tr, ok := s.tel.tracer(); ok {
		return s.runTraced(ctx, tr, req, mode)
	}
	return s.runTurn(ctx, req, mode, "")
}

// runTurn runs one turn of req: see [Service.Chat]. convID is the
// conversation's id when the turn is traced.
func (s *Service) runTurn(ctx context.Context, req *Request, mode runMode, convID string) (*Reply, error) {
	if req == nil {
		return nil, fmt.Errorf("ai: %s: %w: nil request", s.name, ErrInvalidRequest)
	}
	m := req.Method
	if m == nil {
		return nil, fmt.Errorf("ai: %s: %w: no method", s.name, ErrInvalidRequest)
	}
	if s.model == nil {
		return nil, s.errorf(m.Name, "%w", ErrNoModel)
	}
	system, user, err := req.prompt()
	if err != nil {
		return nil, s.errorf(m.Name, "%w", err)
	}
	tools := m.Tools
	defs, err := m.definitions(s.dialect)
	if err != nil {
		return nil, s.errorf(m.Name, "%w", err)
	}
	if len(s.sources) > 0 {
		if tools, defs, err = s.sourceTools(ctx, m); err != nil {
			return nil, s.errorf(m.Name, "%w", err)
		}
	}
	retrieval := RetrievalOff
	var found *sourceLog // the sources of an agentic turn
	if s.know != nil {
		retrieval = s.know.mode(m.Name)
	}
	if retrieval == RetrievalAgentic {
		if ctx, found, tools, defs, err = s.agenticTurn(ctx, m, tools, defs); err != nil {
			return nil, s.errorf(m.Name, "%w", err)
		}
	}
	longMode := s.long.mode(m.Name)
	if longMode == RetrievalAgentic {
		if tools, defs, err = s.long.withTools(tools, defs); err != nil {
			return nil, s.errorf(m.Name, "%w", err)
		}
	}
	if s.dialect.noTools && len(tools) > 0 {
		return nil, s.errorf(m.Name, "%w", s.dialect.toolsError())
	}
	ag := agentOf(ctx)
	var id string
	var kind memoryKind
	if ag != nil && ag.run.Owner != nil && req.MemoryID == "" && m.Kind != chat.KindInvocation {
		id, kind = s.defaultID(ag.run.Owner.OwnerID(), m.Name), memOwner
	} else if id, kind, err = s.memoryID(ctx, req); err != nil {
		return nil, s.errorf(m.Name, "%w", err)
	}
	st, err := s.acquire(ctx, id)
	if err != nil {
		return nil, s.errorf(m.Name, "%w", err)
	}
	defer s.release(st)
	if err := s.attachTo(ctx, st, kind, ag); err != nil {
		return nil, s.errorf(m.Name, "%w", err)
	}
	mem, err := s.memory.Memory(ctx, id)
	if err != nil {
		return nil, s.errorf(m.Name, "memory %q: %w", id, err)
	}
	gen := st.generation()
	// A memory may summarise before the request (a Compressing memory's
	// fold before a cold request): its summarizer's calls are the turn's.
	var summarized *Usage // only for a memory that may summarize: it escapes
	mctx := ctx
	if memory.MaySummarize(mem) {
		summarized = new(Usage)
		mctx = memory.WithSummaryUsage(ctx, func(info map[string]any) { summarized.add(s.dialect.usage(info)) })
	}
	history, err := mem.Messages(mctx)
	if err != nil {
		return nil, s.errorf(m.Name, "reading memory %q: %w", id, err)
	}

	t := &turn{s: s, m: m, mode: mode, tools: tools, defs: defs, reply: new(Reply), convID: convID}
	if summarized != nil {
		t.reply.Usage = *summarized
	}
	t.initBudget(ag)
	t.agentStream = ag != nil && chat.Request(ctx) != nil
	defer t.finish()
	if g := s.guardrails(m.Name); !g.Empty() {
		t.guard = &guarded{set: g, user: user}
		if len(g.Input) > 0 && user != "" {
			if user, err = t.checkInput(ctx, user, history); err != nil {
				return nil, err
			}
			t.guard.user = user
		}
		if k := mode.stream; k != nil && len(g.Output) > 0 && chat.Response(ctx) == nil {
			k.hold = true // no Retract event can withdraw chunks outside a request
		}
	}
	if sm, ok := mem.(memory.StableMemory); ok && s.dialect.cacheMarks {
		var next []llms.MessageContent
		if user != "" {
			next = append(next, llms.TextParts(llms.ChatMessageTypeHuman, user))
		}
		switch st, err := sm.Stability(ctx, next); {
		case err == nil:
			t.stable = &st
			t.cache = s.gaps.view(id, s.now(), s.cacheTTL)
		case !errors.Is(err, memory.ErrNoStability):
			return nil, s.errorf(m.Name, "reading memory %q: %w", id, err)
		}
	}
	t.held = heldTurn{st: st, t: t}
	t.held.next, _ = ctx.Value(heldKey{}).(*heldTurn)
	ctx = context.WithValue(ctx, heldKey{}, &t.held)
	t.setOptions()
	ended, err := t.begin(ctx, system, user, history)
	if err == nil && !ended && retrieval == RetrievalGeneric {
		err = t.augment(ctx, user, history)
	}
	if err == nil && !ended && longMode == RetrievalGeneric {
		err = t.recallFacts(ctx, user)
	}
	if err == nil && !ended && len(s.sources) > 0 {
		err = t.placeContext(ctx, user)
	}
	if len(t.passages)+len(t.facts)+len(t.blocks) > 0 {
		t.slot = len(t.prompt)
	}
	if err == nil && !ended {
		err = t.loop(ctx)
	}
	t.finish() // no sub-agent adds to the Reply any more
	if t.stable != nil {
		s.gaps.record(id, s.now(), t.cache, t.markLimit != 0)
	}
	if found != nil {
		t.reply.Sources = found.all()
	}
	if err != nil {
		if p := (*ConfirmationPending)(nil); errors.As(err, &p) {
			return nil, t.paused(ctx, p, func() error { return t.commit(ctx, st, mem, gen) })
		}
		if pc := (*pauseCancelled)(nil); errors.As(err, &pc) {
			return nil, t.commitCancelled(ctx, pc, func() error { return t.commit(context.WithoutCancel(ctx), st, mem, gen) })
		}
		if chat.Cancelled(ctx) {
			t.interrupted(ctx, st, mem, gen)
		}
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		if chat.Cancelled(ctx) {
			t.interrupted(ctx, st, mem, gen)
		}
		return nil, t.errorf("%w", err)
	}
	if err := t.commit(ctx, st, mem, gen); err != nil {
		return nil, err
	}
	if longMode == RetrievalGeneric && t.committed {
		t.extract(ctx)
	}
	if l := s.log(); l.Enabled(ctx, slog.LevelDebug) {
		l.LogAttrs(ctx, slog.LevelDebug, "ai: turn completed",
			slog.String("service", s.name), slog.String("method", m.Name), slog.String("memory", id),
			slog.Int("model_calls", t.reply.ModelCalls), slog.Int("tool_calls", len(t.reply.Executions)),
			slog.Bool("immediate", t.reply.Immediate), slog.Int("total_tokens", t.reply.Usage.TotalTokens))
	}
	return t.reply, nil
}

// begin builds the first prompt and, when the memory ends with a paused
// turn (tool calls waiting for the user's confirmation), resumes it with
// the request's answer: see [ConfirmationPending]. It reports whether the
// turn ended on immediate tools without a model call.
func (t *turn) begin(ctx context.Context, system, user string, history []llms.MessageContent) (bool, error) {
	var ans *answer
	var repause bool
	if t.agent != nil {
		// A sub-agent's answer comes with its tool call: the request's
		// is its top-level turn's.
		ans, repause = t.agent.agentAnswer()
	} else {
		var err error
		if ans, err = readAnswer(chat.Request(ctx), t.s.clientResultLimit); err != nil {
			return false, t.errorf("%w", err)
		}
	}
	pend := pendingCalls(history)
	if repause && len(pend) > 0 {
		t.start(system, "", history)
		return false, t.repause(pend)
	}
	if len(pend) == 0 {
		if ans != nil {
			return false, t.errorf("%w", &chat.BadRequestError{Param: ans.param(), Err: fmt.Errorf("%q: %w", ans.id, errStale)})
		}
		t.start(system, user, history)
		return false, nil
	}
	t.start(system, "", history)
	immediate, err := t.resume(ctx, pend, ans)
	if err != nil {
		return false, err
	}
	if ans == nil && user != "" {
		t.add(llms.TextParts(llms.ChatMessageTypeHuman, user))
		return false, nil
	}
	if immediate {
		t.reply.Immediate = true
	}
	return immediate, nil
}

// setOptions prepares the call options of every model call of the turn:
// the service's, then the tools (one slice per Method, made once, unless
// the service has tool sources), JSON mode and streaming.
func (t *turn) setOptions() {
	// At most 4 of the turn's own: tools, JSON mode, and streaming and
	// reasoning (the reasoning function with ignoreChunk, or with the
	// stream's function).
	n := len(t.s.options) + 4
	if n <= len(t.optBuf) {
		t.opts = t.optBuf[:0]
	} else {
		t.opts = make([]llms.CallOption, 0, n)
	}
	t.opts = append(t.opts, t.s.options...)
	if len(t.defs) > 0 {
		t.opts = append(t.opts, llms.WithTools(t.defs))
	}
	if t.mode.json {
		t.opts = append(t.opts, llms.WithJSONMode())
	}
	if t.mode.stream != nil {
		t.opts = append(t.opts, llms.WithStreamingFunc(t.mode.stream.onChunk))
	} else if t.agentStream {
		t.opts = append(t.opts, llms.WithStreamingFunc(t.onAgentChunk))
	}
	if t.s.thinking {
		t.opts = append(t.opts, llms.WithStreamingReasoningFunc(t.onReasoning))
		if t.mode.stream == nil && !t.agentStream && t.s.dialect.pairStreaming {
			t.opts = append(t.opts, llms.WithStreamingFunc(ignoreChunk))
		}
	}
}

// ignoreChunk is a streaming function that drops what it is given.
func ignoreChunk(context.Context, []byte) error { return nil }

// start builds the first prompt: the system message, the memory, the user
// message.
func (t *turn) start(system, user string, history []llms.MessageContent) {
	if t.mode.json {
		system = withJSONInstruction(system, t.m.Schema)
	}
	t.prompt = make([]llms.MessageContent, 0, len(history)+6)
	t.msgs = make([]llms.MessageContent, 0, 6)
	if system != "" {
		t.add(t.m.systemMessage(system))
	}
	// The breakpoints may go on the messages before the limit: those the
	// memory keeps for the next request (its whole history kept: the new
	// turn's too), or those the previous request had.
	st := t.stable
	t.markLimit = -1
	if st != nil {
		t.markLimit = 0
	}
	kept, keeps := 0, 0 // the limits of st.Kept and st.Keeps in t.prompt
	for h, m := range history {
		// The new system message replaces the stored one.
		if system == "" || m.Role != llms.ChatMessageTypeSystem {
			t.prompt = append(t.prompt, m)
		}
		if st != nil && h < st.Kept {
			kept = len(t.prompt)
		}
		if st != nil && h < st.Keeps {
			keeps = len(t.prompt)
		}
	}
	if st != nil {
		if st.Keeps >= len(history) {
			keeps = -1 // the new turn's messages too
		}
		t.markLimit = t.cache.limit(st, kept, keeps)
	}
	if user != "" {
		t.add(llms.TextParts(llms.ChatMessageTypeHuman, user))
	}
}

// add appends a message of the turn to the prompt and to what is
// committed.
func (t *turn) add(m llms.MessageContent) {
	t.prompt = append(t.prompt, m)
	t.msgs = append(t.msgs, m)
}

// loop calls the model and runs the tools it asks for until a reply calls
// none, or calls only immediate tools.
func (t *turn) loop(ctx context.Context) error {
	retried := false
	for {
		if t.reply.ModelCalls >= t.s.maxCalls {
			return t.errorf("%w: the model still asked for tools at the limit of %d model calls", ErrTooManyModelCalls, t.s.maxCalls)
		}
		if err := t.overBudget(); err != nil {
			return err
		}
		choice, err := t.call(ctx)
		if err != nil {
			return err
		}
		calls := normaliseToolCalls(choice.ToolCalls, t.reply.ModelCalls)
		if len(calls) == 0 {
			content := choice.Content
			if t.guard != nil && len(t.guard.set.Output) > 0 {
				checked, again, err := t.checkOutput(ctx, content)
				if err != nil {
					return err
				}
				if again {
					continue
				}
				content = checked
			}
			answer := llms.TextParts(llms.ChatMessageTypeAI, content)
			if t.mode.check != nil {
				checked, cerr := t.mode.check(content)
				if cerr != nil {
					if retried {
						return t.errorf("%w after a corrective retry: %w", ErrInvalidOutput, cerr)
					}
					if t.reply.ModelCalls >= t.s.maxCalls {
						return t.errorf("%w, and no model call is left for a corrective retry (%w): %w", ErrInvalidOutput, ErrTooManyModelCalls, cerr)
					}
					retried = true
					t.s.log().WarnContext(ctx, "ai: the model's answer is not valid JSON; asking again",
						"service", t.s.name, "method", t.m.Name, "err", cerr)
					// Sent, never committed: the memory gets the valid exchange.
					t.prompt = append(t.prompt, answer, llms.TextParts(llms.ChatMessageTypeHuman, correction(cerr)))
					continue
				}
				content = checked
			}
			t.add(answer)
			t.reply.Content = content
			return nil
		}

		if k := t.mode.stream; k != nil && k.hold && !k.flush() {
			return errStopped // the text before tool calls is not guarded
		}
		call := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: make([]llms.ContentPart, 0, len(calls)+1)}
		if choice.Content != "" {
			call.Parts = append(call.Parts, llms.TextContent{Text: choice.Content})
		}
		for _, c := range calls {
			call.Parts = append(call.Parts, c)
		}
		t.add(call)
		first := len(t.reply.Executions)
		if t.agent != nil {
			t.agentCalls(ctx, choice.Content, calls)
		}
		if err := t.runTools(ctx, calls); err != nil {
			return t.errorf("%w", err)
		}
		if t.agent != nil {
			if err := t.agentResults(ctx, first); err != nil {
				return err
			}
		}
		immediate, err := t.record(ctx, calls, first)
		if err != nil {
			return err
		}
		if immediate {
			t.reply.Immediate = true
			t.reply.Content = choice.Content
			return nil
		}
		if err := ctx.Err(); err != nil {
			return t.errorf("%w", err)
		}
	}
}

// call makes one model call and returns the reply's choice.
func (t *turn) call(ctx context.Context) (*llms.ContentChoice, error) {
	if k := t.mode.stream; k != nil {
		k.yielded.Store(false)
		k.partial = k.partial[:0]
	}
	t.resetFlags()
	if t.agentStream {
		t.agentChunked.Store(false)
	}
	resp, err := t.generate(ctx)
	t.reply.ModelCalls++
	t.budget.used.Add(1)
	n := t.reply.ModelCalls
	if k := t.mode.stream; k != nil && k.stopped.Load() {
		return nil, errStopped
	}
	// Providers often report a cancelled or expired context as an error of
	// their own, or return a truncated answer with no error at all.
	if cerr := ctx.Err(); cerr != nil {
		if err == nil {
			return nil, t.errorf("model call %d: %w", n, cerr)
		}
		if !errors.Is(err, cerr) {
			return nil, t.errorf("model call %d: %w: %w", n, cerr, err)
		}
	}
	if err != nil {
		return nil, t.errorf("model call %d: %w", n, err)
	}
	choice := pickChoice(resp)
	if choice == nil {
		return nil, t.errorf("model call %d: %w", n, ErrEmptyResponse)
	}
	// A streamed answer ends with a finish reason. Without one, the stream
	// was cut or held no model output: fail rather than commit part of an
	// answer (a provider that ignores streaming and answers whole, with no
	// finish reason, is still taken at its word, and so is a client that
	// never reports one but says otherwise that the stream ended cleanly:
	// see dialect.finish).
	reason, clean := t.s.dialect.finish(choice)
	if k := t.mode.stream; (k != nil || t.s.thinking) && !clean &&
		(k != nil && k.yielded.Load() || t.streamed.Load() || choice.Content == "" && len(choice.ToolCalls) == 0) {
		return nil, t.errorf("model call %d: %w", n, ErrIncompleteStream)
	}
	if t.s.thinking && !t.thought.Load() && choice.ReasoningContent != "" {
		// The provider did not stream its reasoning: forward it whole.
		t.think(ctx, choice.ReasoningContent)
	}
	if k := t.mode.stream; k != nil && !k.yielded.Load() && choice.Content != "" {
		// The provider does not stream: pass its answer on whole.
		if err := k.onChunk(ctx, []byte(choice.Content)); err != nil {
			return nil, err
		}
	}
	t.addUsage(t.s.dialect.usage(choice.GenerationInfo))
	t.reply.FinishReason = reason
	if l := t.s.log(); l.Enabled(ctx, slog.LevelDebug) {
		l.LogAttrs(ctx, slog.LevelDebug, "ai: model call",
			slog.String("service", t.s.name), slog.String("method", t.m.Name), slog.Int("call", n),
			slog.Int("tool_calls", len(choice.ToolCalls)), slog.String("finish_reason", reason))
	}
	return choice, nil
}

// commit adds the turn to the memory in one Add, unless the memory was
// cleared or deleted since the turn read it (a wipe or the end of its
// scope wins over the turn).
func (t *turn) commit(ctx context.Context, st *memState, mem memory.Memory, gen uint64) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.gen != gen {
		t.s.log().DebugContext(ctx, "ai: memory cleared or deleted during the turn; the turn is not remembered",
			"service", t.s.name, "method", t.m.Name, "memory", st.id)
		return nil
	}
	// The summarizer's calls of a fold the Add makes are the turn's.
	mctx := ctx
	if memory.MaySummarize(mem) {
		mctx = memory.WithSummaryUsage(ctx, func(info map[string]any) { t.addUsage(t.s.dialect.usage(info)) })
	}
	if err := mem.Add(mctx, t.msgs...); err != nil {
		if errors.Is(err, memory.ErrDeleted) {
			return nil // its scope ended during the turn
		}
		return t.errorf("committing the turn to memory %q: %w", st.id, err)
	}
	t.committed = true
	return nil
}

// InterruptedMarker ends the answer of a turn the user stopped, in the
// chat memory: the model reads, in the next turns, what the user saw of
// the answer and that it was cut there.
const InterruptedMarker = "[interrupted by the user]"

// cancelledToolResult is the result, in the chat memory, of a tool call
// that had not run, or not returned, when its turn was stopped.
const cancelledToolResult = "cancelled: the turn was stopped before this call ran"

// interrupted commits a turn the user stopped (see [chat.Cancelled]): the
// user's message and what the user saw of the answer, marked with
// [InterruptedMarker], so that the next turn's model knows it. Tool calls
// of the turn that have no result get a cancelled one: the memory never
// holds a tool call without a result. A failed commit is logged: the
// request fails as cancelled all the same.
func (t *turn) interrupted(ctx context.Context, st *memState, mem memory.Memory, gen uint64) {
	if len(t.msgs) == 0 {
		return // stopped before the turn began
	}
	t.closeToolCalls()
	text := InterruptedMarker
	if k := t.mode.stream; k != nil && len(k.partial) > 0 {
		text = string(k.partial) + "\n\n" + InterruptedMarker
	}
	if last := t.msgs[len(t.msgs)-1]; last.Role != llms.ChatMessageTypeAI || hasToolCall(last) {
		t.add(llms.TextParts(llms.ChatMessageTypeAI, text))
	}
	ctx = context.WithoutCancel(ctx) // the writes of the memory check it
	if err := t.commit(ctx, st, mem, gen); err != nil {
		t.s.log().WarnContext(ctx, "ai: the interrupted turn could not be remembered",
			"service", t.s.name, "method", t.m.Name, "memory", st.id, "err", err)
		return
	}
	t.s.log().DebugContext(ctx, "ai: the user stopped the turn; the interrupted turn is remembered",
		"service", t.s.name, "method", t.m.Name, "memory", st.id)
}

// closeToolCalls gives a cancelled result to every tool call of the turn
// without one.
func (t *turn) closeToolCalls() {
	answered := map[string]bool{}
	for _, m := range t.msgs {
		if m.Role != llms.ChatMessageTypeTool {
			continue
		}
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				answered[r.ToolCallID] = true
			}
		}
	}
	var calls []llms.ToolCall
	for _, m := range t.msgs {
		if m.Role != llms.ChatMessageTypeAI {
			continue
		}
		for _, p := range m.Parts {
			if c, ok := p.(llms.ToolCall); ok && !answered[c.ID] {
				calls = append(calls, c)
			}
		}
	}
	for _, c := range calls {
		name := ""
		if c.FunctionCall != nil {
			name = c.FunctionCall.Name
		}
		t.add(llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: c.ID, Name: name, Content: cancelledToolResult},
		}})
	}
}

// hasToolCall reports whether m holds a tool call.
func hasToolCall(m llms.MessageContent) bool {
	for _, p := range m.Parts {
		if _, ok := p.(llms.ToolCall); ok {
			return true
		}
	}
	return false
}

func (t *turn) errorf(format string, args ...any) error {
	return t.s.errorf(t.m.Name, format, args...)
}

// pickChoice returns the choice a turn goes on with: the first one, or,
// when the provider split one answer into content blocks (Anthropic: a
// choice per text or tool_use block, each with the whole usage), their
// merge. It returns nil when there is none.
func pickChoice(resp *llms.ContentResponse) *llms.ContentChoice {
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return nil
	}
	first := resp.Choices[0]
	if len(resp.Choices) == 1 {
		return first
	}
	if _, blocks := first.GenerationInfo["InputTokens"]; !blocks {
		return first // several candidates (llms.WithN): use the first
	}
	merged := &llms.ContentChoice{GenerationInfo: first.GenerationInfo}
	for _, c := range resp.Choices {
		if c == nil {
			continue
		}
		merged.Content += c.Content
		merged.ToolCalls = append(merged.ToolCalls, c.ToolCalls...)
		merged.StopReason = c.StopReason
		if c.ReasoningContent != "" {
			merged.ReasoningContent += c.ReasoningContent
		} else if _, thinking := c.GenerationInfo["ThinkingSignature"]; thinking {
			// llms/anthropic returns a thinking block as a choice whose
			// reasoning is in GenerationInfo only.
			if text, ok := c.GenerationInfo["ThinkingContent"].(string); ok {
				merged.ReasoningContent += text
			}
		}
	}
	return merged
}

// normaliseToolCalls makes the tool calls of a reply fit to be sent back:
// a type ("function"), a function (a nil one becomes an unknown tool ""),
// arguments ("{}" when the model sent none) and an id (generated when the
// provider gave none).
func normaliseToolCalls(calls []llms.ToolCall, modelCall int) []llms.ToolCall {
	for i := range calls {
		c := &calls[i]
		if c.Type == "" {
			c.Type = "function"
		}
		if c.FunctionCall == nil {
			c.FunctionCall = &llms.FunctionCall{}
		}
		if strings.TrimSpace(c.FunctionCall.Arguments) == "" {
			c.FunctionCall.Arguments = "{}"
		}
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(modelCall) + "_" + strconv.Itoa(i+1)
		}
	}
	return calls
}
