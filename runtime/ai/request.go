package ai

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"text/template"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/tmc/langchaingo/llms"
)

// Output is the form of a method's answer.
type Output uint8

const (
	// OutputText: the answer is text (string results and streams).
	OutputText Output = iota
	// OutputJSON: the answer is JSON (structured results): the model call
	// uses JSON mode and the system message asks for JSON conforming to
	// [Method.Schema].
	OutputJSON
)

// String returns "text" or "json".
func (o Output) String() string {
	switch o {
	case OutputText:
		return "text"
	case OutputJSON:
		return "json"
	}
	return fmt.Sprintf("Output(%d)", uint8(o))
}

// Method describes one method of an AI service: its prompts, its tools
// and the form of its answer. Generated code declares one per interface
// method, as a package-level variable, and passes its address in every
// [Request]. A Method is read-only once used, and must not be copied.
type Method struct {
	// Name is the interface method's name: it names the default memory id
	// and appears in logs and errors.
	Name string
	// Kind is how the default memory id is made (see [Service.Chat]):
	// chat.KindChat and chat.KindPerChat use the current chat scope,
	// chat.KindInvocation the current invocation.
	Kind chat.Kind
	// System is the system message when SystemTemplate is nil; "" means
	// none (a system message already in the memory is then kept and sent).
	System string
	// SystemTemplate, when set, is executed with [Request.Data] to make the
	// system message. A system message that changes from request to
	// request (a template over data that does) changes the prompt's
	// prefix: a provider's prompt cache then serves none of the
	// conversation, and with Anthropic, whose breakpoints the service
	// places after the system message, every turn writes the prompt to
	// the cache (billed 1.25× the input price) and no turn reads it. Put
	// per-request text in the user message (UserTemplate) instead.
	SystemTemplate *template.Template
	// UserTemplate, when set, is executed with [Request.Data] to make the
	// user message; otherwise the user message is [Request.User].
	UserTemplate *template.Template
	// Tools are the tools the model may call, with the functions that run
	// them.
	Tools []Tool
	// Schema is the JSON schema of the result type for [OutputJSON]; it is
	// quoted in the instruction to the model.
	Schema json.RawMessage
	// Output is the form of the answer.
	Output Output

	defs    [2]toolDefs // the definitions of Tools, per form, made once
	sysOnce sync.Once
	sysMsg  llms.MessageContent         // the constant System as a message, made once
	merged  atomic.Pointer[mergedTools] // Tools and a service's sources', last made
}

// Tool is one tool a method offers the model.
type Tool struct {
	// Name is the name the model calls the tool by.
	Name string
	// Description tells the model what the tool does.
	Description string
	// Parameters is the JSON Schema of the tool's arguments: an object
	// schema. A tool without parameters may leave it nil. The service
	// sends it in the form its model's client takes (see [Client]).
	Parameters json.RawMessage
	// Definition is the tool's definition as langchaingo's llms.Tool.
	//
	// Deprecated: set Name, Description and Parameters. Definition is read
	// only when Name is empty, so that tool sources written for it keep
	// working (generated code sets Name).
	Definition llms.Tool
	// Event marks a tool whose result is a //chat:event value: inside a
	// request, the service sends it to the client as that event when the
	// tool returns (as well as telling the model), and marks the
	// execution Sent, so that [Result.Send] does not send it again.
	Event bool
	// Immediate marks a tool whose result ends the tool loop: when every
	// tool call of a model reply is to an immediate tool and succeeds, the
	// method returns with the executions and no further model call.
	Immediate bool
	// Invoke runs the tool with the model's arguments (raw JSON; "{}" when
	// the model sent none). It returns an *[ArgumentsError] when the
	// arguments do not decode. [BeanTool] makes it for
	// the methods of scoped beans.
	Invoke func(ctx context.Context, arguments string) (any, error)
	// Confirm marks a tool whose calls wait for the user's confirmation
	// (//chat:tool confirm): the turn pauses before the call runs; see
	// [ConfirmationPending].
	Confirm bool
	// Client marks a tool the client runs (//chat:tool client): a call
	// pauses the turn on a ClientTool event ([protocol.EventClientTool]) and
	// the client's next request gives the result; Invoke is not called,
	// and tool hooks do not see the call. See [ConfirmationPending].
	// Timeout, when set, is how long the client has to answer.
	Client bool
	// Timeout bounds a call of the tool (//chat:tool timeout=10s); 0
	// means [Config.ToolTimeout]. See [ErrToolTimeout].
	Timeout time.Duration
	// Concurrent marks a tool whose calls run concurrently with the other
	// calls of one model reply even without [Config.ParallelTools], at most
	// [Config.AgentConcurrency] of them at once: the sub-agent tools of
	// package runtime/agent/subagent are (the fan-out of an orchestrator).
	// The results are still reported to the model in call order.
	Concurrent bool
}

