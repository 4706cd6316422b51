package ai

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// This file holds the tools the client runs (//chat:tool client): a call
// pauses the turn exactly as a call waiting for the user's confirmation
// does (confirm.go), but the event sent is a ClientTool event and the
// answer carries the call's result. It also holds the cancel of a paused
// turn, which applies to both.

// The request data keys of an answer to a client tool call, and of the
// cancel of a paused turn: see [protocol.ClientToolCall].
const (
	KeyClientTool = protocol.KeyClientTool // the id of the client tool call answered (string)
	KeyResult     = protocol.KeyResult     // the call's result (any JSON value)
	KeyError      = protocol.KeyError      // why the client could not run the call (string)
	KeyCancel     = protocol.KeyCancel     // the id of a paused call (confirmation or client tool): the turn stops
)

// defaultClientToolResultLimit is the default of
// [Config.ClientToolResultLimit].
const defaultClientToolResultLimit = 64 << 10

// Errors of the executions ([ToolExecution.Err]) of client tool calls.
var (
	// ErrClientToolFailed is matched by the error of a call the client
	// answered with an error (it could not run it, or the user refused).
	ErrClientToolFailed = errors.New("the client could not run the tool call")
	// ErrClientToolTimeout is the error of a call the client answered
	// after its deadline (the tool's timeout).
	ErrClientToolTimeout = errors.New("the client did not answer the tool call in time")
	// ErrClientToolAbandoned is the error of a call the client did not
	// answer: its next request was a new message.
	ErrClientToolAbandoned = errors.New("the client did not answer the tool call")
	// ErrPausedCallCancelled is the error of a paused call (waiting for a
	// confirmation or a client's result) whose turn the client stopped
	// with a cancel.
	ErrPausedCallCancelled = errors.New("the user stopped the turn while the tool call waited")
)

// errClientRuns is the execution error of a call to a client tool: the
// turn pauses on it (record).
var errClientRuns = errors.New("the client runs this tool")

// pausedCancelledResult is the result, in the chat memory, of a paused
// call whose turn the user stopped.
const pausedCancelledResult = "cancelled: the user stopped the turn while this call waited"

// clientCallID returns the id of a client tool call in the memory memID:
// a digest of the call and of its deadline (unix milliseconds, 0 for
// none), followed by "." and the deadline when there is one, so that the
// deadline is read back from the answer and cannot be changed without the
// digest failing to match.
func clientCallID(memID string, c llms.ToolCall, deadline int64) string {
	d := strconv.FormatInt(deadline, 10)
	h := sha256.New()
	for _, s := range []string{memID, c.ID, c.FunctionCall.Name, c.FunctionCall.Arguments, "client", d} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	id := hex.EncodeToString(h.Sum(nil)[:12])
	if deadline != 0 {
		id += "." + d
	}
	return id
}

// matchClientID reports whether id is that of the client tool call c, and
// its deadline (zero for none).
func matchClientID(memID string, c llms.ToolCall, id string) (time.Time, bool) {
	var deadline int64
	if _, d, ok := strings.Cut(id, "."); ok {
		var err error
		if deadline, err = strconv.ParseInt(d, 10, 64); err != nil || deadline <= 0 {
			return time.Time{}, false
		}
	}
	if id != clientCallID(memID, c, deadline) {
		return time.Time{}, false
	}
	if deadline == 0 {
		return time.Time{}, true
	}
	return time.UnixMilli(deadline), true
}

// isClientTool reports whether c calls a tool the client runs.
func (t *turn) isClientTool(c llms.ToolCall) bool {
	tool, ok := findTool(t.tools, c.FunctionCall.Name)
	return ok && tool.Client
}

// clientPending returns the pause of a call to a client tool.
func (t *turn) clientPending(c llms.ToolCall) *ConfirmationPending {
	conf := confirmation(t.held.st.id, c)
	call := &protocol.ClientToolCall{Tool: conf.Tool, Arguments: conf.Arguments, CallID: conf.CallID}
	var deadline int64
	if tool, ok := findTool(t.tools, c.FunctionCall.Name); ok && tool.Timeout > 0 {
		d := time.Now().Add(tool.Timeout).Truncate(time.Millisecond)
		call.Deadline = &d
		deadline = d.UnixMilli()
	}
	call.ID = clientCallID(t.held.st.id, c, deadline)
	conf.ID = call.ID
	return &ConfirmationPending{Confirmation: conf, Client: call}
}

// pausedClient sends the ClientTool event of a paused turn, inside a
// route, once the turn is committed. It returns the error of the turn.
func (t *turn) pausedClient(ctx context.Context, p *ConfirmationPending) error {
	if chat.Request(ctx) != nil {
		if err := chat.Response(ctx).Event(protocol.EventClientTool, p.Client); err != nil {
			return t.errorf("sending the ClientTool event: %w", err)
		}
	}
	t.s.log().InfoContext(ctx, "ai: a tool call waits for the client's result",
		"service", t.s.name, "method", t.m.Name, "tool", p.Tool, "call", p.CallID, "client_call", p.ID)
	return t.errorf("%w", p)
}

// answers checks that ans answers the first pending call c: its id, and
// its kind (a confirmation is not answered with a result, nor a client
// call with an approval; a cancel stops either). It reports whether the
// answer to a client call came after the call's deadline.
func (t *turn) answers(c llms.ToolCall, ans *answer) (late bool, err error) {
	memID := t.held.st.id
	client := t.isClientTool(c)
	var deadline time.Time
	ok := false
	if client {
		deadline, ok = matchClientID(memID, c, ans.id)
	} else {
		ok = ans.id == confirmID(memID, c)
	}
	switch {
	case !ok:
		return false, &chat.BadRequestError{Param: ans.param(), Err: fmt.Errorf("%q: %w", ans.id, errStale)}
	case ans.cancel:
		return false, nil
	case client && !ans.client:
		return false, &chat.BadRequestError{Param: KeyConfirm, Err: fmt.Errorf("%q is a call the client runs: answer it with clientTool and result or error", ans.id)}
	case !client && ans.client:
		return false, &chat.BadRequestError{Param: KeyClientTool, Err: fmt.Errorf("%q waits for the user's confirmation: answer it with confirm and approve", ans.id)}
	}
	return client && !deadline.IsZero() && !time.Now().Before(deadline), nil
}

