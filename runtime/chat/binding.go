package chat

import "context"

// binding is everything this package keeps in a context.Context, in one
// value so that a lookup is one ctx.Value call and a request adds one
// context layer. It is immutable: changes copy it.
type binding struct {
	stack     *scopeStack
	providers providerMap
	req       *requestState
	principal Principal
}

type bindingKey struct{}

func bindingFrom(ctx context.Context) *binding {
	b, _ := ctx.Value(bindingKey{}).(*binding)
	return b
}

// rebind returns ctx carrying a copy of its binding changed by fn.
func rebind(ctx context.Context, fn func(*binding)) context.Context {
	var nb binding
	if b := bindingFrom(ctx); b != nil {
		nb = *b
	}
	fn(&nb)
	return context.WithValue(ctx, bindingKey{}, &nb)
}

func stackFrom(ctx context.Context) *scopeStack {
	if b := bindingFrom(ctx); b != nil {
		return b.stack
	}
	return nil
}

func providerFor(ctx context.Context, info *beanInfo) providerFunc {
	if b := bindingFrom(ctx); b != nil {
		return b.providers[info]
	}
	return nil
}

func requestFrom(ctx context.Context) *requestState {
	if rc, ok := ctx.(*requestContext); ok {
		return rc.bind.req // a route's own context: no Value call
	}
	if b := bindingFrom(ctx); b != nil {
		return b.req
	}
	return nil
}
