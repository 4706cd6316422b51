package chat_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// draft is a durable bean: its exported state is saved with the
// conversation.
type draft struct {
	Name   string
	Damage int
	deps   string // set by the constructor, not saved
}

// scratch is a bean that is not durable: a resume builds it afresh.
type scratch struct{ N int }

// noteMemory is a chat memory kept in an InMemoryConversationStore, as an
// AI service's would be: its writes go through the request's context, so
// they are staged in the request's batch.
type noteMemory struct {
	store    *chat.InMemoryConversationStore
	id       string
	released *journal
}

func (m *noteMemory) ClearMemory(ctx context.Context) error {
	return m.store.PutMemory(ctx, m.id, nil)
}

func (m *noteMemory) DeleteMemory(ctx context.Context) error {
	return m.store.PutMemory(ctx, m.id, nil)
}

func (m *noteMemory) ReleaseMemory(context.Context) error {
	m.released.add("release " + m.id)
	return nil
}

// durableApp is an application with a menu route and a nested builder
// route holding a durable bean, a bean that is not durable and a memory.
type durableApp struct {
	store    *chat.InMemoryConversationStore
	draft    *chat.Bean[*draft]
	scratch  *chat.Bean[*scratch]
	journal  *journal
	pkg      *chatimpl.Package
	failSave *failingStore
	blocked  chan struct{} // "block" closes it…
	unblock  chan struct{} // …and waits for this
}

func newDurableApp(store *chat.InMemoryConversationStore) *durableApp {
	a := &durableApp{store: store, journal: &journal{}}
	a.draft = chat.NewBean("example.com/app.draft", &chat.BeanOptions{Durable: true}, func(ctx context.Context) (*draft, error) {
		return &draft{deps: "injected"}, nil
	})
	a.scratch = chat.NewBean("example.com/app.scratch", nil, func(ctx context.Context) (*scratch, error) {
		return &scratch{}, nil
	})
	a.pkg = chatimpl.NewPackage("example.com/app")
	a.pkg.AddRoute(asDefault(textRoute("menu", func(ctx context.Context, msg string) (string, error) {
		switch {
		case msg == "build":
			if err := chat.PushRoute(ctx, "builder"); err != nil {
				return "", err
			}
			return "building" + where(ctx), nil
		case strings.HasPrefix(msg, "note "):
			return "noted" + where(ctx), a.note(ctx, strings.TrimPrefix(msg, "note "))
		case msg == "wipe":
			return "wipe scheduled", chat.ScheduleWipe(ctx)
		case msg == "bye":
			return "", chat.End(ctx)
		case msg == "block":
			close(a.blocked)
			<-a.unblock
			return "unblocked", nil
		}
		return "menu:" + msg + where(ctx), nil
	})))
	a.pkg.AddRoute(textRoute("builder", func(ctx context.Context, msg string) (string, error) {
		d, err := a.draft.Lookup(ctx)
		if err != nil {
			return "", err
		}
		sc, err := a.scratch.Lookup(ctx)
		if err != nil {
			return "", err
		}
		sc.N++
		switch {
		case strings.HasPrefix(msg, "name "):
			d.Name = strings.TrimPrefix(msg, "name ")
		case strings.HasPrefix(msg, "damage "):
			d.Damage, _ = strconv.Atoi(strings.TrimPrefix(msg, "damage "))
		case strings.HasPrefix(msg, "note "):
			if err := a.note(ctx, strings.TrimPrefix(msg, "note ")); err != nil {
				return "", err
			}
		case msg == "fail":
			d.Name = "half-done"
			return "", errors.New("the builder broke")
		case msg == "done":
			if err := chat.Pop(ctx); err != nil {
				return "", err
			}
			return fmt.Sprintf("built %s/%d", d.Name, d.Damage) + where(ctx), nil
		}
		return fmt.Sprintf("draft %s/%d %s scratch %d", d.Name, d.Damage, d.deps, sc.N) + where(ctx), nil
	}))
	return a
}

