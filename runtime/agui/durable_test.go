package agui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/agui"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

// node is one node of a durable application: its router on the shared
// store, served over AG-UI.
type node struct {
	sig     *signals
	handler *agui.Handler
	srv     *httptest.Server
}

func (n *node) app() *app { return &app{sig: n.sig, handler: n.handler, srv: n.srv} }

// newNode starts a node named name over store, on route.
func newNode(t *testing.T, name, route string, store chatstore.ConversationStore, auth func(string) chat.Principal) *node {
	t.Helper()
	sig := &signals{waiting: make(chan struct{}, 10), cancelled: make(chan bool, 10), opened: make(chan struct{}, 10), gate: make(chan struct{})}
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger(), Store: store, Node: name}, testPackage(sig))
	if err != nil {
		t.Fatal(err)
	}
	opts := &agui.Options{Route: route, Logger: quietLogger(), Threads: agui.StoreThreads(store)}
	if auth != nil {
		opts.Authenticator = authByHeader(auth)
	}
	h, err := agui.New(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Error(err)
		}
		if st := r.Stats(); st.Conversations != 0 {
			t.Errorf("node %s holds %+v", name, st)
		}
	})
	return &node{sig: sig, handler: h, srv: srv}
}

// redisStore is a conversation store in the shared Redis, under a prefix
// of the test's own.
func redisStore(t *testing.T) chatstore.ConversationStore {
	t.Helper()
	c := redistest.Client(t)
	s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(t, c, "chatgen-agui")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// said is the text of the run's messages.
func said(t *testing.T, evs []map[string]any) string {
	t.Helper()
	checkNesting(t, evs)
	var b strings.Builder
	for _, ev := range evs {
		if ev["type"] == "TEXT_MESSAGE_CONTENT" {
			b.WriteString(ev["delta"].(string))
		}
		if ev["type"] == "RUN_ERROR" {
			b.WriteString("error:" + ev["code"].(string))
		}
	}
	return b.String()
}

// TestThreadAcrossNodes: with a durable router and StoreThreads, a
// thread started on node A continues on node B (sharing Redis), its
// durable bean's state with it, and back on A; a client-run tool call
// the run on B paused on is answered on A; a thread another principal
// started is refused on the other node too.
func TestThreadAcrossNodes(t *testing.T) {
	leaktest.Check(t)
	store := redisStore(t)
	users := func(name string) chat.Principal {
		if name == "" {
			return nil
		}
		return chat.User{ID: name}
	}
	a := newNode(t, "a", "dcount", store, users).app()
	b := newNode(t, "b", "dcount", store, users).app()
	steps := []struct {
		on   *app
		text string
		want string
	}{
		{a, "one", "one: count is 1"},
		{b, "two", "two: count is 2"},
		{b, "three", "three: count is 3"},
		{a, "four", "four: count is 4"},
	}
	for i, s := range steps {
		if got := said(t, s.on.run(t, input("th", "r"+string(rune('0'+i)), s.text), "X-User", "ann")); got != s.want {
			t.Fatalf("run %d: %q, want %q", i, got, s.want)
		}
	}
	// A node that never served the thread knows its principal from its
	// record.
	c := newNode(t, "c", "dcount", store, users).app()
	if got := said(t, c.run(t, input("th", "r9", "five"), "X-User", "bob")); got != "error:Forbidden" {
		t.Errorf("another principal's thread on the other node: %q", got)
	}
	if got := said(t, b.run(t, input("other", "r1", "x"), "X-User", "ann")); got != "x: count is 1" {
		t.Errorf("another thread: %q", got)
	}

	// A front-end tool round across nodes.
	la := newNode(t, "la", "locate", store, nil).app()
	lb := newNode(t, "lb", "locate", store, nil).app()
	first := la.run(t, input("loc", "r1", "x"))
	if got := said(t, first); got != "let me see" || !strings.Contains(strings.Join(types(first), " "), "TOOL_CALL_END") {
		t.Fatalf("the first run: %v %q", types(first), got)
	}
	answer, _ := json.Marshal(map[string]any{"threadId": "loc", "runId": "r2", "messages": []any{
		map[string]any{"id": "t", "role": "tool", "toolCallId": "ct-x", "content": `{"city":"Lyon"}`}}})
	if got := said(t, lb.run(t, string(answer))); got != `located ct-x: {"city":"Lyon"}` {
		t.Errorf("the tool's result on the other node: %q", got)
	}
}

// authByHeader authenticates a request as the principal users names for
// its X-User header.
func authByHeader(users func(string) chat.Principal) func(r *http.Request) (chat.Principal, error) {
	return func(r *http.Request) (chat.Principal, error) { return users(r.Header.Get("X-User")), nil }
}
