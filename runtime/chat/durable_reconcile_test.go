package chat_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// lateStore is a store whose saves, while late is set, are applied but
// reported failed: a store that timed out after it received the save,
// then applied it. While loadDown is set, its loads fail.
type lateStore struct {
	*chat.InMemoryConversationStore
	mu             sync.Mutex
	late, loadDown bool
}

var errTimeout = errors.New("i/o timeout")

func (s *lateStore) set(late, loadDown bool) {
	s.mu.Lock()
	s.late, s.loadDown = late, loadDown
	s.mu.Unlock()
}

func (s *lateStore) Save(ctx context.Context, st *chatstore.ConversationState, l chatstore.Lease, b *chatstore.Batch) error {
	s.mu.Lock()
	late := s.late
	s.mu.Unlock()
	if err := s.InMemoryConversationStore.Save(ctx, st, l, b); err != nil || !late {
		return err
	}
	return errTimeout
}

func (s *lateStore) Load(ctx context.Context, id string) (*chatstore.ConversationState, error) {
	s.mu.Lock()
	down := s.loadDown
	s.mu.Unlock()
	if down {
		return nil, errStoreDown
	}
	return s.InMemoryConversationStore.Load(ctx, id)
}

// TestDurableLateSaveIsReconciled: a request whose save was reported
// failed (Unavailable) but applied all the same. The next request finds
// the conversation in the store one version ahead, under this node's own
// lease, and goes on from it: the failed request's durable state and
// memory writes are there, not lost, and not overwritten by a rolled-back
// state. While the store cannot be read, requests fail with Unavailable
// and the next one checks again.
func TestDurableLateSaveIsReconciled(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	ls := &lateStore{InMemoryConversationStore: store}
	lc := &logCapture{}
	r, err := chat.NewRouter(&chat.RouterOptions{Store: ls, Node: "a", Logger: lc.logger()}, app.pkg)
	wantNoErr(t, err)
	c, err := r.Connect(bg, "")
	wantNoErr(t, err)
	mustTurn(t, c, "build")
	nested := c.ScopeID()
	mustTurn(t, c, "name mace")

	ls.set(true, false)
	if _, after, f := turn(t, c, nested, "damage 7"); !errors.Is(f, chat.ErrUnavailable) || after != nested {
		t.Fatalf("a save that timed out: %q %v, want Unavailable in %q", after, f, nested)
	}
	if _, _, f := turn(t, c, nested, "note applied"); !errors.Is(f, chat.ErrUnavailable) {
		t.Fatalf("a second save that timed out: %v", f)
	}

	// The store cannot be read: the check fails the request, and is made
	// again by the next one.
	ls.set(false, true)
	if _, after, f := turn(t, c, nested, "show"); !errors.Is(f, chat.ErrUnavailable) || !errors.Is(f, errStoreDown) || after != nested {
		t.Fatalf("with the store unreadable: %q %v", after, f)
	}

	ls.set(false, false)
	wantEvents(t, mustTurn(t, c, "show"), "draft mace/7 injected scratch 1@1/builder")
	if v, _ := store.GetMemory(bg, nested+"#notes"); string(v) != "applied;" {
		t.Fatalf("memory after the late saves: %q", v)
	}
	if !strings.Contains(lc.String(), "applied all the same") {
		t.Fatalf("the late save was not logged:\n%s", lc.String())
	}
	wantNoErr(t, c.Close(bg))
	wantStats(t, r, 0, 0)
}
