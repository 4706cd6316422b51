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

// A conversation is one stack of scopes. Its current scope changes with
// Push, Pop and End; the scopes below the current one are its parents.
type conversation struct {
	mu       sync.Mutex // serialises structural changes and bean creation
	current  atomic.Pointer[scope]
	observer Observer // nil for none
	logger   *slog.Logger
	router   *Router // the router that started it, or nil
}

// A scope is one level of a conversation.
type scope struct {
	conv   *conversation
	parent *scope
	id     string
	depth  int

	// beans is replaced, never mutated, so lookups need no lock.
	beans atomic.Pointer[[]beanEntry]

	// Guarded by conv.mu.
	route    string
	cleanups []func(context.Context) error
	memories []memoryEntry
	wipe     bool // a memory wipe is scheduled for the end of the request
	ended    bool
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
	if c := conversationFrom(ctx); c != nil && c.current.Load() != nil {
		return ctx, ErrActive
	}
	opts = opts.cloneWithDefaults()
	c := &conversation{logger: opts.Logger, observer: opts.Observer, router: router}
	s := c.newScope(nil, "")
	c.current.Store(s)
	ctx = rebind(ctx, func(b *binding) { b.conv = c })
	c.notify(ctx, ScopeStarted, s)
	c.notify(ctx, ScopeActivated, s)
	return ctx, nil
}

// Push starts a nested scope that keeps the current route. Chat-scoped beans
// of the enclosing scopes stay visible in it; per-chat beans do not.
func Push(ctx context.Context) error {
	return push(ctx, "", false)
}

// PushRoute starts a nested scope whose current route is route.
func PushRoute(ctx context.Context, route string) error {
	return push(ctx, route, true)
}

func push(ctx context.Context, route string, setRoute bool) error {
	c := conversationFrom(ctx)
	if c == nil {
		return notActive("push")
	}
	c.mu.Lock()
	parent := c.current.Load()
	if parent == nil {
		c.mu.Unlock()
		return notActive("push")
	}
	if !setRoute {
		route = parent.route
	}
	child := c.newScope(parent, route)
	c.current.Store(child)
	c.mu.Unlock()
	c.notify(ctx, ScopeDeactivated, parent)
	c.notify(ctx, ScopeStarted, child)
	c.notify(ctx, ScopeActivated, child)
	return nil
}

// Pop destroys the current scope (its beans, then its chat memory) and makes
// its parent current again, with the parent's own remembered route. Popping
// the top scope ends the conversation. The error joins the errors of the
// beans' Close methods and memory cleanups; the scope is gone either way.
func Pop(ctx context.Context) error {
	c := conversationFrom(ctx)
	if c == nil {
		return notActive("pop")
	}
	c.mu.Lock()
	s := c.current.Load()
	if s == nil {
		c.mu.Unlock()
		return notActive("pop")
	}
	s.ended = true
	c.current.Store(s.parent)
	c.mu.Unlock()

	c.notify(ctx, ScopeDeactivated, s)
	err := s.destroy(ctx)
	c.notify(ctx, ScopeEnded, s)
	if s.parent != nil {
		c.notify(ctx, ScopeActivated, s.parent)
	}
	return err
}

// End ends the whole conversation: every scope is destroyed, innermost
// first. The error joins the errors of the beans' Close methods and memory
// cleanups; the conversation is over either way.
func End(ctx context.Context) error {
	c := conversationFrom(ctx)
	if c == nil {
		return notActive("end")
	}
	c.mu.Lock()
	top := c.current.Load()
	if top == nil {
		c.mu.Unlock()
		return notActive("end")
	}
	for s := top; s != nil; s = s.parent {
		s.ended = true
	}
	c.current.Store(nil)
	c.mu.Unlock()

	c.notify(ctx, ScopeDeactivated, top)
	var errs []error
	for s := top; s != nil; s = s.parent {
		errs = append(errs, s.destroy(ctx))
		c.notify(ctx, ScopeEnded, s)
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
	if c := conversationFrom(ctx); c != nil {
		return c.current.Load()
	}
	return nil
}

func (c *conversation) newScope(parent *scope, route string) *scope {
	s := &scope{conv: c, parent: parent, id: uuid.NewString(), route: route}
	if parent != nil {
		s.depth = parent.depth + 1
	}
	return s
}

func (c *conversation) notify(ctx context.Context, kind ScopeEventKind, s *scope) {
	if c.router != nil {
		switch kind {
		case ScopeStarted:
			c.router.scopes.Add(1)
		case ScopeEnded:
			c.router.scopes.Add(-1)
		}
	}
	if c.observer == nil {
		return
	}
	ev := ScopeEvent{Kind: kind, ScopeID: s.id, Depth: s.depth}
	if s.parent != nil {
		ev.ParentID = s.parent.id
	}
	c.observe(ctx, ev)
}

// observe calls the observer, recovering its panic: a broken observer must
// not take the scope machinery (or a server) down with it.
func (c *conversation) observe(ctx context.Context, ev ScopeEvent) {
	defer func() {
		if r := recover(); r != nil {
			c.logger.ErrorContext(ctx, "chat: a scope observer panicked", "event", ev.Kind.String(), "scope", ev.ScopeID, "panic", r)
		}
	}()
	c.observer(ctx, ev)
}

// onDestroy registers fn to run when s is destroyed, after its beans are
// closed. It reports false, without registering, when s has already ended.
func (s *scope) onDestroy(fn func(context.Context) error) bool {
	s.conv.mu.Lock()
	defer s.conv.mu.Unlock()
	if s.ended {
		return false
	}
	s.cleanups = append(s.cleanups, fn)
	return true
}

// destroy closes the beans of an ended scope, newest first, then runs its
// cleanups, newest first. It must be called once, after s.ended was set.
func (s *scope) destroy(ctx context.Context) error {
	// Cleanup must finish even when the request that ends the scope was
	// cancelled: a memory left in its store would never be deleted.
	ctx = context.WithoutCancel(ctx)
	s.conv.mu.Lock()
	beans := s.beans.Swap(nil)
	cleanups := s.cleanups
	memories := s.memories
	s.cleanups, s.memories = nil, nil
	s.conv.mu.Unlock()

	var errs []error
	if beans != nil {
		errs = append(errs, closeBeans(*beans))
	}
	for i := len(memories) - 1; i >= 0; i-- {
		m := memories[i]
		errs = append(errs, callCleanup(ctx, func(ctx context.Context) error {
			if err := m.owner.DeleteMemory(ctx); err != nil {
				return fmt.Errorf("deleting memory %s: %w", m.key, err)
			}
			return nil
		}))
	}
	for i := len(cleanups) - 1; i >= 0; i-- {
		errs = append(errs, callCleanup(ctx, cleanups[i]))
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

// lockCurrent locks the conversation in ctx and returns it with its current
// scope; the caller unlocks c.mu. Without an active scope it returns the
// notActive error of op, with nothing locked.
func lockCurrent(ctx context.Context, op string) (*conversation, *scope, error) {
	c := conversationFrom(ctx)
	if c == nil {
		return nil, nil, notActive(op)
	}
	c.mu.Lock()
	s := c.current.Load()
	if s == nil {
		c.mu.Unlock()
		return nil, nil, notActive(op)
	}
	return c, s, nil
}
