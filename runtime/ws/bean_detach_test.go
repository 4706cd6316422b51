package ws

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/coder/websocket"
)

// returnJob is a durable bean whose Close cancels the return the
// conversation processes: an end's side effect, which a drain must not
// have.
type returnJob struct {
	ID   string
	node string
	log  *beanLog
}

func (r *returnJob) Close() error {
	r.log.add("cancel return " + r.ID + " on " + r.node)
	return nil
}

func (r *returnJob) DetachBean(context.Context) error {
	r.log.add("detach return " + r.ID + " on " + r.node)
	return nil
}

// beanLog records what beans did, from any goroutine.
type beanLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *beanLog) add(s string) {
	l.mu.Lock()
	l.entries = append(l.entries, s)
	l.mu.Unlock()
}

func (l *beanLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.entries
	l.entries = nil
	return out
}

// A websocket server that drains only detaches its durable conversations'
// beans: the return is cancelled once, by the node where the conversation
// ends (the client's Disconnect).
func TestDrainDetachesBeans(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	log := &beanLog{}
	job := chat.NewBean[*returnJob]("example.com/returns.returnJob", &chat.BeanOptions{Durable: true}, nil)
	node := func(name string) *testServer {
		p := chatimpl.NewPackage("example.com/returns")
		chatimpl.Provide(p, job, func(context.Context) (*returnJob, error) { return &returnJob{node: name, log: log}, nil })
		p.AddRoute(chatimpl.RouteSpec{Name: "returns", Default: true, Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			j, err := job.Lookup(ctx)
			if err != nil {
				return err
			}
			if id, ok := strings.CutPrefix(req.UserMessage(), "start "); ok {
				j.ID = id
			}
			return chat.SendValue(ctx, "processing "+j.ID)
		}})
		r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: name, Logger: quietLogger()}, p)
		if err != nil {
			t.Fatal(err)
		}
		return startServerFor(t, r, nil, nil)
	}
	a, b := node("a"), node("b")

	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "")
	if fs := c.chat("c1", hello.text(), "start 42"); fs[0].text() != "processing 42" || last(fs).Type != "Completed" {
		t.Fatalf("start: %v", fs)
	}
	// The client reads, as a real one does: it answers the server's
	// close (1001, going away) at once.
	closed := make(chan error, 1)
	go func() {
		_, err := c.readErr(20 * time.Second)
		closed <- err
	}()
	if err := a.Drain(t.Context(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-closed; websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("the client's connection to the draining node: %v, want closed with 1001", err)
	}
	waitNoConversations(t, a.router)
	if got := log.take(); !slices.Equal(got, []string{"detach return 42 on a"}) {
		t.Fatalf("the drain of node a: beans did %q, want only the detach", got)
	}

	c2 := dialRaw(t, b.url, nil)
	resumed := c2.resume("c2", hello.ConversationID, hello.ResumeToken)
	if resumed.Type != "Completed" {
		t.Fatalf("resume on b: %+v", resumed)
	}
	if fs := c2.chat("c2", resumed.text(), "status"); fs[0].text() != "processing 42" {
		t.Fatalf("status on b: %v", fs)
	}
	c2.send(map[string]any{"type": "Disconnect", "chatId": "c2"})
	waitNoConversations(t, b.router)
	if got := log.take(); !slices.Equal(got, []string{"cancel return 42 on b"}) {
		t.Fatalf("the end on b: beans did %q, want the return cancelled once", got)
	}
}
