package ws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/e2e"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// durableFrame is a server frame with the fields of durable sessions.
type durableFrame struct {
	frame
	ConversationID string `json:"conversationId"`
	ResumeToken    string `json:"resumeToken"`
	Replayed       bool   `json:"replayed"`
}

func (c *rawConn) readDurable() durableFrame {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var f durableFrame
	if err := json.Unmarshal(b, &f); err != nil {
		c.t.Fatalf("frame %s: %v", b, err)
	}
	return f
}

// durableNodes are servers sharing one conversation store, as the nodes of
// a cluster do; each has its own router.
type durableNodes struct {
	store *chat.InMemoryConversationStore
	ticks atomic.Int64 // runs of the "tick" route, on every node
}

// tickPkg holds "tick", a route that counts its runs.
func (n *durableNodes) tickPkg() *chatimpl.Package {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/runtime/ws/durabletest")
	p.AddRoute(chatimpl.RouteSpec{Name: "tick", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		if err := chat.Response(ctx).Thinking("ticking"); err != nil {
			return err
		}
		return chat.SendValue(ctx, fmt.Sprintf("tick %d: %s", n.ticks.Add(1), req.UserMessage()))
	}})
	return p
}

// start starts a node named name.
func (n *durableNodes) start(t *testing.T, name string, opts *ServerOptions) *testServer {
	t.Helper()
	routes := newTestRoutes()
	r, err := chat.NewRouter(&chat.RouterOptions{Store: n.store, Node: name, Logger: quietLogger()}, e2e.Register(), routes.pkg(), n.tickPkg())
	if err != nil {
		t.Fatal(err)
	}
	return startServerFor(t, r, routes, opts)
}

// connectDurable starts a session and returns its Completed frame.
func (c *rawConn) connectDurable(chatID, route string) durableFrame {
	c.t.Helper()
	m := map[string]any{"type": "Connect", "chatId": chatID}
	if route != "" {
		m["route"] = route
	}
	c.send(m)
	f := c.readDurable()
	if f.ChatID != chatID || f.Type != "Completed" {
		c.t.Fatalf("connect %s: got %v", route, f.frame)
	}
	return f
}