// toolDefs are the definitions of a method's tools in one form.
type toolDefs struct {
	once sync.Once
	defs []llms.Tool
	err  error
}

// Request is one call of an AI service method, as generated code builds
// it.
type Request struct {
	// Method describes the method called. Required.
	Method *Method
	// MemoryID is an explicit memory id; "" means the default one.
	// Memory under an explicit id belongs to the application: it is not
	// attached to a scope, so no wipe or scope end reaches it; delete it
	// with the provider's Delete.
	MemoryID string
	// User is the user message when the method has no UserTemplate; ""
	// sends none.
	User string
	// Data is what the method's templates are executed with (generated
	// code passes the method's parameters by name); unused without
	// templates.
	Data any
}

// An ArgumentsError reports tool arguments that do not decode into the
// tool's parameters. The model is told, so it can call again.
type ArgumentsError struct{ Err error }

// Error implements error.
func (e *ArgumentsError) Error() string { return "invalid tool arguments: " + e.cause().Error() }

// Unwrap returns the decoding error.
func (e *ArgumentsError) Unwrap() error { return e.Err }

// prompt returns the system and user messages of r: its method's
// templates executed with r.Data, or the constant texts.
func (r *Request) prompt() (system, user string, err error) {
	m := r.Method
	system, user = m.System, r.User
	if m.SystemTemplate != nil {
		if system, err = render(m.SystemTemplate, r.Data); err != nil {
			return "", "", fmt.Errorf("rendering the system message: %w", err)
		}
	}
	if m.UserTemplate != nil {
		if user, err = render(m.UserTemplate, r.Data); err != nil {
			return "", "", fmt.Errorf("rendering the user message: %w", err)
		}
	}
	return system, user, nil
}

func render(t *template.Template, data any) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", err
	}
	return b.String(), nil
}

// definitions returns the definitions of m's tools in the form of the
// client of d, for the model call options: one slice per Method and form,
// made on first use.
func (m *Method) definitions(d dialect) ([]llms.Tool, error) {
	f := d.toolForm()
	c := &m.defs[f]
	c.once.Do(func() { c.defs, c.err = d.definitions(m.Tools) })
	return c.defs, c.err
}

// parts returns the name, description and parameters of t, from
// Definition when Name is empty.
func (t *Tool) parts() (name, desc string, params json.RawMessage, err error) {
	if t.Name != "" || t.Definition.Function == nil {
		return t.Name, t.Description, t.Parameters, nil
	}
	f := t.Definition.Function
	switch p := f.Parameters.(type) {
	case nil:
	case json.RawMessage:
		params = p
	case []byte:
		params = p
	case string:
		params = json.RawMessage(p)
	default:
		if params, err = json.Marshal(p); err != nil {
			return "", "", nil, fmt.Errorf("tool %q: encoding its parameters: %w", f.Name, err)
		}
	}
	return f.Name, f.Description, params, nil
}

// systemMessage returns the system message of a call whose system text is
// system. A method's constant system message is built once and shared by
// its calls: models only read their prompts, and memory copies what it
// keeps.
func (m *Method) systemMessage(system string) llms.MessageContent {
	if m.SystemTemplate != nil || system != m.System {
		return llms.TextParts(llms.ChatMessageTypeSystem, system)
	}
	m.sysOnce.Do(func() { m.sysMsg = llms.TextParts(llms.ChatMessageTypeSystem, m.System) })
	return m.sysMsg
}