// note appends text to the memory of the current scope, attaching it.
func (a *durableApp) note(ctx context.Context, text string) error {
	id, err := chat.ID(ctx)
	if err != nil {
		return err
	}
	key := id + "#notes"
	if _, err := chat.AttachMemory(ctx, key, &noteMemory{store: a.store, id: key, released: a.journal}); err != nil {
		return err
	}
	old, err := a.store.GetMemory(ctx, key)
	if err != nil {
		return err
	}
	return a.store.PutMemory(ctx, key, append(old, []byte(text+";")...))
}

// router returns a router of the app over the store (or over a failing
// wrapper of it, when a.failSave is set) named node.
func (a *durableApp) router(t *testing.T, node string, opts *chat.RouterOptions) *chat.Router {
	t.Helper()
	var o chat.RouterOptions
	if opts != nil {
		o = *opts
	}
	o.Store = a.store
	if a.failSave != nil {
		o.Store = a.failSave
	}
	o.Node = node
	r, err := chat.NewRouter(&o, a.pkg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// turn sends text on scope and returns the texts of the events and the
// scope after.
func turn(t *testing.T, c *chat.Conversation, scope, text string) ([]string, string, *chat.Failure) {
	t.Helper()
	var out []string
	after, f := c.Handle(bg, scope, chat.NewTextRequest(text), func(ev chat.Event) error {
		out = append(out, ev.Text())
		return nil
	})
	return out, after, f
}

// mustTurn is turn failing the test on a failure.
func mustTurn(t *testing.T, c *chat.Conversation, text string) []string {
	t.Helper()
	out, _, f := turn(t, c, c.ScopeID(), text)
	if f != nil {
		t.Fatalf("%q: %v", text, f)
	}
	return out
}

func wantStats(t *testing.T, r *chat.Router, conversations, scopes int64) {
	t.Helper()
	if got := r.Stats(); got != (chat.Stats{Conversations: conversations, Scopes: scopes}) {
		t.Fatalf("stats %+v, want %d conversations, %d scopes", got, conversations, scopes)
	}
}

func wantFailed(t *testing.T, err error, reason *chat.Failure) {
	t.Helper()
	if !errors.Is(err, reason) {
		t.Fatalf("error %v, want %s", err, reason.Reason)
	}
}

func TestDurableResumeOnAnotherRouter(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	ra := app.router(t, "a", nil)
	ctx := chat.WithPrincipal(bg, chat.User{ID: "ann"})
	c, err := ra.Connect(ctx, "")
	wantNoErr(t, err)
	id, token := c.ID(), c.ResumeToken()
	if id == "" || len(token) < 22 || id != c.ScopeID() {
		t.Fatalf("id %q token %q scope %q", id, token, c.ScopeID())
	}
	st, err := store.Load(bg, id)
	wantNoErr(t, err)
	if st.Version != 1 || st.Principal != "ann" || len(st.Scopes) != 1 || st.Scopes[0].Route != "menu" {
		t.Fatalf("state saved by Connect: %+v", st)
	}
	if strings.Contains(fmt.Sprint(st), token) {
		t.Fatal("the store holds the resume token in clear")
	}

	mustTurn(t, c, "note top")
	wantEvents(t, mustTurn(t, c, "build"), "building@1/builder")
	nested := c.ScopeID()
	mustTurn(t, c, "name sword")
	mustTurn(t, c, "note nested")
	wantEvents(t, mustTurn(t, c, "damage 7"), "draft sword/7 injected scratch 3@1/builder")
	st, _ = store.Load(bg, id)
	if st.Version != 6 {
		t.Fatalf("version %d after five requests, want 6 (one save per request)", st.Version)
	}

	// The connection is lost: the node lets go, the store keeps it all.
	wantNoErr(t, c.Detach(bg))
	wantStats(t, ra, 0, 0)
	if got := app.journal.take(); !slices.Equal(got, []string{"release " + nested + "#notes", "release " + id + "#notes"}) {
		t.Fatalf("memories released on detach: %q", got)
	}
	if _, _, f := turn(t, c, nested, "show"); !errors.Is(f, chat.ErrSessionNotActive) {
		t.Fatalf("a request on a detached conversation: %v", f)
	}

	// A router built from scratch (another process) resumes it.
	rb := app.router(t, "b", nil)
	c2, err := rb.Resume(ctx, id, token)
	wantNoErr(t, err)
	wantStats(t, rb, 1, 2)
	if c2.ID() != id || c2.ScopeID() != nested {
		t.Fatalf("resumed in scope %q of %q, want %q of %q", c2.ScopeID(), c2.ID(), nested, id)
	}
	if c2.ResumeToken() == token || c2.ResumeToken() == "" {
		t.Fatal("the resume token was not rotated")
	}
	// Same nested route, the durable bean as saved (its unsaved field from
	// the constructor), the other bean afresh.
	wantEvents(t, mustTurn(t, c2, "show"), "draft sword/7 injected scratch 1@1/builder")
	mustTurn(t, c2, "note again")
	if v, _ := store.GetMemory(bg, nested+"#notes"); string(v) != "nested;again;" {
		t.Fatalf("nested memory %q", v)
	}
	// Pop reaches the nested memory: the save that drops it deletes it.
	wantEvents(t, mustTurn(t, c2, "done"), "built sword/7@0/menu")
	if ids, _ := store.MemoryIDs(bg); !slices.Equal(ids, []string{id + "#notes"}) {
		t.Fatalf("memories after Pop: %q", ids)
	}
	// A wipe reaches the top memory, not used since the resume.
	mustTurn(t, c2, "wipe")
	if ids, _ := store.MemoryIDs(bg); len(ids) != 0 {
		t.Fatalf("memories after the wipe: %q", ids)
	}
	// The old token is refused once rotated.
	if _, err := rb.Resume(ctx, id, token); !errors.Is(err, chat.ErrResumeRefused) {
		t.Fatalf("resume with the old token: %v", err)
	}

	// Close ends the conversation and deletes it from the store.
	wantNoErr(t, c2.Close(bg))
	wantStats(t, rb, 0, 0)
	if _, err := store.Load(bg, id); !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("Load after Close: %v", err)
	}
}

func TestDurableResumeRefusals(t *testing.T) {
	clock := newFakeClock()
	store := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{TTL: time.Hour, Now: clock.Now})
	app := newDurableApp(store)
	ra := app.router(t, "a", nil)
	ann := chat.WithPrincipal(bg, chat.User{ID: "ann"})
	c, err := ra.Connect(ann, "")
	wantNoErr(t, err)
	id, token := c.ID(), c.ResumeToken()
	wantNoErr(t, c.Detach(bg))
	rb := app.router(t, "b", nil)

	tampered := []byte(token)
	tampered[3] ^= 1
	for name, tc := range map[string]struct {
		ctx       context.Context
		id, token string
	}{
		"tampered token":  {ann, id, string(tampered)},
		"empty token":     {ann, id, ""},
		"another user":    {chat.WithPrincipal(bg, chat.User{ID: "bob"}), id, token},
		"anonymous":       {bg, id, token},
		"unknown id":      {ann, "no-such-conversation", token},
		"another's token": {ann, "x" + id, token},
	} {
		if _, err := rb.Resume(tc.ctx, tc.id, tc.token); !errors.Is(err, chat.ErrResumeRefused) {
			t.Errorf("%s: %v, want ResumeRefused", name, err)
		}
	}
	wantStats(t, rb, 0, 0)
	// None of them used the token up or took the lease.
	clock.Advance(59 * time.Minute)
	c2, err := rb.Resume(ann, id, token)
	wantNoErr(t, err)
	token = c2.ResumeToken()
	wantNoErr(t, c2.Detach(bg))

	// An expired conversation is refused like an unknown one.
	clock.Advance(61 * time.Minute)
	if _, err := rb.Resume(ann, id, token); !errors.Is(err, chat.ErrResumeRefused) {
		t.Fatalf("resume of an expired conversation: %v", err)
	}
	wantStats(t, rb, 0, 0)

	// A router without a store resumes nothing.
	plain, err := chat.NewRouter(nil, app.pkg)
	wantNoErr(t, err)
	if _, err := plain.Resume(ann, id, token); !errors.Is(err, chat.ErrNotDurable) {
		t.Fatalf("Resume without a store: %v", err)
	}
}