// resume sends a Connect resuming conversation id and returns the reply.
func (c *rawConn) resume(chatID, id, token string) durableFrame {
	c.t.Helper()
	c.send(map[string]any{"type": "Connect", "chatId": chatID, "resume": map[string]any{"conversationId": id, "token": token}, "requestId": "r"})
	return c.readDurable()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestResumeOnAnotherNode(t *testing.T) {
	leaktest.Check(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a, b := nodes.start(t, "a", nil), nodes.start(t, "b", nil)

	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "")
	if hello.ConversationID == "" || hello.ConversationID != hello.text() || len(hello.ResumeToken) < 40 {
		t.Fatalf("Connect's Completed of a durable server: %+v", hello)
	}
	fs := c.chat("c1", hello.text(), "build sword")
	nested := last(fs).text()
	if nested == hello.text() {
		t.Fatalf("no nested scope: %v", fs)
	}
	// The connection drops: node a lets go, the store keeps it.
	c.ws.CloseNow()
	waitNoConversations(t, a.router)

	c2 := dialRaw(t, b.url, nil)
	got := c2.resume("c2", hello.ConversationID, hello.ResumeToken)
	if got.Type != "Completed" || got.text() != nested || got.ConversationID != hello.ConversationID || got.ResumeToken == "" || got.ResumeToken == hello.ResumeToken || string(got.RequestID) != `"r"` {
		t.Fatalf("resume on node b: %+v", got)
	}
	// The next message runs in the nested route.
	fs = c2.chat("c2", nested, "build axe")
	if fs[0].Type != "weapon" || !strings.Contains(string(fs[0].Data), `"axe"`) || last(fs).Type != "Completed" {
		t.Fatalf("after the resume: %v", fs)
	}
	// The old token no longer works.
	c3 := dialRaw(t, b.url, nil)
	if f := c3.resume("c3", hello.ConversationID, hello.ResumeToken); f.Type != "Failed" || f.text() != "ResumeRefused" {
		t.Fatalf("resume with the old token: %+v", f)
	}
	// Disconnect ends it for good.
	c2.send(map[string]any{"type": "Disconnect", "chatId": "c2"})
	waitNoConversations(t, b.router)
	if ids, _ := nodes.store.ConversationIDs(context.Background()); len(ids) != 0 {
		t.Fatalf("conversations left after Disconnect: %q", ids)
	}
}

func TestResumeRefusalsRevealNothing(t *testing.T) {
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	auth := func(r *http.Request) (chat.Principal, error) {
		return chat.User{ID: r.Header.Get("X-User")}, nil
	}
	a := nodes.start(t, "a", &ServerOptions{Authenticator: auth})
	ann := http.Header{"X-User": {"ann"}}
	c := dialRaw(t, a.url, ann)
	hello := c.connectDurable("c1", "")
	c.ws.CloseNow()
	waitNoConversations(t, a.router)

	tampered := []byte(hello.ResumeToken)
	tampered[5] ^= 1
	for name, tc := range map[string]struct {
		user, id, token string
	}{
		"tampered token": {"ann", hello.ConversationID, string(tampered)},
		"another user":   {"bob", hello.ConversationID, hello.ResumeToken},
		"unknown id":     {"ann", "x" + hello.ConversationID, hello.ResumeToken},
	} {
		c := dialRaw(t, a.url, http.Header{"X-User": {tc.user}})
		f := c.resume("r", tc.id, tc.token)
		if f.Type != "Failed" || f.text() != "ResumeRefused" || f.Detail != "" || f.ScopeID != "" || f.ResumeToken != "" {
			t.Errorf("%s: %+v, want a bare Failed ResumeRefused", name, f)
		}
	}
	// A malformed resume is a BadRequest that says why.
	c = dialRaw(t, a.url, ann)
	c.send(map[string]any{"type": "Connect", "chatId": "x", "resume": map[string]any{"conversationId": 7}})
	if f := c.read(); f.Type != "Failed" || f.text() != "BadRequest" || !strings.Contains(f.Detail, "conversationId and token") {
		t.Fatalf("malformed resume: %v", f)
	}
	// None of them used the token up.
	if f := c.resume("ok", hello.ConversationID, hello.ResumeToken); f.Type != "Completed" {
		t.Fatalf("resume after the refusals: %+v", f)
	}
}

func TestResumeWhileAnotherNodeServes(t *testing.T) {
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a, b := nodes.start(t, "a", nil), nodes.start(t, "b", nil)
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "")
	c2 := dialRaw(t, b.url, nil)
	if f := c2.resume("c2", hello.ConversationID, hello.ResumeToken); f.Type != "Failed" || f.text() != "ConversationBusy" {
		t.Fatalf("resume while node a serves: %+v", f)
	}
	// The first connection is still served.
	if fs := c.chat("c1", hello.text(), "hi"); last(fs).Type != "Completed" {
		t.Fatalf("the serving node: %v", fs)
	}
}

