package durable_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// durableStore is a conversation store and its memories' side.
type durableStore struct {
	chatstore.ConversationStore
	memories memory.Store
}

// realStores are the stores the exactly-once tests run on.
var realStores = []struct {
	name string
	open func(t *testing.T) durableStore
}{
	{"bolt", func(t *testing.T) durableStore {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "chat.db"), &boltstore.Options{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return durableStore{s, s.Memories()}
	}},
	{"redis", func(t *testing.T) durableStore {
		c := redistest.Client(t)
		s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(t, c, "chatgen-exactly-once"), TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return durableStore{s, s.Memories()}
	}},
	{"redis-cluster", func(t *testing.T) durableStore {
		if testing.Short() {
			t.Skip("starts a Redis Cluster")
		}
		c := redistest.StartCluster(t, 3, 0).Client(t)
		s, err := redisstore.New(c, &redisstore.Options{Prefix: "chatgen:", TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return durableStore{s, s.Memories()}
	}},
}

// gatedApp is route "gate": it counts its turns in counterBean, asks an
// AI service whose memory is in the store (the model answers how many
// messages it got), tells started, and waits for release — or for its
// context to end, which it honours — before it answers.
type gatedApp struct {
	started chan struct{}
	release chan struct{}
	runs    atomic.Int64
}

func (g *gatedApp) pkg(memories memory.Store) *chatimpl.Package {
	model := llmtest.NewModel(llmtest.Rules(llmtest.WhenFunc(nil, func(req *llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: fmt.Sprintf("%d messages", len(req.Messages))}, nil
	})), nil)
	svc := ai.NewService("github.com/chatscopes/chatgen/internal/durable.Gated", &ai.Config{
		Model:  model,
		Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(1000, nil), Store: memories}),
	})
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/internal/durable/gated")
	p.AddRoute(chatimpl.RouteSpec{Name: "gate", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		g.runs.Add(1)
		c, err := counterBean.Lookup(ctx)
		if err != nil {
			return err
		}
		c.N++
		r, err := svc.Chat(ctx, &ai.Request{Method: &askMethod, User: req.UserMessage()})
		if err != nil {
			return err
		}
		if err := chat.Response(ctx).Thinking("thinking"); err != nil {
			return err
		}
		g.started <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
		return chat.SendValue(ctx, fmt.Sprintf("turn %d: %s", c.N, r.Content))
	}})
	return p
}

// node is a websocket server on a durable router.
type node struct {
	router *chat.Router
	addr   string // host:port
}

// startNode starts a node named name over store. Its WriteTimeout makes
// a resume wait at most 100 ms for a turn still running (then the client
// is told ConversationBusy and tries again).
func startNode(t *testing.T, store durableStore, name string, app *chatimpl.Package) *node {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	router, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: name, Logger: logger, LeaseTTL: 2 * time.Second}, app)
	if err != nil {
		t.Fatal(err)
	}
	server := ws.NewServer(router, &ws.ServerOptions{Logger: logger, WriteTimeout: 200 * time.Millisecond})
	hs := httptest.NewServer(server)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := server.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		hs.Close()
	})
	return &node{router: router, addr: strings.TrimPrefix(hs.URL, "http://")}
}

// proxy is a TCP proxy standing in for a load balancer: cut drops its
// connections, target picks the node of the next ones.
type proxy struct {
	ln     net.Listener
	wg     sync.WaitGroup
	mu     sync.Mutex
	target string
	conns  map[net.Conn]struct{}
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) url() string { return "ws://" + p.ln.Addr().String() + ws.RoutesPath }

func (p *proxy) switchTo(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		target := p.target
		p.mu.Unlock()
		up, err := net.Dial("tcp", target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns[down], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		pipe := func(dst, src net.Conn) {
			defer p.wg.Done()
			_, _ = io.Copy(dst, src)
			dst.Close()
		}
		go pipe(up, down)
		go pipe(down, up)
	}
}

// busyLog signals each time the client tries a resume again.
type busyLog struct{ ch chan string }

func (h *busyLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *busyLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *busyLog) WithGroup(string) slog.Handler            { return h }
func (h *busyLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "trying again") {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "reason" {
				select {
				case h.ch <- a.Value.String():
				default:
				}
			}
			return true
		})
	}
	return nil
}

// TestDroppedTurnAnsweredOnce drops the connection of a Go client (with
// Reconnect) while its turn runs, on bbolt and on Redis: on the same node
// (the client comes back to it) and on another node (the load balancer
// sends it elsewhere: the resume is busy until the first node finished
// the turn and let go). Either way the turn is not cancelled, runs once,
// is saved (the bean and the memory of one turn), and the client's
// request gets its one answer.
func TestDroppedTurnAnsweredOnce(t *testing.T) {
	for _, st := range realStores {
		for _, takeover := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/takeover=%v", st.name, takeover), func(t *testing.T) {
				store := st.open(t)
				g := &gatedApp{started: make(chan struct{}, 4), release: make(chan struct{})}
				app := g.pkg(store.memories)
				a := startNode(t, store, "node-a", app)
				b := startNode(t, store, "node-b", app)
				p := startProxy(t, a.addr)
				retries := &busyLog{ch: make(chan string, 64)}
				client, err := ws.Dial(t.Context(), p.url(), &ws.DialOptions{
					Logger:    slog.New(retries),
					Reconnect: &ws.ReconnectOptions{MinDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond},
				})
				if err != nil {
					t.Fatal(err)
				}
				defer client.Close()
				got := new(answers)
				session, err := client.Builder().OnMessage(got.add).Connect(t.Context(), "")
				if err != nil {
					t.Fatal(err)
				}
				id := session.(interface{ ConversationID() string }).ConversationID()

				call := session.ChatAsync(t.Context(), "hello")
				<-g.started
				if takeover {
					p.switchTo(b.addr)
				}
				p.cut()
				// The resume is refused while the turn runs: busy.
				select {
				case reason := <-retries.ch:
					if reason != chat.ErrConversationBusy.Reason {
						t.Fatalf("the resume was tried again after %s", reason)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("no resume was refused as busy")
				}
				close(g.release)
				select {
				case <-call.Done():
				case <-time.After(10 * time.Second):
					t.Fatal("the request cut by the drop is not answered")
				}
				if err := call.Err(); err != nil {
					t.Fatalf("the request cut by the drop: %v", err)
				}
				// The model got the system message and the user's.
				if msgs := got.since(0); len(msgs) != 1 || msgs[0] != "turn 1: 2 messages" {
					t.Fatalf("answers: %q", msgs)
				}
				if n := g.runs.Load(); n != 1 {
					t.Fatalf("the route ran %d times", n)
				}
				state, err := store.Load(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				if mem, err := store.memories.Get(t.Context(), state.Scopes[0].Memories[0]); err != nil || len(mem) != 3 {
					t.Fatalf("the memory holds %d messages (%v), want the system message and one turn", len(mem), err)
				}
				// The conversation goes on from the turn.
				if err := session.Chat(t.Context(), "again"); err != nil {
					t.Fatal(err)
				}
				if last := got.last(); last != "turn 2: 4 messages" {
					t.Fatalf("the next turn: %s", last)
				}
				if g.runs.Load() != 2 {
					t.Fatalf("the route ran %d times", g.runs.Load())
				}
			})
		}
	}
}
