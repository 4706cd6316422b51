package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/google/uuid"
)

// An invocation holds the invocation-scoped beans of one top-level call.
type invocation struct {
	id       string
	mu       sync.Mutex
	beans    []beanEntry
	cleanups []func(context.Context) error
	ended    bool
}

type invocationKey struct{}

// BeginInvocation starts an invocation scope for a top-level call through a
// generated proxy and returns the context to hand to the call and the
// function that ends it (closing its beans, newest first). When ctx already
// carries an active invocation, the call is nested: it shares that
// invocation and end does nothing.
func BeginInvocation(ctx context.Context) (context.Context, func()) {
	if inv, _ := ctx.Value(invocationKey{}).(*invocation); inv != nil && !inv.isEnded() {
		return ctx, func() {}
	}
	inv := &invocation{}
	return context.WithValue(ctx, invocationKey{}, inv), func() { inv.end(ctx) }
}

func (inv *invocation) isEnded() bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.ended
}

// InvocationID returns the random id of the invocation active in ctx: AI
// services use it as the memory id of invocation-scoped calls.
func InvocationID(ctx context.Context) (string, bool) {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	if inv == nil {
		return "", false
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.id == "" { // made on first use: most invocations never need one
		inv.id = uuid.NewString()
	}
	return inv.id, true
}

// OnInvocationEnd registers fn to run when the invocation active in ctx
// ends, after its beans are closed (AI services delete the memory of an
// invocation with it). Without an active invocation the error matches
// [ErrNotActive].
func OnInvocationEnd(ctx context.Context, fn func(context.Context) error) error {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	if inv == nil {
		return notActive("on invocation end")
	}
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if inv.ended {
		return fmt.Errorf("chat: on invocation end: the invocation is over: %w", ErrNotActive)
	}
	inv.cleanups = append(inv.cleanups, fn)
	return nil
}

func (inv *invocation) end(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	inv.mu.Lock()
	beans := inv.beans
	cleanups := inv.cleanups
	inv.beans, inv.cleanups = nil, nil
	inv.ended = true
	inv.mu.Unlock()
	errs := []error{closeBeans(beans)}
	for i := len(cleanups) - 1; i >= 0; i-- {
		errs = append(errs, callCleanup(ctx, cleanups[i]))
	}
	if err := errors.Join(errs...); err != nil {
		logger := slog.Default()
		if st := stackFrom(ctx); st != nil {
			logger = st.logger
		}
		logger.ErrorContext(ctx, "chat: ending invocation", "err", err)
	}
}

func lookupInvocation[T any](ctx context.Context, b *Bean[T]) (T, error) {
	var zero T
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	if inv == nil {
		return zero, &BeanError{Bean: b.info.name, Err: ErrNotActive}
	}
	inv.mu.Lock()
	for _, e := range inv.beans {
		if e.info == &b.info {
			inv.mu.Unlock()
			return e.value.(T), nil
		}
	}
	inv.mu.Unlock()
	v, err := construct(ctx, b)
	if err != nil {
		return zero, err
	}
	inv.mu.Lock()
	if inv.ended {
		inv.mu.Unlock()
		closeDiscarded(ctx, v)
		return zero, &BeanError{Bean: b.info.name, Err: fmt.Errorf("the invocation is over: %w", ErrNotActive)}
	}
	for _, e := range inv.beans {
		if e.info == &b.info {
			inv.mu.Unlock()
			closeDiscarded(ctx, v) // another call of the invocation made it first
			return e.value.(T), nil
		}
	}
	inv.beans = append(inv.beans, beanEntry{info: &b.info, value: v})
	inv.mu.Unlock()
	return v, nil
}

// closeDiscarded closes a bean that was built but not kept, logging its
// error with the conversation's logger when there is one.
func closeDiscarded(ctx context.Context, v any) {
	if err := closeBean(v); err != nil {
		logger := slog.Default()
		if st := stackFrom(ctx); st != nil {
			logger = st.logger
		}
		logger.ErrorContext(ctx, "chat: closing a discarded bean", "err", err)
	}
}
