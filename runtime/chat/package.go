package chat

import (
	"context"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// A Package is the chat registration of one Go package, built by the
// package's generated Register function: the providers of its scoped beans
// (and, with routes, its routes and error handlers). There are no global
// registries: an application passes the packages it uses explicitly.
type Package struct {
	path      string
	providers []provider
	routes    []RouteSpec
	catches   []CatchSpec
	checks    []func() error
	// storeChecks run when the router has a store (durable_memory_check.go).
	storeChecks []func(chatstore.ConversationStore) error
	manifest    *Manifest // see Describe
}

type provider struct {
	info *beanInfo
	fn   providerFunc
}

// A providerFunc builds an instance of a bean, with the application
// dependencies its package's registration bound into it.
type providerFunc func(context.Context) (any, error)

// A providerMap holds the provider of each bean that has one.
type providerMap map[*beanInfo]providerFunc

// NewPackage starts the registration of the package with import path path.
// Generated code calls it.
func NewPackage(path string) *Package {
	return &Package{path: path}
}

// Path returns the import path of the registered package.
func (p *Package) Path() string { return p.path }

// AddCheck registers a check that [NewRouter] runs: an error fails
// NewRouter. runtime/ai's Register, which generated code calls, adds one
// per AI service, refusing a service without a model before it serves a
// request.
func (p *Package) AddCheck(check func() error) {
	p.checks = append(p.checks, check)
}

// Provide registers fn as the constructor of bean b: generated code binds
// the application dependencies of b's constructor into fn. It provides
// every durable bean, dependencies or not: a router knows a durable bean by
// its provider, to restore and close one its node did not use since a
// resume where its scope ends (see [DetachableBean]).
func Provide[T any](p *Package, b *Bean[T], fn func(context.Context) (T, error)) {
	p.providers = append(p.providers, provider{
		info: &b.info,
		fn:   func(ctx context.Context) (any, error) { return fn(ctx) },
	})
}

// WithPackages returns a context whose scoped beans are built with the
// providers of pkgs (in addition to those already in ctx; a later package
// wins). Beans whose constructors need application dependencies can only be
// created under such a context. A [Router] does this for its routes.
func WithPackages(ctx context.Context, pkgs ...*Package) context.Context {
	return rebind(ctx, func(b *binding) { b.providers = mergeProviders(b.providers, pkgs) })
}

func mergeProviders(old providerMap, pkgs []*Package) providerMap {
	m := make(providerMap, len(old))
	for k, v := range old {
		m[k] = v
	}
	for _, p := range pkgs {
		for _, pr := range p.providers {
			m[pr.info] = pr.fn
		}
	}
	return m
}
