package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
)

// A DetachableBean is a scoped bean told when its scope leaves this process
// without ending: a durable conversation is detached ([Conversation.Detach]:
// its connection was lost, its server drains or shuts down), another node
// or session takes it over, or a save that failed rolls it back to its
// saved state, rebuilding its scopes here. DetachBean is then called
// instead of Close (or Destroy): the scope goes on — on the node that
// resumes the conversation, or here from its saved state — and Close runs
// once, where and when the scope really ends. DetachBean lets go of what
// the instance holds in this process (a connection, a file, a goroutine)
// and must not act as if the scope ended: a durable bean's state stays in
// the store, and its side effects of an end (cancelling what the
// conversation started, say) belong in Close.
//
// The lifecycle of a bean of a scope, in one process:
//
//   - created: on its first use in the scope ([Bean.Lookup]), by its
//     constructor (or its provider).
//   - restored (durable beans, after a resume or a rollback): on its first
//     use, by its constructor, then decoding its saved JSON into it (a
//     json.Unmarshaler's UnmarshalJSON runs then); a resume runs no bean
//     code before that.
//   - detached: DetachBean, when the bean implements it; nothing
//     otherwise. The instance is then dropped: a bean that is not durable
//     is built afresh where the scope goes on, if it is used there.
//   - closed: Close or Destroy, when the scope ends ([Pop], [End], the
//     session's Close, a route ending the conversation), newest bean
//     first. A durable bean with such a method that was not used since
//     the resume is restored first, to be closed with its saved state,
//     when its package's registration provides it (see chatimpl.Provide).
//
// Invocation beans are closed at the end of their invocation and never
// detached. Errors of DetachBean are joined into the error of the detach,
// which the router logs; a panic in it is recovered as an error.
type DetachableBean interface {
	DetachBean(ctx context.Context) error
}

// makeDurable marks b durable (BeanOptions.Durable): its instances
// are saved with a durable conversation and restored from their JSON.
func (b *Bean[T]) makeDurable() {
	b.info.durable = true
	if mayClose[T]() {
		b.info.restoreToClose = func(ctx context.Context, raw []byte) (any, error) {
			v, err := construct(ctx, b)
			if err != nil {
				return nil, err
			}
			if err := json.Unmarshal(raw, &v); err != nil {
				// Closed all the same: its scope ends.
				return v, &BeanError{Bean: b.info.name, Err: fmt.Errorf("restoring its saved state to close it: %w", err)}
			}
			return v, nil
		}
	}
}

// mayClose reports whether a T may have a Close or Destroy method that
// closeBean calls: always for an interface type, whose dynamic types are
// not known here.
func mayClose[T any]() bool {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Interface {
		return true
	}
	for _, c := range []reflect.Type{
		reflect.TypeFor[interface{ Close() error }](),
		reflect.TypeFor[interface{ Close() }](),
		reflect.TypeFor[interface{ Destroy() error }](),
		reflect.TypeFor[interface{ Destroy() }](),
	} {
		if t.Implements(c) {
			return true
		}
	}
	return false
}

// Durable reports whether the bean is saved with durable conversations.
func (b *Bean[T]) Durable() bool { return b.info.durable }

// saved returns the saved state of the durable bean name in s, when s was
// restored from a store and the bean was not used since.
func (s *scope) saved(name string) []byte {
	s.stack.mu.Lock()
	defer s.stack.mu.Unlock()
	return s.pending[name]
}

// restoreInScope builds the instance of b in s from its saved state raw.
func restoreInScope[T any](ctx context.Context, s *scope, b *Bean[T], raw []byte) (T, error) {
	var zero T
	v, err := construct(ctx, b)
	if err != nil {
		return zero, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		// The saved state stays, and the scope goes on: the instance is
		// dropped as at a detach, not closed.
		detachDiscarded(ctx, v)
		return zero, &BeanError{Bean: b.info.name, Err: fmt.Errorf("restoring its saved state: %w", err)}
	}
	return install(ctx, s, b, v, true)
}

// detachBeans calls DetachBean on the beans that implement
// [DetachableBean], newest first, and joins their errors.
func detachBeans(ctx context.Context, beans []beanEntry) error {
	var errs []error
	for _, e := range slices.Backward(beans) {
		if err := detachBean(ctx, e.value); err != nil {
			errs = append(errs, fmt.Errorf("bean %s: %w", e.info.name, err))
		}
	}
	return errors.Join(errs...)
}

// detachBean calls the DetachBean method of v, when it has one.
func detachBean(ctx context.Context, v any) (err error) {
	d, ok := v.(DetachableBean)
	if !ok {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("detach panicked: %v", r)
		}
	}()
	return d.DetachBean(ctx)
}

// detachDiscarded detaches a restored bean that was not kept (another
// goroutine restored it first, or its scope ended meanwhile, and was
// closed with its own instance), logging its error: it holds the saved
// state of a bean that lives on, so it is not closed.
func detachDiscarded(ctx context.Context, v any) {
	if err := detachBean(context.WithoutCancel(ctx), v); err != nil {
		logger := slog.Default()
		if st := stackFrom(ctx); st != nil {
			logger = st.logger
		}
		logger.ErrorContext(ctx, "chat: detaching a discarded bean", "err", err)
	}
}

// closePending closes the durable beans of an ended scope s that were
// restored from the store but not used since (pending, by name), in name
// order: each is restored to be closed, when its type may have a Close or
// Destroy method and ctx carries its provider (a router's requests carry
// those of its packages). Beans that ctx does not provide are left: this
// process does not know them.
func (s *scope) closePending(ctx context.Context, pending map[string][]byte) error {
	b := bindingFrom(ctx)
	if b == nil || len(b.providers) == 0 {
		return nil
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(pending)) {
		var info *beanInfo
		for i := range b.providers {
			if i.name == name && i.restoreToClose != nil {
				info = i
				break
			}
		}
		if info == nil {
			continue
		}
		v, err := info.restoreToClose(ctx, pending[name])
		if err != nil {
			errs = append(errs, err)
		}
		if v == nil {
			continue
		}
		if err := closeBean(v); err != nil {
			errs = append(errs, fmt.Errorf("bean %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
