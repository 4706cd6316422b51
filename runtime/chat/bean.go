package chat

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Kind is how long a scoped bean lives.
type Kind uint8

const (
	// KindChat beans (//chat:scoped) live in the scope that first used them
	// and are inherited by nested scopes. It is the zero Kind.
	KindChat Kind = iota
	// KindPerChat beans (//chat:scoped per-chat) live in one scope and are
	// never inherited: every scope, nested or not, has its own.
	KindPerChat
	// KindInvocation beans (//chat:scoped invocation) live for one top-level
	// call through a generated proxy; nested calls made with the context
	// they are handed share them.
	KindInvocation
)

// String returns "chat", "per-chat" or "invocation".
func (k Kind) String() string {
	switch k {
	case KindChat:
		return "chat"
	case KindPerChat:
		return "per-chat"
	case KindInvocation:
		return "invocation"
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// A Bean describes a scoped type T. Generated code declares one per
// //chat:scoped type; it is immutable.
//
// An instance with a Close() error, Close(), Destroy() error or Destroy()
// method has it called once, when its scope ends (or its invocation, for
// invocation beans) — not when a durable conversation's scope merely
// leaves the process: [DetachableBean] describes that case, and the whole
// lifecycle.
type Bean[T any] struct {
	info  beanInfo
	newFn func(context.Context) (T, error)
}

// beanInfo is the untyped part of a Bean; its address is the bean's key.
type beanInfo struct {
	name    string
	kind    Kind
	durable bool // saved with a durable conversation (//chat:scoped durable)
	// restoreToClose builds an instance of a durable bean from its saved
	// state, to close it at the end of a scope that did not use it since
	// it was restored (closePending); nil for beans that are not durable
	// or have no Close or Destroy method.
	restoreToClose func(ctx context.Context, raw []byte) (any, error)
}

type beanEntry struct {
	info  *beanInfo
	value any
}

// BeanOptions are how a scoped bean lives, for [NewBean]; nil (the zero
// value) describes a chat-scoped bean that is not durable.
type BeanOptions struct {
	// Kind is how long its instances live; the zero Kind is KindChat.
	Kind Kind
	// Durable marks a durable bean (//chat:scoped durable): in a
	// conversation served by a [Router] with a
	// [chatstore.ConversationStore], its instances are saved with the
	// conversation, as their encoding/json encoding, and restored when the
	// conversation is resumed — on first use, by building an instance
	// (with its constructor, or its provider) and decoding the saved JSON
	// into it. Fields the encoding skips (json:"-") keep what the
	// constructor gave them. Beans that are not durable are not saved:
	// after a resume they are built afresh when first used. Invocation
	// beans never outlive a request, so Durable is ignored for them.
	Durable bool
}

// NewBean describes the scoped type T, named name ("import/path.Type"; it
// keys a durable bean's saved state, so it must be unique and stable),
// living as opts says. newFn builds an instance; it is nil when the type's
// constructor needs application dependencies, which are then supplied by
// the provider of the package registration passed to [WithPackages]
// (generated code registers it with chatimpl.Provide).
func NewBean[T any](name string, opts *BeanOptions, newFn func(context.Context) (T, error)) *Bean[T] {
	var o BeanOptions
	if opts != nil {
		o = *opts
	}
	b := &Bean[T]{info: beanInfo{name: name, kind: o.Kind}, newFn: newFn}
	if o.Durable && o.Kind != KindInvocation {
		b.makeDurable()
	}
	return b
}

// Name returns the bean's type name, "import/path.Type".
func (b *Bean[T]) Name() string { return b.info.name }

// Kind returns how long the bean lives.
func (b *Bean[T]) Kind() Kind { return b.info.kind }

// key returns the bean's key: a provider's (see [WithPackages]).
func (b *Bean[T]) key() *beanInfo { return &b.info }

// Lookup returns the instance of the bean for ctx, creating it on first use.
//
// Chat-scoped beans are looked up in the current scope, then its parents; a
// new one is created in the current scope. Per-chat beans are looked up in
// the current scope only. Invocation-scoped beans live in the invocation
// started by [BeginInvocation]. Without an active scope (or invocation) the
// error matches [ErrNotActive].
func (b *Bean[T]) Lookup(ctx context.Context) (T, error) {
	if b.info.kind == KindInvocation {
		return lookupInvocation(ctx, b)
	}
	st := stackFrom(ctx)
	var s *scope
	if st != nil {
		s = st.current.Load()
	}
	if s == nil {
		var zero T
		return zero, &BeanError{Bean: b.info.name, Err: ErrNotActive}
	}
	for p := s; p != nil; p = p.parent {
		if v, ok := p.find(&b.info); ok {
			return v.(T), nil
		}
		if b.info.durable {
			if raw := p.saved(b.info.name); raw != nil {
				return restoreInScope(ctx, p, b, raw)
			}
		}
		if b.info.kind == KindPerChat {
			break
		}
	}
	return createInScope(ctx, s, b)
}

// MustLookup is like [Bean.Lookup] but panics with the *[BeanError] when the bean
// cannot be resolved. Generated proxies use it for methods that have no
// error result to return it through; routes recover such panics.
func (b *Bean[T]) MustLookup(ctx context.Context) T {
	v, err := b.Lookup(ctx)
	if err != nil {
		panic(err)
	}
	return v
}

func (s *scope) find(info *beanInfo) (any, bool) {
	p := s.beans.Load()
	if p == nil {
		return nil, false
	}
	for _, e := range *p {
		if e.info == info {
			return e.value, true
		}
	}
	return nil, false
}

func createInScope[T any](ctx context.Context, s *scope, b *Bean[T]) (T, error) {
	var zero T
	v, err := construct(ctx, b)
	if err != nil {
		return zero, err
	}
	return install(ctx, s, b, v, false)
}

// install makes v the instance of b in s, unless s ended or another
// goroutine installed one first. restored says v was restored from the
// saved state of s: then a v not kept is detached, not closed (the
// instance kept, or the end of s, closes that state's bean).
func install[T any](ctx context.Context, s *scope, b *Bean[T], v T, restored bool) (T, error) {
	var zero T
	discard := closeDiscarded
	if restored {
		discard = detachDiscarded
	}
	st := s.stack
	st.mu.Lock()
	if s.ended {
		st.mu.Unlock()
		discard(ctx, v)
		return zero, &BeanError{Bean: b.info.name, Err: ErrNotActive}
	}
	// Another goroutine of this conversation may have created it meanwhile.
	if existing, ok := s.find(&b.info); ok {
		st.mu.Unlock()
		discard(ctx, v)
		return existing.(T), nil
	}
	var beans []beanEntry
	if p := s.beans.Load(); p != nil {
		beans = slices.Clip(*p)
	}
	beans = append(beans, beanEntry{info: &b.info, value: v})
	s.beans.Store(&beans)
	if b.info.durable {
		delete(s.pending, b.info.name) // its saved state now lives in v
	}
	st.mu.Unlock()
	return v, nil
}

// construct builds a new instance with the provider registered in ctx, or
// the bean's own constructor.
func construct[T any](ctx context.Context, b *Bean[T]) (T, error) {
	var zero T
	var v T
	var err error
	if fn := providerFor(ctx, &b.info); fn != nil {
		var a any
		a, err = fn(ctx)
		if err == nil {
			v, _ = a.(T)
		}
	} else if b.newFn != nil {
		v, err = b.newFn(ctx)
	} else {
		return zero, &BeanError{Bean: b.info.name, Err: fmt.Errorf("%w: its constructor needs application dependencies; pass its package's registration to chat.WithPackages", ErrNoProvider)}
	}
	if err != nil {
		return zero, &BeanError{Bean: b.info.name, Err: err}
	}
	return v, nil
}

// closeBeans closes beans newest first and joins their errors.
func closeBeans(beans []beanEntry) error {
	var errs []error
	for i := len(beans) - 1; i >= 0; i-- {
		if err := closeBean(beans[i].value); err != nil {
			errs = append(errs, fmt.Errorf("bean %s: %w", beans[i].info.name, err))
		}
	}
	return errors.Join(errs...)
}

// closeBean calls the Close or Destroy method of v, when it has one.
func closeBean(v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("close panicked: %v", r)
		}
	}()
	switch b := v.(type) {
	case interface{ Close() error }:
		return b.Close()
	case interface{ Close() }:
		b.Close()
	case interface{ Destroy() error }:
		return b.Destroy()
	case interface{ Destroy() }:
		b.Destroy()
	}
	return nil
}