func TestDurableLeaseHeldAndTakeover(t *testing.T) {
	clock := newFakeClock()
	store := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{Now: clock.Now})
	app := newDurableApp(store)
	ra := app.router(t, "a", nil)
	c, err := ra.Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "build")
	mustTurn(t, c, "name axe")
	id, token := c.ID(), c.ResumeToken()

	// Node a serves it: b may not take it.
	rb := app.router(t, "b", nil)
	_, err = rb.Resume(bg, id, token)
	wantFailed(t, err, chat.ErrConversationBusy)
	if !errors.Is(err, chatstore.ErrLeaseHeld) {
		t.Fatalf("busy error %v does not match ErrLeaseHeld", err)
	}
	wantStats(t, rb, 0, 0)

	// a's lease ends (a is stuck, say): b takes over.
	clock.Advance(30*time.Second + time.Second)
	cb, err := rb.Resume(bg, id, token)
	wantNoErr(t, err)
	wantEvents(t, mustTurn(t, cb, "damage 3"), "draft axe/3 injected scratch 1@1/builder")

	// a's late request runs on its stale state; its save is rejected, and
	// a lets go of the conversation without touching the store.
	_, after, f := turn(t, c, c.ScopeID(), "damage 99")
	if !errors.Is(f, chat.ErrSessionNotActive) || after != "" {
		t.Fatalf("late request on the old node: %q %v, want SessionNotActive", after, f)
	}
	wantStats(t, ra, 0, 0)
	wantNoErr(t, c.Close(bg)) // a late Disconnect: no effect on the store
	wantEvents(t, mustTurn(t, cb, "show"), "draft axe/3 injected scratch 2@1/builder")

	// b lets go (its client's connection dropped): a resumes at once.
	token = cb.ResumeToken()
	wantNoErr(t, cb.Detach(bg))
	ca, err := ra.Resume(bg, id, token)
	wantNoErr(t, err)
	wantEvents(t, mustTurn(t, ca, "show"), "draft axe/3 injected scratch 1@1/builder")
	wantNoErr(t, ca.Close(bg))
	wantStats(t, ra, 0, 0)
	wantStats(t, rb, 0, 0)
}

