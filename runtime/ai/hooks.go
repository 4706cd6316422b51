package ai

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// A ModelCall is one call of the model in a turn, as a [ModelHook] sees
// it.
type ModelCall struct {
	// Service is the service's name, "import/path.Type"; Method the
	// interface method's.
	Service, Method string
	// N numbers the model calls of the turn, from 1.
	N int
	// Messages is the prompt: the system message, the memory, the user
	// message and the turn's tool calls and results so far. A hook may
	// replace it (or its elements) to change what the model is sent; the
	// memory still gets the turn as it happened. Do not modify the
	// messages in place: they are shared with the turn.
	Messages []llms.MessageContent
	// Options are the call options: the service's ([Config.Options]),
	// then the tools, JSON mode and the streaming functions. A hook may
	// append to it (a later option wins) or replace it.
	Options []llms.CallOption

	turn *turn
}

// A ModelHandler makes a model call: it returns the model's response.
type ModelHandler func(ctx context.Context, call *ModelCall) (*llms.ContentResponse, error)

// A ModelHook wraps every model call of a service, in the net/http
// middleware style: it gets the next handler and returns the one that runs
// in its place. Before calling next it may read and change the call's
// messages and options; after, it sees the response or the error, and may
// change or replace them. A hook that returns a response without calling
// next answers in the model's place (a cache, a canned answer, a test).
//
// Hooks are given in [Config.ModelHooks]; the first is the outermost.
// Retries ([Config.Retry]) and the per-call timeout happen inside next: a
// hook sees one call however many attempts it took. A hook that panics
// fails the request; nothing of the turn is remembered.
type ModelHook func(next ModelHandler) ModelHandler

// A ToolCall is one call of a tool the model made, as a [ToolHook] sees
// it. Calls of tools the method does not offer are told to the model
// without reaching the hooks.
type ToolCall struct {
	// Service is the service's name, "import/path.Type"; Method the
	// interface method's.
	Service, Method string
	// ID is the tool call's id; Name the tool's name.
	ID, Name string
	// Arguments are the model's arguments, raw JSON ("{}" when the model
	// sent none). A hook may change them before calling next: the tool
	// decodes what next is given. [ToolExecution.Arguments] keeps what the
	// model sent.
	Arguments string
	// Tool is the tool called. Read only.
	Tool *Tool
	// Confirmed reports that the user approved the call (see
	// [ConfirmationPending]): a hook that demands confirmation with
	// [ErrConfirmationRequired] calls next when it is set.
	Confirmed bool

	svc *Service
}

// A ToolHandler runs a tool call: it returns the tool's Go result, or its
// error (an *[ArgumentsError] for arguments that do not decode, a
// *[VetoError] for a call a hook refused, an error wrapping
// [ErrToolTimeout] for a call that took too long, a *chat.PanicError for a
// tool that panicked). The model is told the result as text (see
// [ToolExecution.Text]) or the error.
type ToolHandler func(ctx context.Context, call *ToolCall) (any, error)

// A ToolHook wraps every tool call of a service, in the net/http
// middleware style. Before calling next it sees the call and may change
// its arguments; it may veto the call by returning an error made with
// [Veto] without calling next (the model is told the veto's message as
// the tool's result, and the turn goes on), or demand the user's
// confirmation by returning [ErrConfirmationRequired] (the turn pauses);
// after next it sees the result
// or the error and may replace them (the result's text is what the model
// is told).
//
// Hooks are given in [Config.ToolHooks]; the first is the outermost. The
// tool's timeout applies inside next, to the tool alone. Tool calls of one
// model reply may run concurrently ([Config.ParallelTools]): hooks must
// then be safe for concurrent use. A hook that panics fails the request;
// nothing of the turn is remembered. (A tool that panics is only told to
// the model.)
type ToolHook func(next ToolHandler) ToolHandler

// A VetoError is the error of a tool call a [ToolHook] refused: the model
// is told Message as the tool's result. Make one with [Veto].
type VetoError struct {
	// Message is what the model is told, verbatim.
	Message string
}

// Error implements error.
func (e *VetoError) Error() string { return "tool call vetoed: " + e.Message }

// Veto returns the error a [ToolHook] returns to refuse a tool call: the
// model is told message as the tool's result ("The user does not allow
// deleting items.", for example) and may go on without it.
func Veto(message string) error { return &VetoError{Message: message} }

// chainModelHooks returns the model handler of a service with hooks, the
// first outermost; nil without hooks.
func chainModelHooks(hooks []ModelHook) ModelHandler {
	if len(hooks) == 0 {
		return nil
	}
	h := ModelHandler(modelBase)
	for i := len(hooks) - 1; i >= 0; i-- {
		if hooks[i] != nil {
			h = hooks[i](h)
		}
	}
	return h
}

// modelBase is the innermost model handler: the attempts of the call.
func modelBase(ctx context.Context, call *ModelCall) (*llms.ContentResponse, error) {
	if call.turn == nil {
		return nil, fmt.Errorf("ai: a model hook called next with a ModelCall it made itself")
	}
	return call.turn.attempts(ctx, call.Messages, call.Options)
}

// chainToolHooks returns the tool handler of a service with hooks, the
// first outermost; nil without hooks.
func chainToolHooks(hooks []ToolHook) ToolHandler {
	if len(hooks) == 0 {
		return nil
	}
	h := ToolHandler(toolBase)
	for i := len(hooks) - 1; i >= 0; i-- {
		if hooks[i] != nil {
			h = hooks[i](h)
		}
	}
	return h
}

// toolBase is the innermost tool handler: the tool itself, with its
// timeout.
func toolBase(ctx context.Context, call *ToolCall) (any, error) {
	if call.svc == nil || call.Tool == nil {
		return nil, fmt.Errorf("ai: a tool hook called next with a ToolCall it made itself")
	}
	return call.svc.invokeTool(ctx, call.Tool, call.Name, call.Arguments)
}

// A hookPanic is a panic recovered from a hook: it fails the request.
type hookPanic struct {
	kind string // "model" or "tool"
	pe   *chat.PanicError
}

func (e *hookPanic) Error() string { return "a " + e.kind + " hook panicked: " + e.pe.Error() }

func (e *hookPanic) Unwrap() error { return e.pe }

// callModelHooks runs call through the service's model hooks, recovering
// a hook's panic.
func (s *Service) callModelHooks(ctx context.Context, call *ModelCall) (resp *llms.ContentResponse, err error) {
	defer func() {
		if v := recover(); v != nil {
			resp, err = nil, &hookPanic{kind: "model", pe: &chat.PanicError{Value: v, Stack: debug.Stack()}}
		}
	}()
	return s.modelHooks(ctx, call)
}

// callToolHooks runs call through the service's tool hooks, recovering a
// hook's panic as a *hookPanic (a tool's own panic is recovered inside,
// by toolBase).
func (s *Service) callToolHooks(ctx context.Context, call *ToolCall) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &hookPanic{kind: "tool", pe: &chat.PanicError{Value: v, Stack: debug.Stack()}}
		}
	}()
	return s.toolHooks(ctx, call)
}
