package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// runTools runs the tool calls of one model reply and appends their
// executions, in call order, to the reply's. With ParallelTools the calls
// run concurrently. Tool failures are told to the model; the error is a
// hook's panic, which fails the request.
func (t *turn) runTools(ctx context.Context, calls []llms.ToolCall) error {
	execs := t.reply.Executions
	first := len(execs)
	execs = append(execs, make([]ToolExecution, len(calls))...)
	t.reply.Executions = execs
	out := execs[first:]
	if t.s.parallel && len(calls) > 1 {
		errs := make([]error, len(calls))
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() { out[i], errs[i] = t.runTool(ctx, calls[i]) })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	if len(calls) > 1 && t.concurrentCalls(calls) > 0 {
		return t.runConcurrent(ctx, calls, out)
	}
	for i := range calls {
		if ctx.Err() != nil {
			// Stopped, or out of time: the calls left do not run.
			out[i] = notRun(ctx, calls[i])
			continue
		}
		var err error
		if out[i], err = t.runTool(ctx, calls[i]); err != nil {
			return err
		}
	}
	return nil
}

// notRun returns the execution of a call that did not run because ctx
// ended first: its result tells the model so.
func notRun(ctx context.Context, call llms.ToolCall) ToolExecution {
	return ToolExecution{ID: call.ID, Name: call.FunctionCall.Name, Arguments: call.FunctionCall.Arguments,
		Err: ctx.Err(), Text: cancelledToolResult}
}

// runTool runs one tool call, in a span of its own when tracing is on. It
// fails only when a hook panics: whatever else goes wrong becomes the text
// the model is told ("error: …") and the execution's Err.
func (t *turn) runTool(ctx context.Context, call llms.ToolCall) (ToolExecution, error) {
	if t.isAgentTool(call) {
		ctx = t.agentCallCtx(ctx, call)
	}
	if tr, ok := t.s.tel.tracer(); ok {
		return t.runToolTraced(ctx, tr, call)
	}
	return t.s.runTool(ctx, t.m, t.tools, call)
}

// runTool runs one tool call: see [turn.runTool].
func (s *Service) runTool(ctx context.Context, m *Method, tools []Tool, call llms.ToolCall) (ToolExecution, error) {
	name, args := call.FunctionCall.Name, call.FunctionCall.Arguments
	ex := ToolExecution{ID: call.ID, Name: name, Arguments: args}
	tool, ok := findTool(tools, name)
	if !ok || (tool.Invoke == nil && !tool.Client) {
		ex.Err = fmt.Errorf("%w %q", ErrUnknownTool, name)
		if names := toolNames(tools); names != "" {
			ex.Text = fmt.Sprintf("error: unknown tool %q; the tools are %s", name, names)
		} else {
			ex.Text = fmt.Sprintf("error: unknown tool %q; there are no tools", name)
		}
		s.log().WarnContext(ctx, "ai: the model called an unknown tool",
			"service", s.name, "method", m.Name, "tool", name, "call", call.ID)
		return ex, nil
	}
	ex.Immediate = tool.Immediate
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	if tool.Client {
		ex.Err = errClientRuns // the turn pauses: see clienttool.go
		return ex, nil
	}
	confirmed := approved(ctx, call.ID)
	if tool.Confirm && !confirmed {
		ex.Err = ErrConfirmationRequired
		return ex, nil
	}
	var res any
	var err error
	if s.toolHooks != nil {
		res, err = s.callToolHooks(ctx, &ToolCall{Service: s.name, Method: m.Name, ID: call.ID, Name: name, Arguments: args, Tool: tool, Confirmed: confirmed, svc: s})
		if hp, ok := err.(*hookPanic); ok {
			s.log().ErrorContext(ctx, "ai: tool hook panicked",
				"service", s.name, "method", m.Name, "tool", name, "call", call.ID,
				"panic", fmt.Sprint(hp.pe.Value), "stack", string(hp.pe.Stack))
			return ex, fmt.Errorf("tool %q: %w", name, err)
		}
	} else {
		res, err = s.invokeTool(ctx, tool, name, args)
	}
	if err != nil && errors.Is(err, ErrConfirmationRequired) {
		if !confirmed {
			ex.Err = err // the turn pauses
			return ex, nil
		}
		err = fmt.Errorf("a tool hook asked again for the confirmation the user gave: %w", err)
		ex.Err = err
		ex.Text = "error: " + err.Error()
	} else if err != nil {
		ex.Err = err
		ex.Text = s.toolFailed(ctx, m, call, err)
	} else if text, err := resultText(res); err != nil {
		ex.Err = fmt.Errorf("encoding the result of tool %q: %w", name, err)
		ex.Text = fmt.Sprintf("error: tool %q returned a result that cannot be encoded", name)
		s.log().ErrorContext(ctx, "ai: tool result cannot be encoded",
			"service", s.name, "method", m.Name, "tool", name, "call", call.ID, "err", err)
	} else {
		ex.Result, ex.Text = res, text
		if tool.Event && res != nil {
			ex.Sent = s.sendToolEvent(ctx, m, call, res)
		}
	}
	if l := s.log(); l.Enabled(ctx, slog.LevelDebug) {
		l.LogAttrs(ctx, slog.LevelDebug, "ai: tool call",
			slog.String("service", s.name), slog.String("method", m.Name),
			slog.String("tool", name), slog.String("call", call.ID), slog.Bool("failed", ex.Err != nil))
	}
	return ex, nil
}

