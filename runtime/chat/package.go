package chat

import (
	"context"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// A providerFunc builds an instance of a bean, with the application
// dependencies its package's registration bound into it.
type providerFunc func(context.Context) (any, error)

// A providerMap holds the provider of each bean that has one.
type providerMap map[*beanInfo]providerFunc

// WithPackages returns a context whose scoped beans are built with the
// providers of pkgs, the registrations of generated Register functions
// (in addition to those already in ctx; a later package wins). Beans whose
// constructors need application dependencies can only be created under
// such a context. A [Router] does this for its routes.
func WithPackages(ctx context.Context, pkgs ...*chatimpl.Package) context.Context {
	return rebind(ctx, func(b *binding) { b.providers = mergeProviders(b.providers, pkgs) })
}

// beanKey is implemented by every *Bean[T]: a provider's key.
type beanKey interface{ key() *beanInfo }

func mergeProviders(old providerMap, pkgs []*chatimpl.Package) providerMap {
	m := make(providerMap, len(old))
	for k, v := range old {
		m[k] = v
	}
	for _, p := range pkgs {
		for _, pr := range p.Providers() {
			// chatimpl.Provide takes the *Bean[T] of generated code: a
			// descriptor of another kind names no bean of this runtime.
			if k, ok := pr.Bean.(beanKey); ok && pr.New != nil {
				m[k.key()] = pr.New
			}
		}
	}
	return m
}
