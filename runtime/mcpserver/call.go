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
)

// call runs one call of the tool of a route: a request of the session's
// conversation on the route, with the confirmations it asks for.
func (s *Server) call(ctx context.Context, rt *routeTool, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	sess, err := s.track(req.Session, chat.PrincipalFrom(ctx))
	if err != nil {
		return nil, err
	}
	if !s.router.Permits(sess.principal, rt.route) {
		return toolError("Forbidden: the tool %q is not available to this session's principal", rt.route), nil
	}
	args := json.RawMessage(bytes.TrimSpace(req.Params.Arguments))
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return toolError("BadRequest: the arguments are not JSON: %v", err), nil
	}
	if err := rt.schema.Validate(v); err != nil {
		return toolError("BadRequest: the arguments do not match the tool's input schema: %v", err), nil
	}
	creq, err := chat.NewJSONRequest(args)
	if err != nil {
		return toolError("BadRequest: %s", failureText(chat.FailureOf(err), err)), nil
	}
	conv, err := sess.conversation(ctx, s.router, rt.route)
	if err != nil {
		s.log.ErrorContext(ctx, "mcpserver: a call found no conversation", "session", req.Session.ID(), "route", rt.route, "err", err)
		return toolError("%s", chat.FailureOf(err).Reason), nil
	}
	var out reply
	for asked := 0; ; asked++ {
		out.confirm = nil
		_, f := conv.Handle(ctx, conv.ScopeID(), creq, out.event)
		out.flush()
		if f != nil {
			s.log.InfoContext(ctx, "mcpserver: a call failed", "session", req.Session.ID(), "route", rt.route, "reason", f.Reason, "err", f.Err)
			out.failed(f)
			break
		}
		if out.confirm == nil {
			break
		}
		answer := s.confirm(ctx, req.Session, out.confirm, asked, &out)
		if creq, err = chat.NewDataRequest(answer); err != nil {
			return nil, fmt.Errorf("mcpserver: answering a confirmation: %w", err)
		}
	}
	return out.result(), nil
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
}

// event adds one event of the route to the reply.
func (r *reply) event(ev chat.Event) error {
	switch ev.Type {
	case chat.EventStream:
		r.stream.WriteString(ev.Text())
		return nil
	case chat.EventThinking, chat.EventConsole:
		// Progress and console text have no place in a tool result.
		return nil
	}
	r.flush()
	switch ev.Type {
	case chat.EventMessage:
		r.text(ev.Text())
	case chat.EventError:
		r.text("error: " + ev.Text())
	case chat.EventConfirm:
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

// confirm asks the user of session ss, through elicitation, whether the
// paused tool call c may run, and returns the answer to send on the
// route (see [ai.ConfirmationPending]). A client without elicitation,
// one that fails to ask, and a call that asked too often are denied, and
// the reply says why.
func (s *Server) confirm(ctx context.Context, ss *mcp.ServerSession, c *ai.Confirmation, asked int, out *reply) map[string]any {
	deny := func(reason string) map[string]any {
		return map[string]any{ai.KeyConfirm: c.ID, ai.KeyApprove: false, ai.KeyReason: reason}
	}
	if asked >= s.opts.MaxConfirmations {
		out.isError = true
		out.text(fmt.Sprintf("the tool %s asked for more than %d confirmations in one call: denied", c.Tool, s.opts.MaxConfirmations))
		return deny("too many confirmations in one request")
	}
	if !canElicit(ss) {
		out.isError = true
		out.text(fmt.Sprintf("Refused: the tool %s needs the user's confirmation, and this MCP client does not support elicitation, so it cannot ask: the call was denied", c.Tool))
		return deny("the user's MCP client cannot confirm tool calls (no elicitation)")
	}
	res, err := ss.Elicit(ctx, &mcp.ElicitParams{
		Mode:            "form",
		Message:         fmt.Sprintf("Allow the tool %s to run with the arguments %s?", c.Tool, compact(c.Arguments)),
		RequestedSchema: confirmSchema,
	})
	if err != nil {
		s.log.WarnContext(ctx, "mcpserver: asking for a confirmation failed", "session", ss.ID(), "tool", c.Tool, "err", err)
		out.isError = true
		out.text(fmt.Sprintf("Refused: the tool %s needs the user's confirmation, and asking the client for it failed: the call was denied", c.Tool))
		return deny("asking the user failed")
	}
	if res.Action == "accept" {
		if approve, _ := res.Content[ai.KeyApprove].(bool); approve {
			return map[string]any{ai.KeyConfirm: c.ID, ai.KeyApprove: true}
		}
		reason, _ := res.Content[ai.KeyReason].(string)
		if reason == "" {
			reason = "the user said no"
		}
		return deny(reason)
	}
	if res.Action == "decline" {
		return deny("the user declined")
	}
	return deny("the user dismissed the question")
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