func TestDurableCloseAfterTakeoverKeepsTheStore(t *testing.T) {
	clock := newFakeClock()
	store := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{Now: clock.Now})
	app := newDurableApp(store)
	ra, rb := app.router(t, "a", nil), app.router(t, "b", nil)
	c, err := ra.Connect(bg, "")
	wantNoErr(t, err)
	clock.Advance(30*time.Second + time.Second)
	cb, err := rb.Resume(bg, c.ID(), c.ResumeToken())
	wantNoErr(t, err)
	// a's client disconnects late: a must not delete what b serves.
	wantNoErr(t, c.Close(bg))
	wantStats(t, ra, 0, 0)
	mustTurn(t, cb, "hello")
	wantNoErr(t, cb.Close(bg))
}

func TestDurableResumeOnTheSameRouterSupersedesTheOldSession(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	r := app.router(t, "a", nil)
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "build")
	// The client reconnects before the server noticed the old connection
	// died: the new session takes the conversation from the old one.
	c2, err := r.Resume(bg, c.ID(), c.ResumeToken())
	wantNoErr(t, err)
	wantStats(t, r, 1, 2)
	if _, _, f := turn(t, c, c2.ScopeID(), "show"); !errors.Is(f, chat.ErrSessionNotActive) {
		t.Fatalf("the old session still serves: %v", f)
	}
	mustTurn(t, c2, "show")
	wantNoErr(t, c.Close(bg)) // the old connection is finally found dead
	mustTurn(t, c2, "show")
	wantNoErr(t, c2.Close(bg))
	wantStats(t, r, 0, 0)
}

