package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// ErrDuplicateTool is the error of [New] for two tools of one name: a
// tool box tool named as a route, or two tools of one box with one name.
var ErrDuplicateTool = errors.New("mcpserver: two tools have the same name")

// A ToolBox offers the tools of a //chat:tools box as MCP tools of their
// own, each named "<route>.<tool>" (the tool's name, as the model calls
// it, after the route's). A call runs the tool in the session's
// conversation on Route, the one that route's tool calls reach, so that
// it works on the same beans; it is listed to, and callable by, only the
// principals the route's roles allow.
type ToolBox struct {
	// Route is the route whose conversation the tools run in, and whose
	// roles they need.
	Route string
	// Tools are the box's tools as generated code declares them (the
	// ai.Tool values of the route's AI method, ai.Method.Tools): the
	// input schema of each is its Parameters, computed at generate time.
	// A tool the client runs (Client) has no place on an MCP server: it
	// is left out. A tool that needs the user's confirmation (Confirm)
	// asks for it through MCP elicitation before it runs, as a route's
	// confirmed tool call does.
	Tools []ai.Tool
}

// A boxTool is the MCP tool of one tool of a tool box.
type boxTool struct {
	name   string
	route  string
	tool   ai.Tool
	schema *jsonschema.Resolved
}

// addToolBoxes adds the tools of boxes to s.
func (s *Server) addToolBoxes(boxes []ToolBox) error {
	routes := map[string]bool{}
	for _, r := range s.router.Routes() {
		routes[r] = true
	}
	var errs []error
	for _, box := range boxes {
		if !routes[box.Route] {
			errs = append(errs, fmt.Errorf("mcpserver: a tool box of the unknown route %q", box.Route))
			continue
		}
		for _, t := range box.Tools {
			if t.Client {
				continue
			}
			bt, err := newBoxTool(box.Route, t)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if s.tools[bt.name] != nil || s.boxes[bt.name] != nil {
				errs = append(errs, fmt.Errorf("%w: %q", ErrDuplicateTool, bt.name))
				continue
			}
			s.boxes[bt.name] = bt
			s.mcp.AddTool(&mcp.Tool{
				Name:        bt.name,
				Description: describeBoxTool(bt),
				InputSchema: bt.inputSchema(),
			}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return s.callBoxTool(ctx, bt, req)
			})
		}
	}
	return errors.Join(errs...)
}

// newBoxTool returns the MCP tool of t, a tool of a box of route.
func newBoxTool(route string, t ai.Tool) (*boxTool, error) {
	name := t.Name // boxes are generated code, which sets Name
	bt := &boxTool{name: route + "." + name, route: route, tool: t}
	if name == "" || !toolName.MatchString(bt.name) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidToolName, bt.name)
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(bt.inputSchema(), &js); err != nil {
		return nil, fmt.Errorf("mcpserver: the input schema of tool %q: %w", bt.name, err)
	}
	resolved, err := js.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: the input schema of tool %q: %w", bt.name, err)
	}
	bt.schema = resolved
	return bt, nil
}

// inputSchema is the tool's parameters schema; a tool without
// parameters takes any object.
func (bt *boxTool) inputSchema() json.RawMessage {
	if len(bt.tool.Parameters) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	return bt.tool.Parameters
}

// describeBoxTool is the description of the MCP tool of bt.
func describeBoxTool(bt *boxTool) string {
	d := bt.tool.Description
	if d != "" {
		d += " "
	}
	d += fmt.Sprintf("(A tool of the chat route %q: it acts on this session's conversation on that route.)", bt.route)
	if bt.tool.Confirm {
		d += " It asks the user to confirm each call."
	}
	return d
}

