package chat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// A scopeStack is the stack of scopes of one conversation. Its current
// scope changes with Push, Pop and End; the scopes below the current one
// are its parents. (A [Conversation] is a router's session: it owns one.)
type scopeStack struct {
	mu       sync.Mutex // serialises structural changes and bean creation
	current  atomic.Pointer[scope]
	observer Observer // nil for none
	logger   *slog.Logger
	router   *Router // the router that started it, or nil
	// wipes is set when a scope's wipe flag is set, and cleared when the
	// flags are reset at the end of a request: requests that schedule no
	// wipe skip that step. Changed with mu held.
	wipes atomic.Bool
}

// A scope is one level of a scope stack.
type scope struct {
	stack  *scopeStack
	parent *scope
	id     string
	depth  int

	// beans is replaced, never mutated, so lookups need no lock.
	beans atomic.Pointer[[]beanEntry]

	// Guarded by stack.mu.
	route    string
	memories []memoryEntry
	wipe     bool // a memory wipe is scheduled for the end of the request
	ended    bool
	// pending holds the saved state of the durable beans of a scope
	// restored from a store, by bean name, until each is first used.
	pending map[string][]byte
}

// BeginOptions configures a conversation started with [Begin]. A nil
// *BeginOptions, like the zero value, gives the defaults.
type BeginOptions struct {
	// Logger logs the errors that have no caller to return to (a bean's
	// Close failing at the end of an invocation, for example). Nil means
	// [slog.Default].
	Logger *slog.Logger
	// Observer, when not nil, is told about the conversation's scope
	// lifecycle.
	Observer Observer
}

// cloneWithDefaults returns a copy of opts with the defaults filled in.
func (opts *BeginOptions) cloneWithDefaults() *BeginOptions {
	var o BeginOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &o
}

// Begin starts a conversation and returns a context carrying it, with a new
// top scope as its current scope. opts may be nil. It fails with
// [ErrActive] when ctx already carries an active conversation.
func Begin(ctx context.Context, opts *BeginOptions) (context.Context, error) {
	return begin(ctx, opts, nil)
}

// begin is Begin for a conversation started by router (nil for none).
func begin(ctx context.Context, opts *BeginOptions, router *Router) (context.Context, error) {
	if st := stackFrom(ctx); st != nil && st.current.Load() != nil {
		return ctx, ErrActive
	}
	opts = opts.cloneWithDefaults()
	st := &scopeStack{logger: opts.Logger, observer: opts.Observer, router: router}
	s := st.newScope(nil, "")
	st.current.Store(s)
	ctx = rebind(ctx, func(b *binding) { b.stack = st })
	st.notify(ctx, ScopeStarted, s)
	st.notify(ctx, ScopeActivated, s)
	return ctx, nil
}

// Push starts a nested scope that keeps the current route. Chat-scoped beans
// of the enclosing scopes stay visible in it; per-chat beans do not.
func Push(ctx context.Context) error {
	return push(ctx, "", false)
}

// PushRoute starts a nested scope whose current route is route. In a
// conversation of a [Router], a route the router does not serve is an
// error (an [*UnknownRouteError] naming the closest known route) and no
// scope is started: the conversation stays on its current route.
func PushRoute(ctx context.Context, route string) error {
	return push(ctx, route, true)
}

func push(ctx context.Context, route string, setRoute bool) error {
	st, parent, err := lockCurrent(ctx, "push")
	if err != nil {
		return err
	}
	if !setRoute {
		route = parent.route
	} else if st.router != nil {
		if err := st.router.knownRoute(route); err != nil {
			st.mu.Unlock()
			return err
		}
	}
	child := st.newScope(parent, route)
	st.current.Store(child)
	st.mu.Unlock()
	st.notify(ctx, ScopeDeactivated, parent)
	st.notify(ctx, ScopeStarted, child)
	st.notify(ctx, ScopeActivated, child)
	return nil
}

// Pop destroys the current scope (its beans, then its chat memory) and makes
// its parent current again, with the parent's own remembered route. Popping
// the top scope ends the conversation. The error joins the errors of the
// beans' Close methods and memory cleanups; the scope is gone either way.
func Pop(ctx context.Context) error {
	st, s, err := lockCurrent(ctx, "pop")
	if err != nil {
		return err
	}
	s.ended = true
	st.current.Store(s.parent)
	st.mu.Unlock()

	st.notify(ctx, ScopeDeactivated, s)
	err = s.destroy(ctx)
	st.notify(ctx, ScopeEnded, s)
	if s.parent != nil {
		st.notify(ctx, ScopeActivated, s.parent)
	}
	return err
}