// failingStore is a store whose saves fail while failing is set, the way a
// store that cannot be reached fails.
type failingStore struct {
	*chat.InMemoryConversationStore
	mu      sync.Mutex
	failing bool
}

var errStoreDown = errors.New("store down")

func (s *failingStore) setFailing(v bool) {
	s.mu.Lock()
	s.failing = v
	s.mu.Unlock()
}

func (s *failingStore) Save(ctx context.Context, st *chatstore.ConversationState, l chatstore.Lease, b *chatstore.Batch) error {
	s.mu.Lock()
	failing := s.failing
	s.mu.Unlock()
	if failing {
		return errStoreDown
	}
	return s.InMemoryConversationStore.Save(ctx, st, l, b)
}

func TestDurableFailedSaveRollsBack(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	app.failSave = &failingStore{InMemoryConversationStore: store}
	lc := &logCapture{}
	r := app.router(t, "a", &chat.RouterOptions{Logger: lc.logger()})
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "build")
	nested := c.ScopeID()
	mustTurn(t, c, "name mace")
	mustTurn(t, c, "note kept")

	app.failSave.setFailing(true)
	// The request ran (its events went out) but its state was not saved:
	// it fails with Unavailable, in the scope it started from, and none of
	// its writes were kept.
	mustTurnFails := func(text string) {
		t.Helper()
		_, after, f := turn(t, c, c.ScopeID(), text)
		if !errors.Is(f, chat.ErrUnavailable) || after != nested || c.ScopeID() != nested {
			t.Fatalf("%q with the store down: %q %v (scope %q), want Unavailable in %q", text, after, f, c.ScopeID(), nested)
		}
		if !errors.Is(f, errStoreDown) {
			t.Fatalf("the failure's cause %v is not the store's error", f.Err)
		}
	}
	mustTurnFails("damage 5")
	mustTurnFails("note lost")
	mustTurnFails("done")
	wantStats(t, r, 1, 2)
	if v, _ := store.GetMemory(bg, nested+"#notes"); string(v) != "kept;" {
		t.Fatalf("memory after failed saves: %q", v)
	}
	if !strings.Contains(lc.String(), "rolled back") {
		t.Fatalf("the rollback was not logged:\n%s", lc.String())
	}

	// The store is back: the conversation goes on from its saved state.
	app.failSave.setFailing(false)
	wantEvents(t, mustTurn(t, c, "show"), "draft mace/0 injected scratch 1@1/builder")
	mustTurn(t, c, "note later")
	if v, _ := store.GetMemory(bg, nested+"#notes"); string(v) != "kept;later;" {
		t.Fatalf("memory after the store came back: %q", v)
	}
	wantNoErr(t, c.Close(bg))
	wantStats(t, r, 0, 0)
}

func TestDurableRouteFailureIsSaved(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	r := app.router(t, "a", &chat.RouterOptions{Logger: (&logCapture{}).logger()})
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "build")
	// A failed request completes (with Failed): what it changed is saved,
	// as it stays in this process.
	if _, _, f := turn(t, c, c.ScopeID(), "fail"); !errors.Is(f, chat.ErrServerError) {
		t.Fatalf("failing route: %v", f)
	}
	if _, err := app.router(t, "b", nil).Resume(bg, c.ID(), c.ResumeToken()); err == nil {
		t.Fatal("resumed a conversation node a serves")
	}
	wantNoErr(t, c.Detach(bg))
	cb, err := app.router(t, "b", nil).Resume(bg, c.ID(), c.ResumeToken())
	wantNoErr(t, err)
	wantEvents(t, mustTurn(t, cb, "show"), "draft half-done/0 injected scratch 1@1/builder")
	wantNoErr(t, cb.Close(bg))
}