// callBoxTool runs one call of the tool of a tool box: the principal may
// use the box's route, the arguments match the tool's schema, the user
// confirms when the tool needs it, and the tool runs as a request of the
// session's conversation on the route.
func (s *Server) callBoxTool(ctx context.Context, bt *boxTool, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	sess, err := s.track(req.Session, chat.PrincipalFrom(ctx))
	if err != nil {
		return nil, err
	}
	if !s.router.Permits(sess.principal, bt.route) {
		return toolError("Forbidden: the tool %q is not available to this session's principal", bt.name), nil
	}
	var args json.RawMessage
	if req.Params.RequestState != "" || req.Params.InputResponses != nil {
		// The retry of a multi round-trip confirmation.
		p := sess.takePending(bt.name)
		if p == nil || p.confirm.ID != req.Params.RequestState {
			return toolError("BadRequest: no confirmation of this tool is pending under this request state"), nil
		}
		res, _ := req.Params.InputResponses[inputKey].(*mcp.ElicitResult)
		if res == nil {
			return toolError("BadRequest: the retry carries no answer to the confirmation %q", inputKey), nil
		}
		if refused := deniedText(p.confirm, res); refused != "" {
			return toolError("%s", refused), nil
		}
		args = p.confirm.Arguments
	} else {
		sess.takePending(bt.name)
		a, refused := arguments(bt.schema, req.Params.Arguments)
		if refused != nil {
			return toolError("%s", refused.text), nil
		}
		args = a
		if bt.tool.Confirm {
			c := &ai.Confirmation{ID: rand.Text(), Tool: bt.name, Arguments: args}
			switch {
			case !canElicit(req.Session):
				return toolError("Refused: the tool %s needs the user's confirmation, and this MCP client does not support elicitation, so it cannot ask: the call was denied", bt.name), nil
			case multiRoundTrip(req.Session):
				sess.putPending(bt.name, &pendingCall{confirm: c})
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{inputKey: elicitation(c)}, RequestState: c.ID}, nil
			}
			res, err := req.Session.Elicit(ctx, elicitation(c))
			if err != nil {
				s.log.WarnContext(ctx, "mcpserver: asking for a confirmation failed", "session", req.Session.ID(), "tool", bt.name, "err", err)
				return toolError("Refused: the tool %s needs the user's confirmation, and asking the client for it failed: the call was denied", bt.name), nil
			}
			if refused := deniedText(c, res); refused != "" {
				return toolError("%s", refused), nil
			}
		}
	}
	conv, err := sess.conversation(ctx, s.router, bt.route)
	if err != nil {
		s.log.ErrorContext(ctx, "mcpserver: a call found no conversation", "session", req.Session.ID(), "tool", bt.name, "err", err)
		return toolError("%s", chat.FailureOf(err).Reason), nil
	}
	var out reply
	if token := req.Params.GetProgressToken(); token != nil {
		out.progress = func(text string) {
			out.steps++
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(out.steps), Message: text}); err != nil {
				s.log.InfoContext(ctx, "mcpserver: a progress notification was not sent", "session", req.Session.ID(), "err", err)
			}
		}
	}
	var (
		result  any
		toolErr error
	)
	_, f := conv.Run(ctx, conv.ScopeID(), nil, out.event, func(ctx context.Context) error {
		result, toolErr = invokeTool(ctx, bt.tool.Invoke, string(args))
		return nil
	})
	out.flush()
	if f != nil {
		s.log.InfoContext(ctx, "mcpserver: a tool call failed", "session", req.Session.ID(), "tool", bt.name, "reason", f.Reason, "err", f.Err)
		out.failed(f)
		return out.result(), nil
	}
	if toolErr != nil {
		out.isError = true
		out.text(s.toolFailed(ctx, bt, toolErr))
		return out.result(), nil
	}
	text, err := resultText(result)
	if err != nil {
		out.isError = true
		out.text(fmt.Sprintf("error: the result of tool %q could not be encoded", bt.name))
		s.log.WarnContext(ctx, "mcpserver: a tool's result could not be encoded", "tool", bt.name, "err", err)
		return out.result(), nil
	}
	out.text(text)
	return out.result(), nil
}

// arguments returns the arguments raw (none: "{}") when they are a JSON
// value schema allows, or a *refusal.
func arguments(schema *jsonschema.Resolved, raw json.RawMessage) (json.RawMessage, *refusal) {
	args := json.RawMessage(trimJSON(raw))
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return nil, &refusal{fmt.Sprintf("BadRequest: the arguments are not JSON: %v", err)}
	}
	if err := schema.Validate(v); err != nil {
		return nil, &refusal{fmt.Sprintf("BadRequest: the arguments do not match the tool's input schema: %v", err)}
	}
	return args, nil
}

// deniedText is the text of a tool result refused by the user's answer
// res to the confirmation c, or "" when the user approved.
func deniedText(c *ai.Confirmation, res *mcp.ElicitResult) string {
	ans := answerOf(c, res)
	if approve, _ := ans[ai.KeyApprove].(bool); approve {
		return ""
	}
	reason, _ := ans[ai.KeyReason].(string)
	return fmt.Sprintf("Denied: the user did not confirm the call of %s (%s)", c.Tool, reason)
}

// invokeTool calls fn, recovering a panic as a *chat.PanicError.
func invokeTool(ctx context.Context, fn func(context.Context, string) (any, error), args string) (res any, err error) {
	if fn == nil {
		return nil, errors.New("the tool has no function")
	}
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &chat.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, args)
}

// toolFailed logs a tool's error and returns what the client is told of
// it: what an AI service tells its model (the error's text, arguments
// that do not decode as such), never a panic's value.
func (s *Server) toolFailed(ctx context.Context, bt *boxTool, err error) string {
	var argErr *ai.ArgumentsError
	var pe *chat.PanicError
	switch {
	case errors.As(err, &pe):
		s.log.ErrorContext(ctx, "mcpserver: a tool panicked", "tool", bt.name, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		return fmt.Sprintf("error: tool %q failed", bt.name)
	case errors.As(err, &argErr):
		return fmt.Sprintf("BadRequest: invalid arguments for tool %q: %v", bt.name, err)
	}
	s.log.InfoContext(ctx, "mcpserver: a tool failed", "tool", bt.name, "err", err)
	return "error: " + err.Error()
}

// resultText is the text of a tool's result, as an AI service tells it
// to its model: a string as it is, nothing as "done", anything else as
// JSON.
func resultText(res any) (string, error) {
	switch v := res.(type) {
	case nil:
		return "done", nil
	case string:
		return v, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return "", err
	}
	if string(b) == "null" {
		return "done", nil
	}
	return string(b), nil
}
