package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// noteBook is the conversation of the outage test: route "note" counts
// its turns in a chat-scoped durable bean and asks an AI service whose
// chat memory is in the Redis store. The model's answer says how many
// messages it was given (system, the memory, the user's), so an answer
// tells both what the bean and what the memory held.
func noteBook(store *redisstore.Store) *chatimpl.Package {
	model := llmtest.NewModel(llmtest.Rules(llmtest.WhenFunc(nil, func(req *llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: fmt.Sprintf("%d messages", len(req.Messages))}, nil
	})), nil)
	svc := ai.NewService("github.com/chatscopes/chatgen/internal/durable.Notes", &ai.Config{
		Model:  model,
		Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(1000, nil), Store: store.Memories()}),
	})
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/internal/durable/notes")
	p.AddRoute(chatimpl.RouteSpec{Name: "note", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		c, err := counterBean.Lookup(ctx)
		if err != nil {
			return err
		}
		c.N++
		r, err := svc.Chat(ctx, &ai.Request{Method: &askMethod, User: req.UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, fmt.Sprintf("turn %d: %s", c.N, r.Content))
	}})
	return p
}

// answers collects a session's messages.
type answers struct {
	mu   sync.Mutex
	msgs []string
}

func (a *answers) add(m string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.msgs = append(a.msgs, m)
}

func (a *answers) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.msgs)
}

func (a *answers) since(n int) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.msgs[n:]...)
}

func (a *answers) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.msgs) == 0 {
		return ""
	}
	return a.msgs[len(a.msgs)-1]
}

// wantTurn is the answer of completed turn n: the bean counted n, and the
// model got the system message, the memory of the n-1 turns before (two
// messages each) and the user's message.
func wantTurn(n int) string { return fmt.Sprintf("turn %d: %d messages", n, 2*n) }