// sendToolEvent sends res, the result of an event tool ([Tool.Event]), to
// the client of the request in ctx, and reports whether it did. Outside a
// request nothing is sent; a failure is logged, and the tool's result still
// stands.
func (s *Service) sendToolEvent(ctx context.Context, m *Method, call llms.ToolCall, res any) bool {
	if chat.Request(ctx) == nil {
		return false
	}
	if err := chat.SendValue(ctx, res); err != nil {
		s.log().WarnContext(ctx, "ai: a tool's event was not sent",
			"service", s.name, "method", m.Name, "tool", call.FunctionCall.Name, "call", call.ID, "err", err)
		return false
	}
	return true
}

// toolFailed logs the failure of a tool call and returns what the model
// is told of it.
func (s *Service) toolFailed(ctx context.Context, m *Method, call llms.ToolCall, err error) string {
	name := call.FunctionCall.Name
	var argErr *ArgumentsError
	var veto *VetoError
	var pe *chat.PanicError
	var timeout *toolTimeoutError
	switch {
	case errors.As(err, &veto):
		s.log().InfoContext(ctx, "ai: a tool hook vetoed a tool call",
			"service", s.name, "method", m.Name, "tool", name, "call", call.ID, "message", veto.Message)
		return veto.Message
	case errors.As(err, &pe):
		s.log().ErrorContext(ctx, "ai: tool panicked",
			"service", s.name, "method", m.Name, "tool", name, "call", call.ID,
			"panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
		return fmt.Sprintf("error: tool %q failed", name)
	case errors.As(err, &timeout):
		s.log().WarnContext(ctx, "ai: tool timed out; a tool that ignores its context is left to finish, its result discarded",
			"service", s.name, "method", m.Name, "tool", name, "call", call.ID, "timeout", timeout.after)
		return fmt.Sprintf("error: tool %q timed out after %v", name, timeout.after)
	case errors.As(err, &argErr):
		s.log().WarnContext(ctx, "ai: the model called a tool with invalid arguments",
			"service", s.name, "method", m.Name, "tool", name, "call", call.ID, "err", argErr.cause())
		return fmt.Sprintf("error: invalid arguments for tool %q: %v", name, argErr.cause())
	}
	s.log().WarnContext(ctx, "ai: tool failed",
		"service", s.name, "method", m.Name, "tool", name, "call", call.ID, "err", err)
	return "error: " + err.Error()
}

// invoke calls fn, recovering a panic as a *chat.PanicError.
func invoke(ctx context.Context, fn func(context.Context, string) (any, error), args string) (res any, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &chat.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return fn(ctx, args)
}

// cause returns the decoding error of e, never nil.
func (e *ArgumentsError) cause() error {
	if e.Err == nil {
		return errors.New("the arguments do not decode")
	}
	return e.Err
}

// resultText is what the model is told of a tool's result: a string as it
// is, nil as "done", anything else as JSON.
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

// BeanTool returns the [Tool.Invoke] of a tool that is a method of the
// scoped bean: it decodes the model's arguments (JSON) into A, returning an
// *[ArgumentsError] when they do not decode, looks up the instance of bean
// in the scope of ctx (in an invocation of its own for an
// invocation-scoped bean called outside one) and calls fn with it. A tool
// without parameters takes struct{} for A: its arguments are then ignored,
// whatever the model sent.
func BeanTool[B, A any](bean *chat.Bean[B], fn func(ctx context.Context, b B, args A) (any, error)) func(context.Context, string) (any, error) {
	_, noArgs := any((*A)(nil)).(*struct{})
	return func(ctx context.Context, arguments string) (any, error) {
		var args A
		if !noArgs {
			if err := json.Unmarshal([]byte(arguments), &args); err != nil {
				return nil, &ArgumentsError{Err: err}
			}
		}
		ctx, b, end, err := lookupBean(ctx, bean)
		defer end()
		if err != nil {
			return nil, err
		}
		return fn(ctx, b, args)
	}
}

// lookupBean returns the instance of bean a tool call uses, with the
// context to call it with: for an invocation-scoped bean, that of an
// invocation begun for the call, which end (never nil) ends.
func lookupBean[B any](ctx context.Context, bean *chat.Bean[B]) (context.Context, B, func(), error) {
	end := func() {}
	if bean.Kind() == chat.KindInvocation {
		ctx, end = chat.BeginInvocation(ctx)
	}
	b, err := bean.Lookup(ctx)
	return ctx, b, end, err
}