// clientExecution returns the execution of a client tool call the client
// answered.
func clientExecution(t *turn, c llms.ToolCall, ans *answer, late bool) ToolExecution {
	ex := ToolExecution{ID: c.ID, Name: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments}
	if tool, ok := findTool(t.tools, ex.Name); ok {
		ex.Immediate = tool.Immediate
	}
	switch {
	case late:
		ex.Err, ex.Text = ErrClientToolTimeout, "error: the client did not answer in time"
	case ans.result == nil:
		ex.Err = fmt.Errorf("%w: %s", ErrClientToolFailed, ans.failure)
		ex.Text = "error: the client could not run this call: " + ans.failure
	default:
		ex.Result, ex.Text = ans.result, string(ans.result)
	}
	return ex
}

// clientAbandoned returns the execution of a client tool call that the
// client passed over, writing a new message instead.
func clientAbandoned(c llms.ToolCall) ToolExecution {
	return ToolExecution{ID: c.ID, Name: c.FunctionCall.Name, Arguments: c.FunctionCall.Arguments,
		Err: ErrClientToolAbandoned, Text: "error: the client did not run this call; the user wrote a new message instead"}
}

// readCancel reads a cancel of a paused turn: {"cancel": id}.
func readCancel(req *chat.RouteRequest) (*answer, error) {
	a := &answer{cancel: true}
	if err := req.Decode(KeyCancel, &a.id); err != nil || a.id == "" {
		return nil, &chat.BadRequestError{Param: KeyCancel, Err: errors.New("the id of the paused call must be a non-empty string")}
	}
	return a, nil
}

// readClientAnswer reads an answer to a client tool call: a result (any
// JSON value of at most limit bytes; none is null) or an error, never
// both.
func readClientAnswer(req *chat.RouteRequest, limit int) (*answer, error) {
	a := &answer{client: true}
	if err := req.Decode(KeyClientTool, &a.id); err != nil || a.id == "" {
		return nil, &chat.BadRequestError{Param: KeyClientTool, Err: errors.New("the client tool call id must be a non-empty string")}
	}
	// Request data drops JSON nulls (as Quarkus does): an answer without
	// result or error is a null result.
	hasResult, hasError := req.Has(KeyResult), req.Has(KeyError)
	switch {
	case hasResult && hasError:
		return nil, &chat.BadRequestError{Param: KeyResult, Err: errors.New("an answer to a client tool call has either a result or an error, not both")}
	case hasError:
		if err := req.Decode(KeyError, &a.failure); err != nil || strings.TrimSpace(a.failure) == "" {
			return nil, &chat.BadRequestError{Param: KeyError, Err: errors.New("the error of a client tool call must be a non-empty string")}
		}
		if len(a.failure) > limit {
			return nil, &chat.BadRequestError{Param: KeyError, Err: fmt.Errorf("the error is longer than %d bytes", limit)}
		}
		return a, nil
	}
	var raw json.RawMessage
	if err := req.Decode(KeyResult, &raw); err != nil {
		return nil, badData(KeyResult, err)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = json.RawMessage("null") // a null result decodes to nothing
	}
	if len(raw) > limit {
		return nil, &chat.BadRequestError{Param: KeyResult, Err: fmt.Errorf("the result is larger than %d bytes", limit)}
	}
	if !json.Valid(raw) {
		return nil, &chat.BadRequestError{Param: KeyResult, Err: errors.New("the result must be a JSON value")}
	}
	a.result = raw
	return a, nil
}

// pauseCancelled is the error of a request that stopped a paused turn.
type pauseCancelled struct{ id string }

func (e *pauseCancelled) Error() string {
	return fmt.Sprintf("the user stopped the turn paused on %s", e.id)
}

// Unwrap makes the error match [ErrPausedCallCancelled].
func (e *pauseCancelled) Unwrap() error { return ErrPausedCallCancelled }

// cancelPaused closes the pending calls of a paused turn the user
// stopped: each gets a cancelled result, and the turn ends on
// [InterruptedMarker], so that the memory holds no call without a result.
func (t *turn) cancelPaused(pend []llms.ToolCall) {
	for _, c := range pend {
		t.reply.Executions = append(t.reply.Executions, ToolExecution{ID: c.ID, Name: c.FunctionCall.Name,
			Arguments: c.FunctionCall.Arguments, Err: ErrPausedCallCancelled, Text: pausedCancelledResult})
		t.add(llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: c.ID, Name: c.FunctionCall.Name, Content: pausedCancelledResult},
		}})
	}
	t.add(llms.TextParts(llms.ChatMessageTypeAI, InterruptedMarker))
}

// commitCancelled commits a paused turn the user stopped and returns the
// error of the request: it fails as cancelled (chat.ErrCancelled).
func (t *turn) commitCancelled(ctx context.Context, pc *pauseCancelled, commit func() error) error {
	if err := commit(); err != nil {
		return err
	}
	t.s.log().InfoContext(ctx, "ai: the user stopped a paused turn",
		"service", t.s.name, "method", t.m.Name, "paused_call", pc.id)
	return t.errorf("%w", &chat.Failure{Reason: chat.ErrCancelled.Reason, Err: pc})
}
