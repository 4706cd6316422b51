package chat

import (
	"context"
	"encoding/json"
	"fmt"
)

// NewDurableBean is [NewBean] for a durable bean (//chat:scoped durable):
// in a conversation served by a [Router] with a [chatstore.ConversationStore], its
// instances are saved with the conversation, as their encoding/json
// encoding, and restored when the conversation is resumed — on first use,
// by building an instance (with its constructor, or its provider) and
// decoding the saved JSON into it. Fields the encoding skips (json:"-")
// keep what the constructor gave them. Beans that are not durable are not
// saved: after a resume they are built afresh when first used.
//
// Only chat-scoped and per-chat beans can be durable: invocation-scoped
// beans never outlive a request.
func NewDurableBean[T any](name string, kind Kind, newFn func(context.Context) (T, error)) *Bean[T] {
	b := NewBean(name, kind, newFn)
	b.info.durable = kind != KindInvocation
	return b
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
		closeDiscarded(ctx, v)
		return zero, &BeanError{Bean: b.info.name, Err: fmt.Errorf("restoring its saved state: %w", err)}
	}
	return install(ctx, s, b, v)
}
