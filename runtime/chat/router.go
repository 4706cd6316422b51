package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// A Router serves chat routes: it starts conversations on a route and runs
// each request on the current route of the conversation's current scope.
// Build it from the generated registrations of the packages that declare
// routes. It is safe for concurrent use.
type Router struct {
	routes    map[string]*chatimpl.RouteSpec
	def       string
	byRoute   map[string][]chatimpl.CatchSpec // route-specific handlers, concrete types first
	global    []chatimpl.CatchSpec            // global handlers, concrete types first
	providers providerMap
	logger    *slog.Logger
	observer  Observer // nil for none
	pkgs      []*chatimpl.Package

	// hooked is RouterOptions.RouteHooks around serveRoute; nil without
	// hooks.
	hooked RouteHandler

	// Durable conversations (durable_router.go).
	store    chatstore.ConversationStore // nil: conversations live in this process only
	node     string
	leaseTTL time.Duration
	liveMu   sync.Mutex
	live     map[string]*Conversation // the durable conversations served here, by id
	handover convLocks                // serialises Resume, Detach and Close per conversation id

	conversations atomic.Int64
	scopes        atomic.Int64
}

// RouterOptions configures a [Router]. A nil *RouterOptions, like the zero
// value, gives the defaults.
type RouterOptions struct {
	// Logger logs failed requests and cleanup errors. Nil means
	// [slog.Default].
	Logger *slog.Logger
	// Observer, when not nil, is told about the scope lifecycle of every
	// conversation the router starts.
	Observer Observer
	// RouteHooks wrap the handling of every request, the first outermost
	// (see [RouteHook]).
	RouteHooks []RouteHook

	// Store, when not nil, makes the router's conversations durable: each
	// is saved there when it starts and after every request, before the
	// request's terminator, and can be resumed by a client holding its
	// resume token, on this router or any other over the same store, after
	// a reconnect or a restart ([Router.Resume]). Nil keeps conversations
	// in this process only.
	Store chatstore.ConversationStore
	// Node names this router as the holder of the leases that give one
	// router at a time the right to serve a conversation. Empty means a
	// random name. Routers sharing a store need distinct names; a stable
	// name (the host's, say) lets a restarted process take its
	// conversations back at once instead of waiting for their leases to
	// end.
	Node string
	// LeaseTTL is how long a lease lasts; it is renewed before a request
	// when half of it has passed, and every third of it while a request
	// runs. After a crash, another node can take a conversation over once
	// its lease has ended. Zero means 30 seconds.
	LeaseTTL time.Duration
}

// cloneWithDefaults returns a copy of opts with the defaults filled in.
func (opts *RouterOptions) cloneWithDefaults() *RouterOptions {
	var o RouterOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Node == "" {
		o.Node = newNodeName()
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = defaultLeaseTTL
	}
	return &o
}

