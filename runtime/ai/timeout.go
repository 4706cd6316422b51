package ai

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrToolTimeout matches the [ToolExecution.Err] of a tool call that ran
// longer than its timeout ([Tool.Timeout], else [Config.ToolTimeout]). The
// model is told that the tool timed out, and the turn goes on: the call's
// context is cancelled, and a tool that ignores it is left to finish on
// its own, its result discarded.
var ErrToolTimeout = errors.New("tool timed out")

// ErrModelTimeout matches the error of a request whose model call ran
// longer than [Config.ModelTimeout] (with [Config.Retry], every attempt
// did). The request fails and nothing of the turn is remembered.
var ErrModelTimeout = errors.New("model call timed out")

// toolTimeoutError is the error of a tool call that timed out.
type toolTimeoutError struct{ after time.Duration }

func (e *toolTimeoutError) Error() string { return fmt.Sprintf("tool timed out after %v", e.after) }

// Is makes the error match ErrToolTimeout and context.DeadlineExceeded.
func (e *toolTimeoutError) Is(target error) bool {
	return target == ErrToolTimeout || target == context.DeadlineExceeded
}

// errToolDeadline is the cause of the context of a tool call that timed
// out, telling its timeout from the caller's deadline.
var errToolDeadline = errors.New("ai: the tool's timeout expired")

// invokeTool calls tool with its timeout, recovering its panic as a
// *chat.PanicError. With a timeout the tool runs on a goroutine of its
// own, so that one ignoring its context cannot hold the turn past the
// timeout (nor past the end of ctx).
func (s *Service) invokeTool(ctx context.Context, tool *Tool, name, args string) (any, error) {
	d := tool.Timeout
	if d <= 0 {
		d = s.toolTimeout
	}
	if d <= 0 {
		return invoke(ctx, tool.Invoke, args)
	}
	tctx, cancel := context.WithTimeoutCause(ctx, d, errToolDeadline)
	defer cancel()
	type outcome struct {
		res any
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := invoke(tctx, tool.Invoke, args)
		done <- outcome{res, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-tctx.Done():
		select {
		case o = <-done: // it finished as time ran out
		default:
			if ctx.Err() != nil {
				return nil, fmt.Errorf("tool %q: %w", name, context.Cause(ctx))
			}
			return nil, &toolTimeoutError{after: d}
		}
	}
	if o.err != nil && ctx.Err() == nil && context.Cause(tctx) == errToolDeadline {
		// The tool gave up because its time was up.
		return nil, &toolTimeoutError{after: d}
	}
	return o.res, o.err
}