func TestReSentRequestIsAnsweredOnce(t *testing.T) {
	leaktest.Check(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a, b := nodes.start(t, "a", nil), nodes.start(t, "b", nil)
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "tick")
	scope := hello.text()
	// The request completes on node a, but the connection drops before
	// its terminator reaches the client.
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c1", "scopeId": scope, "data": map[string]any{"userMessage": "once"}, "requestId": 41})
	waitFor(t, "the request's answer to be saved", func() bool {
		st, err := nodes.store.Load(context.Background(), hello.ConversationID)
		return err == nil && strings.Contains(string(st.Extra[replayKey]), `"requestId":41`)
	})
	c.ws.CloseNow()
	waitNoConversations(t, a.router)

	// The client resumes on node b and sends the request again: it gets
	// the answer, replayed, and the route does not run again.
	c2 := dialRaw(t, b.url, nil)
	if f := c2.resume("c2", hello.ConversationID, hello.ResumeToken); f.Type != "Completed" {
		t.Fatalf("resume: %+v", f)
	}
	c2.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c2", "scopeId": scope, "data": map[string]any{"userMessage": "once"}, "requestId": 41})
	var fs []durableFrame
	for {
		f := c2.readDurable()
		fs = append(fs, f)
		if f.Type == "Completed" || f.Type == "Failed" {
			break
		}
	}
	if len(fs) != 3 || fs[0].Type != "Thinking" || fs[1].text() != "tick 1: once" || string(fs[1].RequestID) != "41" ||
		fs[2].Type != "Completed" || fs[2].text() != scope || !fs[2].Replayed || fs[2].ChatID != "c2" {
		t.Fatalf("replayed answer: %+v", fs)
	}
	if n := nodes.ticks.Load(); n != 1 {
		t.Fatalf("the route ran %d times", n)
	}
	// Only the first request after the resume is a replay: the same id
	// again is a new request.
	c2.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c2", "scopeId": scope, "data": map[string]any{"userMessage": "twice"}, "requestId": 41})
	if fs := c2.until("c2"); fs[1].text() != "tick 2: twice" {
		t.Fatalf("a new request with an old id: %v", fs)
	}
}

func TestLostRequestRunsAfterResume(t *testing.T) {
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "tick")
	scope := hello.text()
	if fs := c.chat("c1", scope, "first"); last(fs).Type != "Completed" {
		t.Fatal(fs)
	}
	c.ws.CloseNow()
	waitNoConversations(t, a.router)
	// The request never reached the server: re-sent, it runs.
	c2 := dialRaw(t, a.url, nil)
	if f := c2.resume("c2", hello.ConversationID, hello.ResumeToken); f.Type != "Completed" {
		t.Fatalf("resume: %+v", f)
	}
	c2.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c2", "scopeId": scope, "data": map[string]any{"userMessage": "lost"}, "requestId": 2})
	if fs := c2.until("c2"); fs[1].text() != "tick 2: lost" {
		t.Fatalf("the lost request: %v", fs)
	}
}

func TestShutdownKeepsDurableConversations(t *testing.T) {
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a, b := nodes.start(t, "a", nil), nodes.start(t, "b", nil)
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "")
	read := make(chan error, 1)
	go func() {
		_, err := c.readErr(5 * time.Second) // reading answers the close handshake
		read <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// The client is told to go away (1001), and resumes elsewhere.
	if err := recv(t, read); !isCloseStatus(err, 1001) {
		t.Fatalf("after Shutdown the client read %v, want a 1001 close", err)
	}
	waitNoConversations(t, a.router)
	c2 := dialRaw(t, b.url, nil)
	if f := c2.resume("c2", hello.ConversationID, hello.ResumeToken); f.Type != "Completed" || f.text() != hello.text() {
		t.Fatalf("resume after the shutdown of node a: %+v", f)
	}
}

func TestOldClientsOnADurableServer(t *testing.T) {
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	// A Quarkus-style client: no requestId, no resume.
	c := dialRaw(t, a.url, nil)
	scope := c.connect("q", "echo")
	if fs := c.chat("q", scope, "hi"); len(fs) != 2 || fs[0].text() != "hi" {
		t.Fatalf("old client: %v", fs)
	}
	st, err := nodes.store.Load(context.Background(), scope)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Extra[replayKey]; ok {
		t.Fatal("an answer without a requestId was saved for replay")
	}
	c.send(map[string]any{"type": "Disconnect", "chatId": "q"})
	waitNoConversations(t, a.router)
	if _, err := nodes.store.Load(context.Background(), scope); !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("after Disconnect: %v", err)
	}
}