// NewRouter returns a router serving the routes of pkgs (their generated
// Register functions return them). opts may be nil. A route registered
// twice or two default routes are an error. When there is exactly one
// route, it is the default.
func NewRouter(opts *RouterOptions, pkgs ...*chatimpl.Package) (*Router, error) {
	opts = opts.cloneWithDefaults()
	r := &Router{
		routes:   map[string]*chatimpl.RouteSpec{},
		byRoute:  map[string][]chatimpl.CatchSpec{},
		logger:   opts.Logger,
		observer: opts.Observer,
		store:    opts.Store,
		node:     opts.Node,
		leaseTTL: opts.LeaseTTL,
		live:     map[string]*Conversation{},
	}
	if len(opts.RouteHooks) > 0 {
		r.hooked = chainRouteHooks(opts.RouteHooks)
	}
	var errs []error
	for _, p := range pkgs {
		errs = append(errs, r.add(p))
		if p != nil && r.store != nil {
			errs = append(errs, checkStore(p, r.store))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for name, c := range r.byRoute {
		if _, ok := r.routes[name]; !ok {
			return nil, fmt.Errorf("chat: an error handler (%s) names the unknown route %q", c[0].Type, name)
		}
	}
	if r.def == "" && len(r.routes) == 1 {
		for name := range r.routes {
			r.def = name
		}
	}
	concreteFirst := func(cs []chatimpl.CatchSpec) {
		sort.SliceStable(cs, func(i, j int) bool { return !cs[i].Interface && cs[j].Interface })
	}
	concreteFirst(r.global)
	for _, cs := range r.byRoute {
		concreteFirst(cs)
	}
	r.providers = mergeProviders(nil, pkgs)
	r.pkgs = slices.Clone(pkgs)
	return r, nil
}

// add adds the routes and error handlers of p.
func (r *Router) add(p *chatimpl.Package) error {
	if p == nil {
		return errors.New("chat: a nil *Package was passed to NewRouter")
	}
	var errs []error
	for _, check := range p.Checks() {
		if err := check(); err != nil {
			errs = append(errs, fmt.Errorf("chat: %s: %w", p.Path(), err))
		}
	}
	for _, pr := range p.Providers() {
		if _, ok := pr.Bean.(beanKey); !ok || pr.New == nil {
			errs = append(errs, fmt.Errorf("chat: %s provides %T, which is not a *chat.Bean with a constructor", p.Path(), pr.Bean))
		}
	}
	routes := p.Routes()
	for i := range routes {
		spec := &routes[i]
		if spec.Name == "" || spec.Handle == nil {
			errs = append(errs, fmt.Errorf("chat: a route of %s has no name or no Handle (name %q)", p.Path(), spec.Name))
			continue
		}
		if _, dup := r.routes[spec.Name]; dup {
			errs = append(errs, fmt.Errorf("chat: route %q is registered twice (again by %s)", spec.Name, p.Path()))
			continue
		}
		r.routes[spec.Name] = spec
		if spec.Default {
			if r.def != "" {
				errs = append(errs, fmt.Errorf("chat: routes %q and %q are both the default route", r.def, spec.Name))
				continue
			}
			r.def = spec.Name
		}
	}
	for _, c := range p.Catches() {
		if c.Handle == nil {
			errs = append(errs, fmt.Errorf("chat: an error handler (%s) of %s has no Handle", c.Type, p.Path()))
			continue
		}
		if c.Route == "" {
			r.global = append(r.global, c)
		} else {
			r.byRoute[c.Route] = append(r.byRoute[c.Route], c)
		}
	}
	return errors.Join(errs...)
}

// Routes returns the names of the routes, sorted.
func (r *Router) Routes() []string {
	names := make([]string, 0, len(r.routes))
	for n := range r.routes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Permits reports whether route is one of the router's routes and the
// principal p may use it: the route names no roles, or p has one of them
// (the check every request makes, which fails a refused one with
// Forbidden). Transports that list routes to a client, such as an MCP
// server's tool list, use it to list only those the client may call.
func (r *Router) Permits(p Principal, route string) bool {
	spec, ok := r.routes[route]
	return ok && (len(spec.Roles) == 0 || allowed(p, spec.Roles))
}

// DefaultRoute returns the default route, or "" when there is none.
func (r *Router) DefaultRoute() string { return r.def }

// Stats counts what a router holds now.
type Stats struct {
	Conversations int64 // conversations started and not yet ended
	Scopes        int64 // scopes started and not yet ended
}

// Stats returns the number of live conversations and scopes: after every
// client closed, both are zero.
func (r *Router) Stats() Stats {
	return Stats{Conversations: r.conversations.Load(), Scopes: r.scopes.Load()}
}

// Connect starts a conversation on route ("" means the default route).
// An unknown route, or "" without a default route, is an error matching
// [ErrRouteNotFound]. Transports call it for each new client session; the
// principal in ctx (see [WithPrincipal]) is kept for its requests. Roles
// are checked per request, as Quarkus does: connecting to a route the
// principal may not use succeeds, and its requests fail with Forbidden.
// A principal whose name is not valid UTF-8 is refused: the error
// matches [ErrForbidden] and [ErrInvalidPrincipal].
//
// With a [chatstore.ConversationStore] the new conversation is saved before Connect
// returns (a failing store is an error matching [ErrUnavailable]), and its
// [Conversation.ResumeToken] lets the client resume it.
func (r *Router) Connect(ctx context.Context, route string) (*Conversation, error) {
	if route == "" {
		route = r.def
	}
	if _, ok := r.routes[route]; !ok || route == "" {
		return nil, r.routeNotFound(route)
	}
	principal := PrincipalFrom(ctx)
	if f := checkPrincipal(principal); f != nil {
		return nil, f
	}
	bctx, err := begin(context.Background(), &BeginOptions{Logger: r.logger, Observer: r.observer}, r)
	if err != nil {
		return nil, err
	}
	c := &Conversation{conversation: conversation{router: r, stack: stackFrom(bctx), principal: principal}}
	top := c.stack.current.Load()
	top.route = route
	c.id = top.id
	r.conversations.Add(1)
	if r.store != nil {
		if err := r.connectDurable(ctx, c); err != nil {
			return nil, errors.Join(fail(ErrUnavailable, err), c.Close(context.WithoutCancel(ctx)))
		}
	}
	return c, nil
}

// run runs one route of a request (for [ExecuteRoute]), recovering panics.
func (r *Router) run(ctx context.Context, rs *requestState, name string) error {
	spec, err := r.check(ctx, name, r.routes[name])
	if err != nil {
		rs.noteFailure(name, err)
		return err
	}
	return r.call(ctx, rs, spec)
}

// check returns spec, the route called name (nil when there is none), if
// the principal in ctx may use it; otherwise a RouteNotFound or Forbidden
// failure.
func (r *Router) check(ctx context.Context, name string, spec *chatimpl.RouteSpec) (*chatimpl.RouteSpec, error) {
	if spec == nil || name == "" {
		return nil, r.routeNotFound(name)
	}
	if len(spec.Roles) > 0 && !allowed(PrincipalFrom(ctx), spec.Roles) {
		return nil, forbidden(spec)
	}
	return spec, nil
}

// routeNotFound is the RouteNotFound failure for name; its cause, an
// *UnknownRouteError, names the closest known route.
func (r *Router) routeNotFound(name string) error {
	return fail(ErrRouteNotFound, &UnknownRouteError{Route: name, Suggestion: closestName(name, r.Routes())})
}

func forbidden(spec *chatimpl.RouteSpec) error {
	return fail(ErrForbidden, fmt.Errorf("route %q needs one of the roles %v", spec.Name, spec.Roles))
}

// call runs a route, recovering panics, and notes which route an error
// came from.
func (r *Router) call(ctx context.Context, rs *requestState, spec *chatimpl.RouteSpec) (err error) {
	if rs.depth >= maxExecuteDepth {
		// A route executing itself, directly or not, would overflow the
		// stack, which kills the process instead of failing the request.
		err := fmt.Errorf("chat: route %q: routes executing routes nest more than %d deep", spec.Name, maxExecuteDepth)
		rs.noteFailure(spec.Name, err)
		return err
	}
	rs.depth++
	defer func() {
		rs.depth--
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
		if err != nil {
			rs.noteFailure(spec.Name, err)
		}
	}()
	return spec.Handle(ctx)
}

// maxExecuteDepth bounds how deeply [Execute] calls may nest in a request.
const maxExecuteDepth = 64

// noteFailure records that route returned err. The route an error came
// from keeps it when routes that executed it pass it on (wrapped or not);
// a new error is the returning route's own.
func (rs *requestState) noteFailure(route string, err error) {
	if f := rs.failure; f == nil || f.route == "" || !errors.Is(err, f.err) {
		rs.failure = &routeError{route: route, err: err}
	}
}

// A routeError is the error a request failed with and the route that
// returned it.
type routeError struct {
	route string
	err   error
}

// A PanicError is a panic recovered from a route, tool or handler.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// failedRoute returns the route the request's error came from, or
// fallback when no route returned one.
func (rs *requestState) failedRoute(fallback string) string {
	if rs.failure != nil && rs.failure.route != "" {
		return rs.failure.route
	}
	return fallback
}

// handleError offers err to the error handlers: those of the route that
// failed, then the global ones; within each, the handler of the error
// nearest the top of the chain wins. It returns nil when a handler handled
// the error, the handler's error when it failed, or err.
func (r *Router) handleError(ctx context.Context, rs *requestState, err error) error {
	links := errorChain(err)
	for _, group := range [][]chatimpl.CatchSpec{r.byRoute[rs.failedRoute("")], r.global} {
		for _, link := range links {
			for _, h := range group {
				handled, herr := callCatch(ctx, h, link)
				if handled {
					if herr != nil {
						return fmt.Errorf("error handler for %s failed: %w (handling: %v)", h.Type, herr, err)
					}
					return nil
				}
			}
		}
	}
	return err
}

func callCatch(ctx context.Context, h chatimpl.CatchSpec, err error) (handled bool, herr error) {
	defer func() {
		if v := recover(); v != nil {
			handled, herr = true, &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h.Handle(ctx, err)
}

// errorChain lists err and everything it wraps, depth first, outermost
// first.
func errorChain(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(out) > 64 {
			return
		}
		out = append(out, e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}
