package chat_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// handoverStore holds back one call of the old session's teardown (hold:
// "Release" or "Delete") until a call of the resume (after: "Acquire" or
// "Save") has run, forcing the interleaving in which a late teardown undoes
// what the resume did. A router that serialises the two never makes that
// call while the teardown is held: the held call then goes on after grace,
// and the test checks the outcome, never the time.
type handoverStore struct {
	*chat.InMemoryConversationStore
	hold, after string
	held        chan struct{} // closed when the held call starts
	done        chan struct{} // closed when the after call ran, once held
	heldOnce    sync.Once
	doneOnce    sync.Once
}

// grace is how long the held call waits for the resume's call: long, so
// that a loaded machine still makes the interleaving the test is about.
const grace = time.Second

func newHandoverStore(hold, after string) *handoverStore {
	return &handoverStore{
		InMemoryConversationStore: chat.NewInMemoryConversationStore(nil),
		hold:                      hold,
		after:                     after,
		held:                      make(chan struct{}),
		done:                      make(chan struct{}),
	}
}

func (s *handoverStore) holdBack(call string) {
	if call != s.hold {
		return
	}
	first := false
	s.heldOnce.Do(func() { first = true; close(s.held) })
	if !first {
		return
	}
	select {
	case <-s.done:
	case <-time.After(grace):
	}
}

func (s *handoverStore) ran(call string) {
	if call != s.after {
		return
	}
	select {
	case <-s.held:
		s.doneOnce.Do(func() { close(s.done) })
	default:
	}
}

func (s *handoverStore) Acquire(ctx context.Context, id, owner string, ttl time.Duration) (chatstore.Lease, error) {
	l, err := s.InMemoryConversationStore.Acquire(ctx, id, owner, ttl)
	s.ran("Acquire")
	return l, err
}

func (s *handoverStore) Save(ctx context.Context, st *chatstore.ConversationState, l chatstore.Lease, b *chatstore.Batch) error {
	err := s.InMemoryConversationStore.Save(ctx, st, l, b)
	s.ran("Save")
	return err
}

func (s *handoverStore) Release(ctx context.Context, id string, l chatstore.Lease) error {
	s.holdBack("Release")
	return s.InMemoryConversationStore.Release(ctx, id, l)
}

func (s *handoverStore) Delete(ctx context.Context, id string) error {
	s.holdBack("Delete")
	return s.InMemoryConversationStore.Delete(ctx, id)
}

// handoverRouter returns a router, node "a", of app over store.
func handoverRouter(t *testing.T, app *durableApp, store *handoverStore) *chat.Router {
	t.Helper()
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: "a"}, app.pkg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The client reconnects to the same node while the node tears down its old
// connection: the old session's lease release must not take the lease the
// resumed session holds (the store renews the same node's lease with the
// same token).
func TestDurableResumeRacingDetachOnTheSameRouter(t *testing.T) {
	store := newHandoverStore("Release", "Acquire")
	app := newDurableApp(store.InMemoryConversationStore)
	r := handoverRouter(t, app, store)
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "build")
	id, tok := c.ID(), c.ResumeToken()

	detached := make(chan error, 1)
	go func() { detached <- c.Detach(bg) }()
	<-store.held // the old session is releasing its lease
	c2, err := r.Resume(bg, id, tok)
	wantNoErr(t, err)
	wantNoErr(t, <-detached)

	// The resumed session holds the current lease: its requests save.
	mustTurn(t, c2, "name sword")
	wantStats(t, r, 1, 2)
	// And another node cannot take it over.
	rb, err := chat.NewRouter(&chat.RouterOptions{Store: store.InMemoryConversationStore, Node: "b"}, app.pkg)
	wantNoErr(t, err)
	_, err = rb.Resume(bg, id, c2.ResumeToken())
	wantFailed(t, err, chat.ErrConversationBusy)
	wantNoErr(t, c2.Close(bg))
	wantStats(t, r, 0, 0)
}

// The client closes its session while resuming it on the same node (a late
// Close of the old connection): either the close wins and the resume is
// refused, or the resume wins and the conversation lives on — never a
// resumed session over a deleted conversation.
func TestDurableResumeRacingCloseOnTheSameRouter(t *testing.T) {
	store := newHandoverStore("Delete", "Save")
	app := newDurableApp(store.InMemoryConversationStore)
	r := handoverRouter(t, app, store)
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "build")
	id, tok := c.ID(), c.ResumeToken()

	closed := make(chan error, 1)
	go func() { closed <- c.Close(bg) }()
	<-store.held // the old session is deleting the conversation
	c2, err := r.Resume(bg, id, tok)
	wantNoErr(t, <-closed)
	if err != nil {
		// The close won: the conversation is gone.
		wantFailed(t, err, chat.ErrResumeRefused)
		wantStats(t, r, 0, 0)
		return
	}
	if _, _, f := turn(t, c2, c2.ScopeID(), "show"); f != nil {
		t.Fatalf("the resumed session serves a deleted conversation: %v", f)
	}
	wantNoErr(t, c2.Close(bg))
	wantStats(t, r, 0, 0)
}

// Many reconnects racing the teardown of the old connection, unforced: the
// last session always serves, and nothing leaks.
func TestDurableResumeRacingDetachMany(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	r := app.router(t, "a", nil)
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	for i := range 50 {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Detach(bg); err != nil {
				t.Error(err)
			}
		}()
		c2, err := r.Resume(bg, c.ID(), c.ResumeToken())
		wg.Wait()
		if err != nil {
			t.Fatalf("resume %d: %v", i, err)
		}
		if _, _, f := turn(t, c2, c2.ScopeID(), "show"); f != nil {
			t.Fatalf("turn after resume %d: %v", i, f)
		}
		c = c2
	}
	wantStats(t, r, 1, 1)
	if err := c.Close(bg); err != nil {
		t.Fatal(err)
	}
	wantStats(t, r, 0, 0)
	_, err = store.Load(bg, c.ID())
	if !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("closed conversation still stored: %v", err)
	}
}
