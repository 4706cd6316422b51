package chat_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// returnJob is a durable bean whose Close has the side effect of an end:
// it cancels the return the conversation is processing. It also wants to
// know when its scope leaves the process (chat.DetachableBean).
type returnJob struct {
	ID   string
	node string
	j    *journal
}

func (r *returnJob) Close() error {
	r.j.add("cancel return " + r.ID + " on " + r.node)
	return nil
}

func (r *returnJob) DetachBean(ctx context.Context) error {
	if ctx == nil {
		return errors.New("no context")
	}
	r.j.add("detach return " + r.ID + " on " + r.node)
	return nil
}

// plainJob is a durable bean with a Close and no detach hook.
type plainJob struct {
	ID   string
	node string
	j    *journal
}

func (p *plainJob) Close() { p.j.add("close plain " + p.ID + " on " + p.node) }

// localConn is a bean that is not durable, holding something of its
// process: it lets go of it when detached, and closes at the end.
type localConn struct {
	node string
	j    *journal
}

func (c *localConn) Close() error { c.j.add("close conn on " + c.node); return nil }

func (c *localConn) DetachBean(context.Context) error {
	c.j.add("detach conn on " + c.node)
	return nil
}

var (
	_ chat.DetachableBean = (*returnJob)(nil)
	_ chat.DetachableBean = (*localConn)(nil)
)

// returnsApp is the application of a node: "start ID" starts a return
// (all three beans), "status" reads the return, "bye" ends the
// conversation.
type returnsApp struct {
	j     *journal
	ret   *chat.Bean[*returnJob]
	plain *chat.Bean[*plainJob]
	conn  *chat.Bean[*localConn]
}

func newReturnsApp(j *journal) *returnsApp {
	return &returnsApp{
		j:     j,
		ret:   chat.NewBean[*returnJob]("example.com/returns.returnJob", &chat.BeanOptions{Durable: true}, nil),
		plain: chat.NewBean[*plainJob]("example.com/returns.plainJob", &chat.BeanOptions{Durable: true}, nil),
		conn:  chat.NewBean[*localConn]("example.com/returns.localConn", nil, nil),
	}
}

// router returns the router of node over store; the beans' constructors
// need the node (an application dependency), so the package provides them.
func (a *returnsApp) router(t *testing.T, node string, store chatstore.ConversationStore) *chat.Router {
	t.Helper()
	p := chatimpl.NewPackage("example.com/returns")
	chatimpl.Provide(p, a.ret, func(context.Context) (*returnJob, error) { return &returnJob{node: node, j: a.j}, nil })
	chatimpl.Provide(p, a.plain, func(context.Context) (*plainJob, error) { return &plainJob{node: node, j: a.j}, nil })
	chatimpl.Provide(p, a.conn, func(context.Context) (*localConn, error) { return &localConn{node: node, j: a.j}, nil })
	p.AddRoute(asDefault(textRoute("returns", func(ctx context.Context, msg string) (string, error) {
		switch {
		case strings.HasPrefix(msg, "start "):
			id := strings.TrimPrefix(msg, "start ")
			a.ret.MustLookup(ctx).ID = id
			a.plain.MustLookup(ctx).ID = id
			a.conn.MustLookup(ctx)
			return "started " + id, nil
		case msg == "status":
			return "processing " + a.ret.MustLookup(ctx).ID, nil
		case msg == "bye":
			return "", chat.End(ctx)
		}
		return "?", nil
	})))
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: node}, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func wantJournal(t *testing.T, step string, j *journal, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := j.take(); !slices.Equal(got, want) {
		t.Fatalf("%s: beans did %q, want %q", step, got, want)
	}
}