func TestDurableEndedConversationIsDeleted(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	r := app.router(t, "a", nil)
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "note x")
	if _, after, f := turn(t, c, c.ScopeID(), "bye"); after != "" || !errors.Is(f, chat.ErrSessionNotActive) {
		t.Fatalf("bye: %q %v", after, f)
	}
	wantStats(t, r, 0, 0)
	if ids, _ := store.ConversationIDs(bg); len(ids) != 0 {
		t.Fatalf("conversations after the route ended one: %q", ids)
	}
	if ids, _ := store.MemoryIDs(bg); len(ids) != 0 {
		t.Fatalf("memories after the route ended the conversation: %q", ids)
	}
	wantNoErr(t, c.Close(bg))
}

func TestDurableObserverEvents(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	var mu sync.Mutex
	var evs []string
	obs := func(_ context.Context, ev chat.ScopeEvent) {
		mu.Lock()
		evs = append(evs, fmt.Sprintf("%s@%d", ev.Kind, ev.Depth))
		mu.Unlock()
	}
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := evs
		evs = nil
		return out
	}
	r := app.router(t, "a", &chat.RouterOptions{Observer: obs})
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "build")
	take()
	wantNoErr(t, c.Detach(bg))
	wantEvents(t, take(), "Deactivated@1", "Detached@1", "Detached@0")
	c, err = r.Resume(bg, c.ID(), c.ResumeToken())
	wantNoErr(t, err)
	wantEvents(t, take(), "Resumed@0", "Resumed@1", "Activated@1")
	wantNoErr(t, c.Close(bg))
	wantEvents(t, take(), "Deactivated@1", "Ended@1", "Ended@0")
}

func TestDurableExtra(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	r := app.router(t, "a", nil)
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	n := 0
	c.SetExtra("test", func(scope string, f *chat.Failure) []byte {
		n++
		return fmt.Appendf(nil, "%d %v", n, f != nil)
	})
	mustTurn(t, c, "hi")
	mustTurn(t, c, "hi")
	wantNoErr(t, c.Detach(bg))
	c2, err := r.Resume(bg, c.ID(), c.ResumeToken())
	wantNoErr(t, err)
	if got := string(c2.Extra("test")); got != "2 false" {
		t.Fatalf("extra after resume: %q", got)
	}
	wantNoErr(t, c2.Close(bg))
}

// signalStore tells on which node acquires a lease.
type signalStore struct {
	*chat.InMemoryConversationStore
	acquired chan string
}

func (s *signalStore) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (chatstore.Lease, error) {
	l, err := s.InMemoryConversationStore.Acquire(ctx, id, owner, ttl)
	if err == nil {
		select {
		case s.acquired <- owner:
		default: // the test is not listening
		}
	}
	return l, err
}

func TestDurableLeaseIsRenewedDuringALongRequest(t *testing.T) {
	clock := newFakeClock()
	inner := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{Now: clock.Now})
	store := &signalStore{InMemoryConversationStore: inner, acquired: make(chan string, 64)}
	app := newDurableApp(inner)
	app.blocked, app.unblock = make(chan struct{}), make(chan struct{})
	const ttl = 30 * time.Millisecond
	ra, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: "a", LeaseTTL: ttl}, app.pkg)
	wantNoErr(t, err)
	c, err := ra.Connect(bg, "")
	wantNoErr(t, err)
	if got := recv(t, store.acquired, "the lease of Connect"); got != "a" {
		t.Fatalf("Connect's lease went to %q", got)
	}
	done := make(chan error, 1)
	go func() {
		_, _, f := turn(t, c, c.ScopeID(), "block")
		if f != nil {
			done <- f
			return
		}
		done <- nil
	}()
	<-app.blocked
	// The request runs for several lease times (by the store's clock): a
	// keeps renewing its lease, and b cannot take the conversation over.
	for range 4 {
		clock.Advance(ttl * 9 / 10)
		for len(store.acquired) > 0 {
			<-store.acquired
		}
		if got := recv(t, store.acquired, "a renewal"); got != "a" {
			t.Fatalf("the lease went to %q", got)
		}
	}
	rb, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: "b"}, app.pkg)
	wantNoErr(t, err)
	if _, err := rb.Resume(bg, c.ID(), c.ResumeToken()); !errors.Is(err, chat.ErrConversationBusy) {
		t.Fatalf("resume during a long request: %v, want ConversationBusy", err)
	}
	close(app.unblock)
	if err := recv(t, done, "the long request"); err != nil {
		t.Fatalf("the long request's save failed: %v", err)
	}
	wantNoErr(t, c.Close(bg))
}

