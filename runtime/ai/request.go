package ai

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// Output is the form of a method's answer.
type Output uint8

const (
	// OutputText: the answer is text (string results and streams).
	OutputText Output = iota
	// OutputJSON: the answer is JSON (structured results): the model call
	// uses JSON mode and the system message asks for JSON conforming to
	// [Request.Schema].
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

// Request is one call of an AI service method, as generated code builds
// it.
type Request struct {
	// Method is the interface method: it names the default memory id and
	// appears in logs and errors.
	Method string
	// Kind is how the default memory id is made (see [Service.Chat]):
	// chat.KindChat and chat.KindPerChat use the current chat scope,
	// chat.KindInvocation the current invocation.
	Kind chat.Kind
	// MemoryID is an explicit memory id; "" means the default one.
	// Memory under an explicit id belongs to the application: it is not
	// attached to a scope, so no wipe or scope end reaches it; delete it
	// with the provider's Delete.
	MemoryID string
	// System is the rendered system message; "" means none (a system
	// message already in the memory is then kept and sent).
	System string
	// User is the rendered user message; "" sends none.
	User string
	// Tools are the static tool definitions the model may call. Generated
	// code passes package-level literals: the service never copies them.
	Tools []llms.Tool
	// Invokers run the tools: Invokers[i] runs Tools[i].
	Invokers []Invoker
	// Schema is the JSON schema of the result type for [OutputJSON]; it is
	// quoted in the instruction to the model.
	Schema json.RawMessage
	// Output is the form of the answer.
	Output Output
}

// Invoker runs one tool.
type Invoker struct {
	// Immediate marks a tool whose result ends the tool loop: when every
	// tool call of a model reply is to an immediate tool and succeeds, the
	// method returns with the executions and no further model call.
	Immediate bool
	// Invoke decodes arguments (raw JSON from the model; "{}" when the
	// model sent none) and calls the tool. Generated code returns an
	// *[ArgumentsError] when the arguments do not decode.
	Invoke func(ctx context.Context, arguments string) (any, error)
}

// An ArgumentsError reports tool arguments that do not decode into the
// tool's parameters. The model is told, so it can call again.
type ArgumentsError struct{ Err error }

// Error implements error.
func (e *ArgumentsError) Error() string { return "invalid tool arguments: " + e.cause().Error() }

// Unwrap returns the decoding error.
func (e *ArgumentsError) Unwrap() error { return e.Err }

// Render executes the template t, which generated code parses once (and
// checks at generate time), with data. A nil t renders "".
func Render(t *template.Template, data any) (string, error) {
	if t == nil {
		return "", nil
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return "", fmt.Errorf("ai: rendering a prompt: %w", err)
	}
	return b.String(), nil
}

// invoker returns the invoker of the tool name.
func (r *Request) invoker(name string) (Invoker, bool) {
	for i := range r.Tools {
		if f := r.Tools[i].Function; f != nil && f.Name == name {
			return r.Invokers[i], true
		}
	}
	return Invoker{}, false
}

// toolNames lists the names of the offered tools for a message to the
// model: "a, b".
func (r *Request) toolNames() string {
	var b strings.Builder
	for i := range r.Tools {
		f := r.Tools[i].Function
		if f == nil {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name)
	}
	return b.String()
}