// requireStored checks that the store holds the conversation as turn n
// left it: the bean at n, the memory of n turns (the system message and
// two messages a turn), both of the same turn.
func requireStored(t *testing.T, store *redisstore.Store, id string, n int) {
	t.Helper()
	st, err := store.Load(t.Context(), id)
	if err != nil {
		t.Fatalf("loading the conversation: %v", err)
	}
	if len(st.Scopes) != 1 {
		t.Fatalf("stored scopes: %+v", st.Scopes)
	}
	sc := st.Scopes[0]
	var beans []string
	var c counter
	for name, raw := range sc.Beans {
		beans = append(beans, name)
		if strings.HasSuffix(name, ".counter") {
			if err := json.Unmarshal(raw, &c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(sc.Memories) != 1 {
		t.Fatalf("stored memories of the scope: %v", sc.Memories)
	}
	m, err := store.Memories().Get(t.Context(), sc.Memories[0])
	if err != nil {
		t.Fatal(err)
	}
	if c.N != n || len(m) != 2*n+1 {
		t.Fatalf("stored: beans %v, counter %d, memory of %d messages; want the counter and the memory of turn %d (%d messages)",
			beans, c.N, len(m), n, 2*n+1)
	}
}

// outageConv is a websocket conversation (a Go client, ws.Dial, over
// ws.NewServer on a durable router) on the redisstore of a redis-server of
// the test's own, after three completed turns of route "note".
type outageConv struct {
	srv     *redistest.Server
	store   *redisstore.Store
	router  *chat.Router
	session chat.Session
	got     *answers
	scope   string // the session's scope
	id      string // the conversation's id
}

func newOutageConv(t *testing.T) *outageConv {
	t.Helper()
	if testing.Short() {
		t.Skip("starts redis-server")
	}
	srv := redistest.StartServer(t)
	// The timeouts are what a save to a frozen Redis waits for; they are
	// generous, so that a slow answer on a loaded machine is no timeout.
	rc := redis.NewClient(&redis.Options{Network: srv.Network(), Addr: srv.Addr(), MaxRetries: -1,
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	t.Cleanup(func() { rc.Close() })
	store, err := redisstore.New(rc, &redisstore.Options{TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	router, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: "node-a", Logger: logger}, noteBook(store))
	if err != nil {
		t.Fatal(err)
	}
	server := ws.NewServer(router, &ws.ServerOptions{Logger: logger})
	hs := httptest.NewServer(server)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := server.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		hs.Close()
	})
	client, err := ws.Dial(t.Context(), "ws"+strings.TrimPrefix(hs.URL, "http")+ws.RoutesPath, &ws.DialOptions{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c := &outageConv{srv: srv, store: store, router: router, got: new(answers)}
	c.session, err = client.Builder().OnMessage(c.got.add).Connect(t.Context(), "note")
	if err != nil {
		t.Fatal(err)
	}
	c.scope = c.session.ScopeID()
	c.id = c.session.(interface{ ConversationID() string }).ConversationID()
	for n := 1; n <= 3; n++ {
		c.turn(t, n)
	}
	requireStored(t, store, c.id, 3)
	return c
}

// turn runs completed turn n and checks its answer and scope.
func (c *outageConv) turn(t *testing.T, n int) {
	t.Helper()
	if err := c.session.Chat(t.Context(), fmt.Sprint("note ", n)); err != nil {
		t.Fatalf("turn %d: %v", n, err)
	}
	if c.got.last() != wantTurn(n) {
		t.Fatalf("turn %d answered %q, want %q", n, c.got.last(), wantTurn(n))
	}
	if c.session.ScopeID() != c.scope {
		t.Fatalf("turn %d: the session is in scope %s, want %s", n, c.session.ScopeID(), c.scope)
	}
}

// failedTurn runs a turn that must fail with Unavailable, in the same
// scope.
func (c *outageConv) failedTurn(t *testing.T) {
	t.Helper()
	before := c.got.count()
	err := c.session.Chat(t.Context(), "note while Redis is down")
	if !errors.Is(err, chat.ErrUnavailable) {
		t.Fatalf("a turn while Redis is down: %v, want Failed Unavailable", err)
	}
	t.Logf("a turn while Redis is down: %v", err)
	if c.session.ScopeID() != c.scope {
		t.Fatalf("the failed turn moved the session from scope %s to %s", c.scope, c.session.ScopeID())
	}
	// The route ran and answered before the save failed: its answer was
	// sent, then the Failed; what it changed is gone.
	t.Logf("answers of the failed turn: %q", c.got.since(before))
}

// close closes the session and checks that the conversation left the
// router and the store.
func (c *outageConv) close(t *testing.T) {
	t.Helper()
	if err := c.session.Close(); err != nil {
		t.Fatal(err)
	}
	// The server ends the conversation when it reads the client's
	// Disconnect: wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := c.store.Load(t.Context(), c.id)
		if errors.Is(err, chatstore.ErrConversationNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Close the store still has the conversation: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := c.router.Stats(); st.Scopes != 0 || st.Conversations != 0 {
		t.Fatalf("after Close: %+v", st)
	}
}

// TestConversationOutlivesRedisKill kills the conversation's Redis
// (SIGKILL) between two turns, then starts it again on the same socket and
// directory. While Redis is down the turn fails with Failed
// "Unavailable", and nothing of it is kept: neither the bean's increment
// nor the memory's two messages, in the process or in the store. When
// Redis is back the next turn succeeds in the same scope, with the bean
// and the memory as the last completed turn left them.
func TestConversationOutlivesRedisKill(t *testing.T) {
	c := newOutageConv(t)
	c.srv.Kill()
	c.failedTurn(t)
	c.srv.Start()
	requireStored(t, c.store, c.id, 3) // nothing of the failed turn
	c.turn(t, 4)                       // the bean at 3 and the memory of 3 turns before it
	requireStored(t, c.store, c.id, 4)
	c.close(t)
}

// TestConversationOutlivesRedisFreeze freezes the conversation's Redis
// (SIGSTOP) between two turns: the turn's save times out and the turn
// fails with Failed "Unavailable". The save was sent: Redis may apply it
// when it wakes up (SIGCONT), or not; either way whole (the bean and the
// memory of one and the same turn). The conversation then goes on, in the
// same scope, from what the store holds: the next turn sees the bean and
// the memory as stored.
func TestConversationOutlivesRedisFreeze(t *testing.T) {
	c := newOutageConv(t)
	c.srv.Signal(syscall.SIGSTOP)
	c.failedTurn(t)
	c.srv.Signal(syscall.SIGCONT)
	// 3: nothing of the failed turn was kept; 4: its save was applied
	// when Redis woke up.
	n := requireStoredEither(t, c.store, c.id, 3, 4)
	t.Logf("the save that timed out was applied: %v", n == 4)
	c.turn(t, n+1)
	requireStored(t, c.store, c.id, n+1)
	c.turn(t, n+2)
	c.close(t)
}

// requireStoredEither is requireStored for turn a or turn b, and returns
// which.
func requireStoredEither(t *testing.T, store *redisstore.Store, id string, a, b int) int {
	t.Helper()
	st, err := store.Load(t.Context(), id)
	if err != nil {
		t.Fatalf("loading the conversation: %v", err)
	}
	n := a
	if st.Version == uint64(storedVersion(b)) {
		n = b
	}
	requireStored(t, store, id, n)
	return n
}

// storedVersion is the version of the conversation after completed turn
// n: Connect saves version 1, each turn one more.
func storedVersion(n int) int { return n + 1 }
