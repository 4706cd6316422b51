package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// call runs one call of the tool of a route: a request of the session's
// conversation on the route, with the confirmations it asks for. A call
// carrying the answers of a multi round-trip (the client's retry after an
// input-required result) goes on with the request that paused.
func (s *Server) call(ctx context.Context, rt *routeTool, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	sess, err := s.track(req.Session, chat.PrincipalFrom(ctx))
	if err != nil {
		return nil, err
	}
	if !s.router.Permits(sess.principal, rt.route) {
		return toolError("Forbidden: the tool %q is not available to this session's principal", rt.route), nil
	}
	var (
		creq  *chat.RouteRequest
		out   reply
		asked int
	)
	if req.Params.RequestState != "" || req.Params.InputResponses != nil {
		p := sess.takePending(rt.route)
		if p == nil || p.confirm.ID != req.Params.RequestState {
			return toolError("BadRequest: no confirmation of this tool is pending under this request state"), nil
		}
		res, _ := req.Params.InputResponses[inputKey].(*mcp.ElicitResult)
		if res == nil {
			return toolError("BadRequest: the retry carries no answer to the confirmation %q", inputKey), nil
		}
		out, asked = p.out, p.asked+1
		out.progress = nil // the paused call's, bound to its context
		if creq, err = chat.NewDataRequest(answerOf(p.confirm, res)); err != nil {
			return nil, fmt.Errorf("mcpserver: answering a confirmation: %w", err)
		}
	} else {
		sess.takePending(rt.route) // a new call passes over a confirmation left unanswered
		if creq, err = s.request(rt, req.Params.Arguments); err != nil {
			var refused *refusal
			if errors.As(err, &refused) {
				return toolError("%s", refused.text), nil
			}
			return nil, err
		}
	}
	if token := req.Params.GetProgressToken(); token != nil {
		out.progress = func(text string) {
			out.steps++
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(out.steps), Message: text}); err != nil {
				s.log.InfoContext(ctx, "mcpserver: a progress notification was not sent", "session", req.Session.ID(), "err", err)
			}
		}
	}
	conv, err := sess.conversation(ctx, s.router, rt.route)
	if err != nil {
		s.log.ErrorContext(ctx, "mcpserver: a call found no conversation", "session", req.Session.ID(), "route", rt.route, "err", err)
		return toolError("%s", chat.FailureOf(err).Reason), nil
	}
	for ; ; asked++ {
		out.confirm = nil
		_, f := conv.Handle(ctx, conv.ScopeID(), creq, out.event)
		out.flush()
		if f != nil {
			s.log.InfoContext(ctx, "mcpserver: a call failed", "session", req.Session.ID(), "route", rt.route, "reason", f.Reason, "err", f.Err)
			out.failed(f)
			break
		}
		c := out.confirm
		if c == nil {
			break
		}
		var answer map[string]any
		switch {
		case asked >= s.opts.MaxConfirmations:
			out.isError = true
			out.text(fmt.Sprintf("the tool %s asked for more than %d confirmations in one call: denied", c.Tool, s.opts.MaxConfirmations))
			answer = deny(c, "too many confirmations in one request")
		case !canElicit(req.Session):
			out.isError = true
			out.text(fmt.Sprintf("Refused: the tool %s needs the user's confirmation, and this MCP client does not support elicitation, so it cannot ask: the call was denied", c.Tool))
			answer = deny(c, "the user's MCP client cannot confirm tool calls (no elicitation)")
		case multiRoundTrip(req.Session):
			// The protocol of 2026-07-28 and later asks through the
			// result: the client asks the user and calls again.
			sess.putPending(rt.route, &pendingCall{confirm: c, out: out, asked: asked})
			return &mcp.CallToolResult{
				InputRequests: mcp.InputRequestMap{inputKey: elicitation(c)},
				RequestState:  c.ID,
			}, nil
		default:
			res, err := req.Session.Elicit(ctx, elicitation(c))
			if err != nil {
				s.log.WarnContext(ctx, "mcpserver: asking for a confirmation failed", "session", req.Session.ID(), "tool", c.Tool, "err", err)
				out.isError = true
				out.text(fmt.Sprintf("Refused: the tool %s needs the user's confirmation, and asking the client for it failed: the call was denied", c.Tool))
				answer = deny(c, "asking the user failed")
			} else {
				answer = answerOf(c, res)
			}
		}
		if creq, err = chat.NewDataRequest(answer); err != nil {
			return nil, fmt.Errorf("mcpserver: answering a confirmation: %w", err)
		}
	}
	return out.result(), nil
}

// inputKey is the id of the confirmation among the input requests of a
// multi round-trip result.
const inputKey = "confirm"

// A refusal is a call refused before its route runs: text tells why.
type refusal struct{ text string }

func (r *refusal) Error() string { return r.text }

// request returns the route request of a call's arguments, or a *refusal
// when they are not an object its input schema allows.
func (s *Server) request(rt *routeTool, raw json.RawMessage) (*chat.RouteRequest, error) {
	args, refused := arguments(rt.schema, raw)
	if refused != nil {
		return nil, refused
	}
	creq, err := chat.NewDataRequest(args)
	if err != nil {
		return nil, &refusal{"BadRequest: " + failureText(chat.FailureOf(err), err)}
	}
	return creq, nil
}

