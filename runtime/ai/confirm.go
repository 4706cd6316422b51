package ai

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// This file holds confirmed tools (human in the loop): a tool call that
// needs the user's confirmation pauses the turn, and the user's next
// request answers it.
//
// The paused turn is kept in the chat memory of its memory id: the turn
// so far (the user message, the model's reply with its tool calls and the
// results of the calls that ran) is committed when it pauses, so the
// memory ends with tool calls that have no result. The next turn on that
// memory finds them and resumes. The memory is the conversation's state:
// in the service's memory provider, or in the conversation store of a
// durable router, saved with the request, so a paused turn survives a
// restart.

// ErrConfirmationRequired is the error a [ToolHook] returns, without
// calling next, to demand that the user confirm the tool call before it
// runs (a tool marked [Tool.Confirm] demands it without a hook). The turn
// pauses: see [ConfirmationPending]. When the call runs again after the
// user approved it, [ToolCall.Confirmed] is true and the hook should call
// next.
var ErrConfirmationRequired = errors.New("the tool call needs the user's confirmation")

// ErrConfirmationDenied is the [ToolExecution.Err] of a tool call the user
// did not confirm.
var ErrConfirmationDenied = errors.New("the user did not confirm the tool call")

// The request data keys of an answer to a confirmation: see
// [ConfirmationPending].
const (
	KeyConfirm   = "confirm"   // the confirmation id (string); required
	KeyApprove   = "approve"   // true to run the call, false to deny it; required
	KeyReason    = "reason"    // why the user denies it (string); optional
	KeyArguments = "arguments" // the arguments the user edited (a JSON object); optional
)

// A Confirmation is a tool call waiting for the user's confirmation: the
// data of the Confirm event ([protocol.EventConfirm]) a paused turn sends.
type Confirmation struct {
	// ID identifies the confirmation: the answer names it.
	ID string `json:"id"`
	// Tool is the tool's name; Arguments the model's arguments (JSON).
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// CallID is the model's id of the tool call.
	CallID string `json:"callId"`
	// Agent and Session name the sub-agent, and its session, whose turn
	// the call belongs to (see [AgentEvent]); "" for a call of the
	// top-level turn.
	Agent   string `json:"agent,omitempty"`
	Session string `json:"session,omitempty"`
}

// ConfirmationPending is the error of a turn that paused because a tool
// call needs the user's confirmation (a tool marked [Tool.Confirm], or a
// [ToolHook] that returned [ErrConfirmationRequired]). Before returning
// it the service committed the turn so far to the memory and, inside a
// route, sent a Confirm event ([protocol.EventConfirm]) whose data is the
// Confirmation. It matches [chat.ErrPaused], so a route that returns it
// completes its request normally.
//
// The next turn on the same memory id answers the confirmation with the
// data of its request ([chat.Request]):
//
//	{"confirm": "<id>", "approve": true}                        run the call
//	{"confirm": "<id>", "approve": true, "arguments": {…}}      run it with edited arguments
//	{"confirm": "<id>", "approve": false, "reason": "too risky"} deny it
//	{"cancel": "<id>"}                                           stop the turn
//
// The turn then goes on where it stopped: the call runs (or the model is
// told that the user denied it, with the reason), and the model is called
// again. A request that does not answer (no "confirm" key: the user wrote
// something else) denies every pending call, the model being told that
// the user wrote a new message instead, and is then handled as usual. An
// answer whose id is not that of the pending confirmation (a stale one,
// or none pending) fails with a *chat.BadRequestError (BadRequest). A
// cancel gives every pending call a cancelled result, ends the turn on
// [InterruptedMarker] without calling the model, and fails the request
// with chat.ErrCancelled (the error matches [ErrPausedCallCancelled]).
//
// A call to a tool the client runs ([Tool.Client]) pauses the turn the
// same way, with Client set: the event is a ClientTool event, and the
// answer carries the result (see [protocol.ClientToolCall]).
type ConfirmationPending struct {
	Confirmation
	// Client is set when the call is to a tool the client runs
	// ([Tool.Client]): the turn waits for the client's result rather
	// than the user's confirmation, and the event sent is a ClientTool
	// event whose data is *Client. See [ClientToolPending].
	Client *protocol.ClientToolCall

	nested bool // the pause of a sub-agent of the turn, whose event it sent
}

// Error implements error.
func (e *ConfirmationPending) Error() string {
	if e.Client != nil {
		return fmt.Sprintf("tool call %q (%s) waits for the client's result %s", e.Tool, e.CallID, e.ID)
	}
	return fmt.Sprintf("tool call %q (%s) waits for the user's confirmation %s", e.Tool, e.CallID, e.ID)
}

// Is reports that the error matches [chat.ErrPaused] and
// [ErrConfirmationRequired].
func (e *ConfirmationPending) Is(target error) bool {
	return target == chat.ErrPaused || target == ErrConfirmationRequired
}