// End ends the whole conversation: every scope is destroyed, innermost
// first. The error joins the errors of the beans' Close methods and memory
// cleanups; the conversation is over either way.
func End(ctx context.Context) error {
	st, top, err := lockCurrent(ctx, "end")
	if err != nil {
		return err
	}
	for s := top; s != nil; s = s.parent {
		s.ended = true
	}
	st.current.Store(nil)
	st.mu.Unlock()

	st.notify(ctx, ScopeDeactivated, top)
	var errs []error
	for s := top; s != nil; s = s.parent {
		errs = append(errs, s.destroy(ctx))
		st.notify(ctx, ScopeEnded, s)
	}
	return errors.Join(errs...)
}

// ID returns the id of the current scope: random and unguessable, it names
// the scope to clients.
func ID(ctx context.Context) (string, error) {
	s := currentScope(ctx)
	if s == nil {
		return "", notActive("id")
	}
	return s.id, nil
}

// Active reports whether ctx carries a conversation with a current scope.
func Active(ctx context.Context) bool {
	return currentScope(ctx) != nil
}

// Depth returns how deeply the current scope is nested: 0 for a top scope.
func Depth(ctx context.Context) (int, error) {
	s := currentScope(ctx)
	if s == nil {
		return 0, notActive("depth")
	}
	return s.depth, nil
}

func currentScope(ctx context.Context) *scope {
	if st := stackFrom(ctx); st != nil {
		return st.current.Load()
	}
	return nil
}

func (st *scopeStack) newScope(parent *scope, route string) *scope {
	s := &scope{stack: st, parent: parent, id: uuid.NewString(), route: route}
	if parent != nil {
		s.depth = parent.depth + 1
	}
	return s
}

func (st *scopeStack) notify(ctx context.Context, kind ScopeEventKind, s *scope) {
	if st.router != nil {
		switch kind {
		case ScopeStarted, ScopeResumed:
			st.router.scopes.Add(1)
		case ScopeEnded, ScopeDetached:
			st.router.scopes.Add(-1)
		}
	}
	if st.observer == nil {
		return
	}
	ev := ScopeEvent{Kind: kind, ScopeID: s.id, Depth: s.depth}
	if s.parent != nil {
		ev.ParentID = s.parent.id
	}
	st.observe(ctx, ev)
}

// observe calls the observer, recovering its panic: a broken observer must
// not take the scope machinery (or a server) down with it.
func (st *scopeStack) observe(ctx context.Context, ev ScopeEvent) {
	defer func() {
		if r := recover(); r != nil {
			st.logger.ErrorContext(ctx, "chat: a scope observer panicked", "event", ev.Kind.String(), "scope", ev.ScopeID, "panic", r)
		}
	}()
	st.observer(ctx, ev)
}

// destroy closes the beans of an ended scope, newest first (then those of
// its saved durable beans not used since it was restored), then deletes
// its chat memories, newest first. It must be called once, after s.ended
// was set.
func (s *scope) destroy(ctx context.Context) error {
	// Cleanup must finish even when the request that ends the scope was
	// cancelled: a memory left in its store would never be deleted.
	ctx = context.WithoutCancel(ctx)
	s.stack.mu.Lock()
	beans := s.beans.Swap(nil)
	memories := s.memories
	pending := s.pending
	s.memories = nil
	s.pending = nil
	s.stack.mu.Unlock()

	var errs []error
	if beans != nil {
		errs = append(errs, closeBeans(*beans))
	}
	if len(pending) > 0 {
		errs = append(errs, s.closePending(ctx, pending))
	}
	for i := len(memories) - 1; i >= 0; i-- {
		m := memories[i]
		errs = append(errs, callCleanup(ctx, func(ctx context.Context) error {
			if err := m.mem.DeleteMemory(ctx); err != nil {
				return fmt.Errorf("deleting memory %s: %w", m.key, err)
			}
			return nil
		}))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("chat: destroying scope %s: %w", s.id, err)
	}
	return nil
}

func callCleanup(ctx context.Context, fn func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cleanup panicked: %v", r)
		}
	}()
	return fn(ctx)
}

// lockCurrent locks the scope stack in ctx and returns it with its current
// scope; the caller unlocks st.mu. Without an active scope it returns the
// notActive error of op, with nothing locked.
func lockCurrent(ctx context.Context, op string) (*scopeStack, *scope, error) {
	st := stackFrom(ctx)
	if st == nil {
		return nil, nil, notActive(op)
	}
	st.mu.Lock()
	s := st.current.Load()
	if s == nil {
		st.mu.Unlock()
		return nil, nil, notActive(op)
	}
	return st, s, nil
}