// A pendingCall is a call paused on a confirmation that a multi
// round-trip retry answers: the confirmation, the content so far and the
// confirmations asked.
type pendingCall struct {
	confirm *ai.Confirmation
	out     reply
	asked   int
}

// multiRoundTrip reports whether the session's protocol asks for input
// through results (2026-07-28 and later) rather than requests to the
// client during a call.
func multiRoundTrip(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// failureText is what a client is told of a failure: its reason, and the
// parameter of a bad request (never the internal error text).
func failureText(f *chat.Failure, err error) string {
	if f == nil {
		return "ServerError"
	}
	var bad *chat.BadRequestError
	if errors.As(err, &bad) && bad.Param != "" {
		return fmt.Sprintf("%s (parameter %q)", f.Reason, bad.Param)
	}
	return f.Reason
}

// toolError is the result of a call refused or failed.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// A reply gathers the events of a call into the tool's content.
type reply struct {
	content []mcp.Content
	stream  strings.Builder // the streamed text not yet in content
	isError bool
	confirm *ai.Confirmation // the confirmation the last request paused on
	// progress, when the client asked for progress (a progress token),
	// sends Thinking text as a progress notification; steps counts them.
	progress func(text string)
	steps    int
}

// event adds one event of the route to the reply.
func (r *reply) event(ev chat.Event) error {
	switch ev.Type {
	case protocol.EventStream:
		r.stream.WriteString(ev.Text())
		return nil
	case protocol.EventThinking:
		// Progress has no place in a tool result: it goes to a client
		// that asked for progress notifications.
		if r.progress != nil {
			r.progress(ev.Text())
		}
		return nil
	case protocol.EventConsole:
		// Console text has no place in a tool result.
		return nil
	}
	r.flush()
	switch ev.Type {
	case protocol.EventMessage:
		r.text(ev.Text())
	case protocol.EventError:
		r.text("error: " + ev.Text())
	case protocol.EventConfirm:
		var c ai.Confirmation
		if err := ev.Decode(&c); err != nil {
			return fmt.Errorf("mcpserver: a Confirm event: %w", err)
		}
		r.confirm = &c
	default:
		data, err := ev.Raw()
		if err != nil {
			return fmt.Errorf("mcpserver: encoding a %s event: %w", ev.Type, err)
		}
		b, err := json.Marshal(struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}{ev.Type, data})
		if err != nil {
			return fmt.Errorf("mcpserver: encoding a %s event: %w", ev.Type, err)
		}
		r.text(string(b))
	}
	return nil
}

func (r *reply) text(t string) {
	if t != "" {
		r.content = append(r.content, &mcp.TextContent{Text: t})
	}
}

// flush moves the streamed text into the content.
func (r *reply) flush() {
	if r.stream.Len() > 0 {
		r.text(r.stream.String())
		r.stream.Reset()
	}
}

// failed ends the reply with the failure f.
func (r *reply) failed(f *chat.Failure) {
	r.isError = true
	r.text("Failed: " + failureText(f, f))
}

// result is the tool result of the reply.
func (r *reply) result() *mcp.CallToolResult {
	content := r.content
	if content == nil {
		content = []mcp.Content{}
	}
	return &mcp.CallToolResult{Content: content, IsError: r.isError}
}

// confirmSchema is the form a confirmation asks the user to fill.
var confirmSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"approve":{"type":"boolean","title":"Approve","description":"run the tool call"},` +
	`"reason":{"type":"string","title":"Reason","description":"why not (optional)"}},` +
	`"required":["approve"]}`)

// elicitation is the question that asks the user to confirm c.
func elicitation(c *ai.Confirmation) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:            "form",
		Message:         fmt.Sprintf("Allow the tool %s to run with the arguments %s?", c.Tool, compact(c.Arguments)),
		RequestedSchema: confirmSchema,
	}
}

// deny is the answer that denies c, telling the model why.
func deny(c *ai.Confirmation, reason string) map[string]any {
	return map[string]any{ai.KeyConfirm: c.ID, ai.KeyApprove: false, ai.KeyReason: reason}
}

// answerOf is the answer to c of the user's response to the elicitation
// (see [ai.ConfirmationPending]).
func answerOf(c *ai.Confirmation, res *mcp.ElicitResult) map[string]any {
	switch res.Action {
	case "accept":
		if approve, _ := res.Content[ai.KeyApprove].(bool); approve {
			return map[string]any{ai.KeyConfirm: c.ID, ai.KeyApprove: true}
		}
		reason, _ := res.Content[ai.KeyReason].(string)
		if reason == "" {
			reason = "the user said no"
		}
		return deny(c, reason)
	case "decline":
		return deny(c, "the user declined")
	}
	return deny(c, "the user dismissed the question")
}

// canElicit reports whether the client of ss said it supports form
// elicitation.
func canElicit(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false
	}
	e := p.Capabilities.Elicitation
	return e.Form != nil || e.URL == nil
}

// compact is JSON text without insignificant space, or the text itself
// when it is not JSON.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// trimJSON is raw without its leading and trailing white space.
func trimJSON(raw json.RawMessage) []byte { return bytes.TrimSpace(raw) }
