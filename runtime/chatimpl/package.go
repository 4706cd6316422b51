package chatimpl

import (
	"context"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// A Package is the chat registration of one Go package, built by the
// package's generated Register function: its routes, its error handlers,
// the providers of its scoped beans, the checks a router runs when it
// starts and the manifest of its routes. There are no global registries:
// an application passes the packages it uses to chat.NewRouter or
// chat.WithPackages explicitly.
//
// A Package is built by one goroutine, then only read.
type Package struct {
	path        string
	providers   []Provider
	routes      []RouteSpec
	catches     []CatchSpec
	checks      []func() error
	storeChecks []func(chatstore.ConversationStore) error
	manifest    *Manifest
}

// NewPackage starts the registration of the package with import path path.
func NewPackage(path string) *Package {
	return &Package{path: path}
}

// Path returns the import path of the registered package.
func (p *Package) Path() string { return p.path }

// AddRoute registers a route (//chat:route).
func (p *Package) AddRoute(r RouteSpec) {
	p.routes = append(p.routes, r)
}

// AddCatch registers an error handler (//chat:catch).
func (p *Package) AddCatch(c CatchSpec) {
	p.catches = append(p.catches, c)
}

// AddCheck registers a check that chat.NewRouter runs: an error fails
// NewRouter. runtime/ai's Register adds one per AI service, refusing a
// service without a model before it serves a request.
func (p *Package) AddCheck(check func() error) {
	p.checks = append(p.checks, check)
}

// AddStoreCheck registers a check that chat.NewRouter runs, with its
// store, when its RouterOptions.Store is set: an error fails NewRouter.
// An AI service's refuses a chat memory kept outside the store.
func (p *Package) AddStoreCheck(check func(chatstore.ConversationStore) error) {
	p.storeChecks = append(p.storeChecks, check)
}

// Describe registers the manifest of the package's routes. A later call
// replaces it.
func (p *Package) Describe(m *Manifest) {
	p.manifest = m
}

// Routes returns the registered routes, for the runtime. The slice is the
// package's own: the caller must not change it.
func (p *Package) Routes() []RouteSpec { return p.routes }

// Catches returns the registered error handlers, for the runtime. The
// slice is the package's own: the caller must not change it.
func (p *Package) Catches() []CatchSpec { return p.catches }

// Checks returns the checks added with [Package.AddCheck], for the
// runtime.
func (p *Package) Checks() []func() error { return p.checks }

// StoreChecks returns the checks added with [Package.AddStoreCheck], for
// the runtime.
func (p *Package) StoreChecks() []func(chatstore.ConversationStore) error {
	return p.storeChecks
}

// Manifest returns the manifest registered with [Package.Describe] (nil
// when there is none), for the runtime.
func (p *Package) Manifest() *Manifest { return p.manifest }

// Providers returns the bean providers registered with [Provide], in
// order, for the runtime. The slice is the package's own: the caller must
// not change it.
func (p *Package) Providers() []Provider { return p.providers }

// A Bean is a scoped bean's descriptor: a *chat.Bean[T], which generated
// code declares with chat.NewBean.
type Bean[T any] interface {
	// Lookup returns the instance of the bean for ctx.
	Lookup(ctx context.Context) (T, error)
}

// A Provider builds the instances of one scoped bean with the application
// dependencies its package's registration bound into it.
type Provider struct {
	// Bean is the bean's descriptor, the *chat.Bean[T] given to [Provide].
	Bean any
	// New builds an instance; its result has the bean's type T.
	New func(context.Context) (any, error)
}

// Provide registers fn as the constructor of bean b, a *chat.Bean[T]
// (chat.NewRouter refuses a descriptor of another type): generated code
// binds the application dependencies of the bean's constructor into fn. It provides every durable bean, dependencies or
// not: a router knows a durable bean by its provider, to restore and close
// one its node did not use since a resume where its scope ends (see
// chat.DetachableBean).
func Provide[T any](p *Package, b Bean[T], fn func(context.Context) (T, error)) {
	p.providers = append(p.providers, Provider{
		Bean: b,
		New:  func(ctx context.Context) (any, error) { return fn(ctx) },
	})
}
