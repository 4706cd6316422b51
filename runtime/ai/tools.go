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

// runTools runs the tool calls of one model reply of a turn of m, which
// offers tools, and appends their executions, in call order, to execs.
// With ParallelTools the calls run concurrently.
func (s *Service) runTools(ctx context.Context, m *Method, tools []Tool, calls []llms.ToolCall, execs []ToolExecution) []ToolExecution {
	first := len(execs)
	execs = append(execs, make([]ToolExecution, len(calls))...)
	out := execs[first:]
	if s.parallel && len(calls) > 1 {
		var wg sync.WaitGroup
		for i := range calls {
			wg.Go(func() { out[i] = s.runTool(ctx, m, tools, calls[i]) })
		}
		wg.Wait()
		return execs
	}
	for i := range calls {
		out[i] = s.runTool(ctx, m, tools, calls[i])
	}
	return execs
}

// runTool runs one tool call. It never fails: whatever goes wrong becomes
// the text the model is told ("error: …") and the execution's Err.
func (s *Service) runTool(ctx context.Context, m *Method, tools []Tool, call llms.ToolCall) ToolExecution {
	name, args := call.FunctionCall.Name, call.FunctionCall.Arguments
	ex := ToolExecution{ID: call.ID, Name: name, Arguments: args}
	tool, ok := findTool(tools, name)
	if !ok || tool.Invoke == nil {
		ex.Err = fmt.Errorf("%w %q", ErrUnknownTool, name)
		if names := toolNames(tools); names != "" {
			ex.Text = fmt.Sprintf("error: unknown tool %q; the tools are %s", name, names)
		} else {
			ex.Text = fmt.Sprintf("error: unknown tool %q; there are no tools", name)
		}
		s.log().WarnContext(ctx, "ai: the model called an unknown tool",
			"service", s.name, "method", m.Name, "tool", name, "call", call.ID)
		return ex
	}
	ex.Immediate = tool.Immediate
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	res, panicked, err := invoke(ctx, tool.Invoke, args)
	var argErr *ArgumentsError
	switch {
	case panicked:
		ex.Err = err
		ex.Text = fmt.Sprintf("error: tool %q failed", name)
		pe := err.(*chat.PanicError)
		s.log().ErrorContext(ctx, "ai: tool panicked",
			"service", s.name, "method", m.Name, "tool", name, "call", call.ID,
			"panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	case errors.As(err, &argErr):
		ex.Err = err
		ex.Text = fmt.Sprintf("error: invalid arguments for tool %q: %v", name, argErr.cause())
		s.log().WarnContext(ctx, "ai: the model called a tool with invalid arguments",
			"service", s.name, "method", m.Name, "tool", name, "call", call.ID, "err", argErr.cause())
	case err != nil:
		ex.Err = err
		ex.Text = "error: " + err.Error()
		s.log().WarnContext(ctx, "ai: tool failed",
			"service", s.name, "method", m.Name, "tool", name, "call", call.ID, "err", err)
	default:
		text, err := resultText(res)
		if err != nil {
			ex.Err = fmt.Errorf("encoding the result of tool %q: %w", name, err)
			ex.Text = fmt.Sprintf("error: tool %q returned a result that cannot be encoded", name)
			s.log().ErrorContext(ctx, "ai: tool result cannot be encoded",
				"service", s.name, "method", m.Name, "tool", name, "call", call.ID, "err", err)
			break
		}
		ex.Result, ex.Text = res, text
	}
	if l := s.log(); l.Enabled(ctx, slog.LevelDebug) {
		l.LogAttrs(ctx, slog.LevelDebug, "ai: tool call",
			slog.String("service", s.name), slog.String("method", m.Name),
			slog.String("tool", name), slog.String("call", call.ID), slog.Bool("failed", ex.Err != nil))
	}
	return ex
}

// invoke calls fn, recovering a panic as a *chat.PanicError.
func invoke(ctx context.Context, fn func(context.Context, string) (any, error), args string) (res any, panicked bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, panicked, err = nil, true, &chat.PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	res, err = fn(ctx, args)
	return res, false, err
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
// invocation-scoped bean called outside one) and calls fn with it.
func BeanTool[B, A any](bean *chat.Bean[B], fn func(ctx context.Context, b B, args A) (any, error)) func(context.Context, string) (any, error) {
	return func(ctx context.Context, arguments string) (any, error) {
		var args A
		if err := json.Unmarshal([]byte(arguments), &args); err != nil {
			return nil, &ArgumentsError{Err: err}
		}
		ctx, b, end, err := lookupBean(ctx, bean)
		defer end()
		if err != nil {
			return nil, err
		}
		return fn(ctx, b, args)
	}
}

// BeanToolNoArgs is [BeanTool] for a tool without parameters: the model's
// arguments are ignored.
func BeanToolNoArgs[B any](bean *chat.Bean[B], fn func(ctx context.Context, b B) (any, error)) func(context.Context, string) (any, error) {
	return func(ctx context.Context, _ string) (any, error) {
		ctx, b, end, err := lookupBean(ctx, bean)
		defer end()
		if err != nil {
			return nil, err
		}
		return fn(ctx, b)
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
	b, err := chat.Lookup(ctx, bean)
	return ctx, b, end, err
}