// approvedKey carries, in the context of a resumed tool call, the id of
// the call the user approved.
type approvedKey struct{}

// approved reports whether the user approved the tool call id in ctx.
func approved(ctx context.Context, id string) bool {
	v, _ := ctx.Value(approvedKey{}).(string)
	return v != "" && v == id
}

// confirmID returns the confirmation id of a tool call in the memory
// memID: a digest of the call, the same when the paused turn is read back.
func confirmID(memID string, c llms.ToolCall) string {
	h := sha256.New()
	for _, s := range []string{memID, c.ID, c.FunctionCall.Name, c.FunctionCall.Arguments} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// confirmation returns the confirmation of a pending tool call.
func confirmation(memID string, c llms.ToolCall) Confirmation {
	args := json.RawMessage(c.FunctionCall.Arguments)
	if !json.Valid(args) {
		b, _ := json.Marshal(c.FunctionCall.Arguments)
		args = b
	}
	return Confirmation{ID: confirmID(memID, c), Tool: c.FunctionCall.Name, Arguments: args, CallID: c.ID}
}

// pendingCalls returns the tool calls of the memory's last model reply
// that have no result: the calls of a paused turn, in order; nil when the
// memory does not end with a paused turn.
func pendingCalls(history []llms.MessageContent) []llms.ToolCall {
	var answered map[string]bool // made only when the memory ends with tool results
	for i := len(history) - 1; i >= 0; i-- {
		m := history[i]
		switch m.Role {
		case llms.ChatMessageTypeTool:
			for _, p := range m.Parts {
				if r, ok := p.(llms.ToolCallResponse); ok {
					if answered == nil {
						answered = map[string]bool{}
					}
					answered[r.ToolCallID] = true
				}
			}
		case llms.ChatMessageTypeAI:
			var pend []llms.ToolCall
			for _, p := range m.Parts {
				if c, ok := p.(llms.ToolCall); ok && c.FunctionCall != nil && !answered[c.ID] {
					pend = append(pend, c)
				}
			}
			return pend
		default:
			return nil
		}
	}
	return nil
}

// An answer is the user's answer to a paused turn: to a confirmation, to
// a client tool call (client set), or a cancel of the turn (cancel set).
type answer struct {
	id        string
	approve   bool
	reason    string
	arguments json.RawMessage // nil: the model's
	client    bool            // an answer to a client tool call: result or failure
	result    json.RawMessage // the client tool's result; nil when it failed
	failure   string          // why the client tool failed, with a nil result
	cancel    bool            // a cancel of the paused turn
}

// param is the data key naming the answered call.
func (a *answer) param() string {
	switch {
	case a.cancel:
		return KeyCancel
	case a.client:
		return KeyClientTool
	}
	return KeyConfirm
}

// badData returns the error of a request data key that does not fit: err
// itself when it is a *chat.BadRequestError already.
func badData(key string, err error) error {
	var bad *chat.BadRequestError
	if errors.As(err, &bad) {
		return err
	}
	return &chat.BadRequestError{Param: key, Err: err}
}

// readAnswer returns the answer in the request's data, or nil when it has
// no "confirm" key.
func readAnswer(req *chat.RouteRequest, limit int) (*answer, error) {
	switch {
	case req.Has(KeyCancel):
		return readCancel(req)
	case req.Has(KeyClientTool):
		return readClientAnswer(req, limit)
	case !req.Has(KeyConfirm):
		return nil, nil
	}
	a := new(answer)
	if err := req.Decode(KeyConfirm, &a.id); err != nil || a.id == "" {
		return nil, &chat.BadRequestError{Param: KeyConfirm, Err: errors.New("the confirmation id must be a non-empty string")}
	}
	if !req.Has(KeyApprove) {
		return nil, &chat.BadRequestError{Param: KeyApprove, Err: errors.New("an answer to a confirmation needs approve: true or false")}
	}
	if err := req.Decode(KeyApprove, &a.approve); err != nil {
		return nil, badData(KeyApprove, err)
	}
	if req.Has(KeyReason) {
		if err := req.Decode(KeyReason, &a.reason); err != nil {
			return nil, badData(KeyReason, err)
		}
	}
	if req.Has(KeyArguments) {
		var raw json.RawMessage
		if err := req.Decode(KeyArguments, &raw); err != nil {
			return nil, badData(KeyArguments, err)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] != '{' {
			return nil, &chat.BadRequestError{Param: KeyArguments, Err: errors.New("the edited arguments must be a JSON object")}
		}
		a.arguments = raw
	}
	return a, nil
}

// errStale is the cause of an answer that names no pending confirmation.
var errStale = errors.New("no pending confirmation has this id (it was answered already, or is stale)")

// resume answers the pending calls of a paused turn and records their
// executions. With an answer, it applies to the first pending call and
// the others run (and may pause the turn again); without one, every
// pending call is denied, the model being told that the user wrote
// instead. It reports whether the turn ends on immediate tools.
func (t *turn) resume(ctx context.Context, pend []llms.ToolCall, ans *answer) (bool, error) {
	var late bool
	nested := t.nestedAnswer(pend[0], ans)
	if ans != nil && !nested {
		var err error
		if late, err = t.answers(pend[0], ans); err != nil {
			return false, t.errorf("%w", err)
		}
	}
	if ans != nil && ans.cancel {
		t.cancelPaused(pend)
		return false, t.errorf("%w", &pauseCancelled{id: ans.id})
	}
	if nested {
		return t.resumeNested(ctx, pend, ans)
	}
	first := len(t.reply.Executions)
	for i, c := range pend {
		var ex ToolExecution
		switch {
		case ans == nil && t.isClientTool(c):
			ex = clientAbandoned(c)
		case ans == nil:
			ex = denied(c, "the user did not confirm this call and wrote a new message instead")
		case i > 0:
			rctx := ctx
			if t.isAgentTool(c) {
				rctx = t.withResume(ctx, c, nil) // a paused sub-agent pauses again
			}
			var err error
			if ex, err = t.runTool(rctx, c); err != nil {
				return false, t.errorf("%w", err)
			}
		case ans.client:
			ex = clientExecution(t, c, ans, late)
		case !ans.approve:
			text := "the user denied this call"
			if ans.reason != "" {
				text += ": " + ans.reason
			}
			ex = denied(c, text)
		default:
			edited := c
			if ans.arguments != nil {
				edited.FunctionCall = &llms.FunctionCall{Name: c.FunctionCall.Name, Arguments: string(ans.arguments)}
			}
			var err error
			if ex, err = t.runTool(context.WithValue(ctx, approvedKey{}, c.ID), edited); err != nil {
				return false, t.errorf("%w", err)
			}
			if ans.arguments != nil && ex.Err == nil {
				ex.Text = "the user changed the arguments to " + string(ans.arguments) + "; the result: " + ex.Text
			}
		}
		t.reply.Executions = append(t.reply.Executions, ex)
	}
	return t.record(ctx, pend, first)
}

// denied returns the execution of a call the user did not confirm.
func denied(c llms.ToolCall, text string) ToolExecution {
	return ToolExecution{ID: c.ID, Name: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments, Err: ErrConfirmationDenied, Text: text}
}

// record adds the results of the executions of one model reply's calls
// (from first on) to the turn. A call that waits for confirmation pauses
// the turn: record returns its *ConfirmationPending. Otherwise it reports
// whether every call was to an immediate tool and succeeded.
func (t *turn) record(ctx context.Context, calls []llms.ToolCall, first int) (bool, error) {
	immediate := true
	var pend *ConfirmationPending
	for i := first; i < len(t.reply.Executions); i++ {
		ex := &t.reply.Executions[i]
		if ex.Err != nil && errors.Is(ex.Err, ErrConfirmationRequired) {
			if n := nestedPending(ex); n != nil {
				if pend == nil {
					pend = n // its sub-agent paused: the turn pauses with it
				}
				continue
			}
			if pend == nil {
				pend = &ConfirmationPending{Confirmation: confirmation(t.held.st.id, calls[i-first])}
			}
			continue
		}
		if ex.Err == errClientRuns {
			if pend == nil {
				pend = t.clientPending(calls[i-first])
			}
			continue
		}
		t.addResult(ctx, ex)
		immediate = immediate && ex.Immediate && ex.Err == nil
	}
	if pend != nil {
		return false, pend
	}
	return immediate, nil
}

// paused commits a paused turn and sends its Confirm event, inside a
// route. It returns the error of the turn: p, or why it could not pause.
func (t *turn) paused(ctx context.Context, p *ConfirmationPending, commit func() error) error {
	if err := commit(); err != nil {
		return err
	}
	t.tagAgent(p)
	if p.nested {
		t.s.log().InfoContext(ctx, "ai: a sub-agent's tool call waits: the turn pauses with it",
			"service", t.s.name, "method", t.m.Name, "agent", p.Agent, "session", p.Session, "tool", p.Tool, "confirmation", p.ID)
		return t.errorf("%w", p)
	}
	if p.Client != nil {
		return t.pausedClient(ctx, p)
	}
	if chat.Request(ctx) != nil {
		if err := chat.Response(ctx).Event(protocol.EventConfirm, p.Confirmation); err != nil {
			return t.errorf("sending the Confirm event: %w", err)
		}
	}
	t.s.log().InfoContext(ctx, "ai: a tool call waits for the user's confirmation",
		"service", t.s.name, "method", t.m.Name, "tool", p.Tool, "call", p.CallID, "confirmation", p.ID)
	return t.errorf("%w", p)
}