func TestDurableBeanThatNoLongerDecodes(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	r := app.router(t, "a", &chat.RouterOptions{Logger: (&logCapture{}).logger()})
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "build")
	mustTurn(t, c, "name bow")
	id, token := c.ID(), c.ResumeToken()
	wantNoErr(t, c.Detach(bg))

	// A new version of the application changed the bean's type: the
	// saved state no longer decodes.
	st, err := store.Load(bg, id)
	wantNoErr(t, err)
	st.Scopes[1].Beans["example.com/app.draft"] = []byte(`{"Damage":"high"}`)
	l := mustAcquire(t, store, id, "migration")
	wantNoErr(t, store.Save(bg, st, l, nil))
	wantNoErr(t, store.Release(bg, id, l))

	c, err = r.Resume(bg, id, token)
	wantNoErr(t, err)
	_, _, f := turn(t, c, c.ScopeID(), "show")
	if !errors.Is(f, chat.ErrServerError) || !strings.Contains(f.Err.Error(), "restoring its saved state") {
		t.Fatalf("a bean that does not decode: %v", f)
	}
	var be *chat.BeanError
	if !errors.As(f, &be) || be.Bean != "example.com/app.draft" {
		t.Fatalf("the failure does not name the bean: %v", f)
	}
	// Its saved state is kept, not replaced by a fresh bean.
	st, _ = store.Load(bg, id)
	if got := string(st.Scopes[1].Beans["example.com/app.draft"]); got != `{"Damage":"high"}` {
		t.Fatalf("saved state after the failure: %s", got)
	}
	wantNoErr(t, c.Close(bg))
}

func TestDurablePerChatBean(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	tally := chat.NewBean("example.com/app.tally", &chat.BeanOptions{Kind: chat.KindPerChat, Durable: true}, func(context.Context) (*scratch, error) {
		return &scratch{}, nil
	})
	if !tally.Durable() || chat.NewBean("x", &chat.BeanOptions{Kind: chat.KindInvocation, Durable: true}, func(context.Context) (*scratch, error) { return nil, nil }).Durable() {
		t.Fatal("Durable: per-chat beans may be durable, invocation beans may not")
	}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(asDefault(textRoute("count", func(ctx context.Context, msg string) (string, error) {
		if msg == "push" {
			return "pushed", chat.Push(ctx)
		}
		t, err := tally.Lookup(ctx)
		if err != nil {
			return "", err
		}
		t.N++
		return fmt.Sprint(t.N, where(ctx)), nil
	})))
	newRouter := func() *chat.Router {
		r, err := chat.NewRouter(&chat.RouterOptions{Store: store}, p)
		wantNoErr(t, err)
		return r
	}
	c, err := newRouter().Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "count")
	mustTurn(t, c, "count")
	mustTurn(t, c, "push")
	wantEvents(t, mustTurn(t, c, "count"), "1@1/count")
	wantNoErr(t, c.Detach(bg))
	c, err = newRouter().Resume(bg, c.ID(), c.ResumeToken())
	wantNoErr(t, err)
	wantEvents(t, mustTurn(t, c, "count"), "2@1/count")
	if _, _, f := turn(t, c, c.ID(), "count"); f != nil { // pops back to the top scope
		t.Fatal(f)
	}
	wantEvents(t, mustTurn(t, c, "count"), "4@0/count")
	wantNoErr(t, c.Close(bg))
}
