package ai

import (
	"context"
	"errors"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// A paused sub-agent pauses the whole turn. When a tool call inside a
// sub-agent's turn waits for the user's confirmation or a client tool's
// result, the sub-agent's turn pauses as any turn does (its memory is
// committed with the call pending, and it sends the Confirm or ClientTool
// event, tagged with the agent and its session), and so does every turn
// above it: each commits its memory with its own sub-agent call pending
// and sends nothing more. The answer, in the next request, reaches the
// top-level turn, which resumes its pending sub-agent call with it; the
// sub-agent tool runs the same session again (see [AgentCall]), whose
// turn takes the answer from the call rather than from the request, and
// resumes where it paused; then the parent goes on. As every memory is
// committed when the turns pause, a durable router resumes them after a
// restart.

// agentCall is a call of a concurrent tool (a sub-agent tool): its id,
// and, when it resumes a paused sub-agent, the answer meant for it.
type agentCall struct {
	id     string
	turn   *turn   // the turn whose tool call it is
	resume bool    // the call resumes a paused one
	ans    *answer // the answer to the paused sub-agent's call; nil: none
}

type agentCallKey struct{}

// resumeCall marks, in the context of a resumed turn's tool call, the
// paused sub-agent call it resumes.
type resumeCall struct {
	id   string
	turn *turn
	ans  *answer
}

type resumeKey struct{}

// AgentCall reports, in the context of a call of a concurrent tool
// ([Tool.Concurrent]: a sub-agent tool), the model's id of the tool call,
// and whether the call resumes a paused one: the turn had paused on this
// call because the sub-agent it ran paused (see [ConfirmationPending]),
// and the turn resumes now. A resumed call must run the sub-agent's paused
// session again: its turn then resumes with the answer, or pauses again
// when the answer was for another call. Outside such a call it returns
// "", false.
func AgentCall(ctx context.Context) (id string, resumed bool) {
	if c, _ := ctx.Value(agentCallKey{}).(*agentCall); c != nil {
		return c.id, c.resume
	}
	return "", false
}

// agentCallCtx returns the context of t's call c of a concurrent tool.
func (t *turn) agentCallCtx(ctx context.Context, c llms.ToolCall) context.Context {
	ac := &agentCall{id: c.ID, turn: t}
	if r, _ := ctx.Value(resumeKey{}).(*resumeCall); r != nil && r.turn == t && r.id == c.ID {
		ac.resume, ac.ans = true, r.ans
	}
	return context.WithValue(ctx, agentCallKey{}, ac)
}

// withResume returns ctx in which t's call c resumes the paused sub-agent
// it ran, with ans (nil: the sub-agent pauses again).
func (t *turn) withResume(ctx context.Context, c llms.ToolCall, ans *answer) context.Context {
	return context.WithValue(ctx, resumeKey{}, &resumeCall{id: c.ID, turn: t, ans: ans})
}

// isAgentTool reports whether c calls a concurrent tool (a sub-agent).
func (t *turn) isAgentTool(c llms.ToolCall) bool {
	tool, ok := findTool(t.tools, c.FunctionCall.Name)
	return ok && tool.Concurrent
}

// nestedAnswer reports whether ans answers a call inside the sub-agent
// that c, the first pending call, ran, rather than c itself.
func (t *turn) nestedAnswer(c llms.ToolCall, ans *answer) bool {
	return ans != nil && t.isAgentTool(c) && ans.id != confirmID(t.held.st.id, c)
}

// agentAnswer returns the answer a sub-agent's turn resumes with: the one
// its tool call carries (never the request's, which is its top-level
// turn's), and whether the call resumes the paused session without one
// (the turn then pauses again).
func (a *agentLink) agentAnswer() (ans *answer, repause bool) {
	if a.call == nil {
		return nil, false
	}
	return a.call.ans, a.call.resume && a.call.ans == nil
}

// repause returns the pause of a sub-agent's turn resumed without an
// answer for it: its first pending call waits still.
func (t *turn) repause(pend []llms.ToolCall) error {
	c := pend[0]
	if t.isClientTool(c) {
		return t.clientPending(c)
	}
	return &ConfirmationPending{Confirmation: confirmation(t.held.st.id, c)}
}

// nestedPending returns the pause of a sub-agent the execution ex reports,
// for the turn that called it; nil when ex is not one.
func nestedPending(ex *ToolExecution) *ConfirmationPending {
	var p *ConfirmationPending
	if !errors.As(ex.Err, &p) || p.Agent == "" {
		return nil
	}
	n := *p
	n.nested = true
	return &n
}

// tagAgent tags the pause of t, a sub-agent's turn, with the agent and
// its session, unless it comes from a sub-agent of its own.
func (t *turn) tagAgent(p *ConfirmationPending) {
	a := t.agent
	if a == nil || p.nested {
		return
	}
	p.Agent, p.Session = a.run.Name, a.run.Session
	if p.Client != nil {
		p.Client.Agent, p.Client.Session = a.run.Name, a.run.Session
	}
}

// badAnswer returns the *chat.BadRequestError of a resumed sub-agent call
// whose sub-agent refused the answer: the request fails with it.
func badAnswer(ex *ToolExecution) error {
	var bad *chat.BadRequestError
	if ex.Err != nil && errors.As(ex.Err, &bad) {
		return ex.Err
	}
	return nil
}

// resumeNested resumes a paused turn with an answer for a call inside one
// of the sub-agents its pending calls ran. Each sub-agent of a fan-out
// that paused sent its own event, so the answer may be for any of them:
// the pending sub-agent calls are tried in order with it, and the first
// whose sub-agent takes it resumes (a sub-agent that does not have the
// answered call refuses it before doing anything). The other pending
// calls then run again without it: their sub-agents pause again. An
// answer no sub-agent takes fails the request with the refusal.
func (t *turn) resumeNested(ctx context.Context, pend []llms.ToolCall, ans *answer) (bool, error) {
	execs := make([]ToolExecution, len(pend))
	taken := -1
	var refused error
	for i, c := range pend {
		if !t.isAgentTool(c) {
			continue
		}
		ex, err := t.runTool(t.withResume(ctx, c, ans), c)
		if err != nil {
			return false, t.errorf("%w", err)
		}
		if bad := badAnswer(&ex); bad != nil {
			if refused == nil || (errors.Is(refused, errStale) && !errors.Is(bad, errStale)) {
				refused = bad
			}
			continue
		}
		execs[i], taken = ex, i
		break
	}
	if taken < 0 {
		return false, t.errorf("%w", refused)
	}
	first := len(t.reply.Executions)
	for i, c := range pend {
		if i != taken {
			rctx := ctx
			if t.isAgentTool(c) {
				rctx = t.withResume(ctx, c, nil) // a paused sub-agent pauses again
			}
			var err error
			if execs[i], err = t.runTool(rctx, c); err != nil {
				return false, t.errorf("%w", err)
			}
		}
		t.reply.Executions = append(t.reply.Executions, execs[i])
	}
	return t.record(ctx, pend, first)
}