// A durable conversation that leaves node a (Detach) only detaches its
// beans there: Close runs once, on node b, where the conversation ends —
// whether b used the beans after the resume or not. Over bbolt the nodes
// are one process after the other on the same file (a restart); over the
// in-memory store two routers serve it at once.
func TestBeanCloseOnlyAtTheRealEnd(t *testing.T) {
	for _, name := range []string{"bbolt", "memory"} {
		for _, useOnB := range []bool{true, false} {
			t.Run(name+map[bool]string{true: "/used on b", false: "/not used on b"}[useOnB], func(t *testing.T) {
				n := newTwoNodes(t, name)
				j := &journal{}
				app := newReturnsApp(j)
				ra := app.router(t, "a", n.a)
				c, err := ra.Connect(bg, "")
				if err != nil {
					t.Fatal(err)
				}
				if out := mustTurn(t, c, "start 42"); !slices.Equal(out, []string{"started 42"}) {
					t.Fatalf("start: %q", out)
				}
				wantJournal(t, "a request", j)
				id, token := c.ID(), c.ResumeToken()
				if err := c.Detach(bg); err != nil {
					t.Fatal(err)
				}
				wantJournal(t, "Detach on a", j, "detach conn on a", "detach return 42 on a")

				rb := app.router(t, "b", n.nodeB(t))
				c2, err := rb.Resume(bg, id, token)
				if err != nil {
					t.Fatal(err)
				}
				wantJournal(t, "the resume on b", j)
				if useOnB {
					if out := mustTurn(t, c2, "status"); !slices.Equal(out, []string{"processing 42"}) {
						t.Fatalf("status: %q", out)
					}
					wantJournal(t, "a request on b", j)
					// The route ends the conversation: the request has no
					// scope to complete in.
					if _, after, f := turn(t, c2, c2.ScopeID(), "bye"); after != "" || !errors.Is(f, chat.ErrSessionNotActive) {
						t.Fatalf("bye: scope %q, %v", after, f)
					}
					// Newest first: the return (restored by status), then
					// the plain job, restored to be closed.
					wantJournal(t, "the end on b", j, "cancel return 42 on b", "close plain 42 on b")
				} else {
					if err := c2.Close(bg); err != nil {
						t.Fatal(err)
					}
					// Neither was used on b: both are restored to be
					// closed, in name order.
					wantJournal(t, "the end on b", j, "close plain 42 on b", "cancel return 42 on b")
				}
				if err := c2.Close(bg); err != nil {
					t.Fatal(err)
				}
				if err := c.Close(bg); err != nil {
					t.Fatal(err)
				}
				wantJournal(t, "closing again", j)
			})
		}
	}
}

// twoNodes gives the stores of two nodes serving the same conversations.
type twoNodes struct {
	a     chatstore.ConversationStore
	nodeB func(t *testing.T) chatstore.ConversationStore // called once node a let go
}

// newTwoNodes returns two nodes over the store kind: over bbolt, one
// process after the other on the same file (node a's store is closed
// before node b opens it: a restart); over the in-memory store, two
// routers at once.
func newTwoNodes(t *testing.T, kind string) *twoNodes {
	t.Helper()
	switch kind {
	case "bbolt":
		path := filepath.Join(t.TempDir(), "conversations.db")
		a, err := boltstore.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &twoNodes{a: a, nodeB: func(t *testing.T) chatstore.ConversationStore {
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := boltstore.Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			return b
		}}
	case "memory":
		s := chat.NewInMemoryConversationStore(nil)
		return &twoNodes{a: s, nodeB: func(*testing.T) chatstore.ConversationStore { return s }}
	}
	t.Fatalf("no store %q", kind)
	return nil
}

// A save that fails rolls the conversation back to its saved state: the
// beans of the request that was not kept are detached, not closed (their
// scope goes on, rebuilt from the saved state), and the end closes each
// bean once, with the state that was saved.
func TestBeanRollbackDetaches(t *testing.T) {
	store := &failingStore{InMemoryConversationStore: chat.NewInMemoryConversationStore(nil)}
	j := &journal{}
	app := newReturnsApp(j)
	r := app.router(t, "a", store)
	c, err := r.Connect(bg, "")
	if err != nil {
		t.Fatal(err)
	}
	mustTurn(t, c, "start 42")

	store.setFailing(true)
	if _, _, f := turn(t, c, c.ScopeID(), "start 43"); !errors.Is(f, chat.ErrUnavailable) {
		t.Fatalf("start 43 with the store down: %v, want Unavailable", f)
	}
	wantJournal(t, "the rollback", j, "detach conn on a", "detach return 43 on a")
	store.setFailing(false)

	if out := mustTurn(t, c, "status"); !slices.Equal(out, []string{"processing 42"}) {
		t.Fatalf("status after the rollback: %q", out)
	}
	if err := c.Close(bg); err != nil {
		t.Fatal(err)
	}
	wantJournal(t, "the end", j, "cancel return 42 on a", "close plain 42 on a")
}
