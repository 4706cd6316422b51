package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/mcpserver"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// The test application: routes written as chatgen generates them (a
// registration with a manifest), a chat-scoped bean that counts, and a
// ledger of the beans built and closed.

// A tally is the chat-scoped bean of the "count" route.
type tally struct {
	n      int
	ledger *ledger
}

// Close is called when the tally's scope ends.
func (t *tally) Close() error {
	t.ledger.closedOne()
	return nil
}

// A ledger counts the tallies built and closed, and tells each close.
type ledger struct {
	mu        sync.Mutex
	built     int
	closes    int
	closed    chan struct{} // one value per close (buffered)
	waiting   chan struct{} // one value per request of "wait" (buffered)
	cancelled chan struct{} // one value per "wait" whose context ended (buffered)
}

func newLedger() *ledger {
	return &ledger{closed: make(chan struct{}, 1000), waiting: make(chan struct{}, 100), cancelled: make(chan struct{}, 100)}
}

func (l *ledger) build() *tally {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.built++
	return &tally{ledger: l}
}

func (l *ledger) counts() (built, closes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.built, l.closes
}

func (l *ledger) closedOne() {
	l.mu.Lock()
	l.closes++
	l.mu.Unlock()
	l.closed <- struct{}{}
}

func (l *ledger) waitClosed(t testing.TB, n int) {
	t.Helper()
	for range n {
		select {
		case <-l.closed:
		case <-time.After(10 * time.Second):
			built, closes := l.counts()
			t.Fatalf("a tally was not closed: %d built, %d closed", built, closes)
		}
	}
}

const pkgPath = "example.com/mcpapp"

// Item is the named type of the "item" route.
type Item struct {
	Name string `json:"name"`
	Qty  int    `json:"qty"`
}

// tallyBean is the chat-scoped bean of the "count" route; its tool box
// is testToolBoxes'.
var tallyBean = chat.NewBean[*tally](pkgPath+".tally", nil, nil)

// testToolBoxes are the //chat:tools boxes of the test application, as
// generated code declares their tools: the tally's (on "count": add,
// read, reset which needs a confirmation, fail, a client-run tool) and
// one on the admins' route.
func testToolBoxes() []mcpserver.ToolBox {
	add := ai.Tool{
		Name:        "add",
		Description: "Add adds to the count.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"by":{"type":"integer","description":"how much"}},"required":["by"],"additionalProperties":false}`),
		Invoke: ai.BeanTool(tallyBean, func(ctx context.Context, t *tally, args struct {
			By int `json:"by"`
		}) (any, error) {
			if err := chat.Response(ctx).Thinking("adding"); err != nil {
				return nil, err
			}
			t.n += args.By
			return map[string]int{"n": t.n}, nil
		}),
	}
	read := ai.Tool{
		Name:        "read",
		Description: "Read returns the count.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Invoke: ai.BeanTool(tallyBean, func(ctx context.Context, t *tally, _ struct{}) (any, error) {
			return fmt.Sprintf("the count is %d", t.n), nil
		}),
	}
	reset := ai.Tool{
		Name:        "reset",
		Description: "Reset sets the count to zero.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Confirm:     true,
		Invoke: ai.BeanTool(tallyBean, func(ctx context.Context, t *tally, _ struct{}) (any, error) {
			t.n = 0
			return nil, nil
		}),
	}
	fail := ai.Tool{
		Name:       "fail",
		Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Invoke: ai.BeanTool(tallyBean, func(ctx context.Context, t *tally, _ struct{}) (any, error) {
			return nil, errors.New("the count cannot fail today")
		}),
	}
	locate := ai.Tool{Name: "locate", Client: true}
	secret := ai.Tool{
		Name:       "reveal",
		Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Invoke: func(ctx context.Context, _ string) (any, error) {
			return "revealed to " + chat.PrincipalFrom(ctx).Name(), nil
		},
	}
	return []mcpserver.ToolBox{
		{Route: "count", Tools: []ai.Tool{add, read, reset, fail, locate}},
		{Route: "admin", Tools: []ai.Tool{secret}},
	}
}

// testPackage returns the registration of the test application.
func testPackage(l *ledger) *chatimpl.Package {
	p := chatimpl.NewPackage(pkgPath)
	chatimpl.Provide(p, tallyBean, func(context.Context) (*tally, error) { return l.build(), nil })
	p.AddRoute(chatimpl.RouteSpec{Name: "count", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		by := 1
		if req.Has("by") {
			if err := req.Decode("by", &by); err != nil {
				return err
			}
		}
		t, err := tallyBean.Lookup(ctx)
		if err != nil {
			return err
		}
		t.n += by
		return chat.Response(ctx).Message(fmt.Sprintf("%s: count is %d", req.UserMessage(), t.n))
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "admin", Roles: []string{"admin"}, Handle: func(ctx context.Context) error {
		return chat.Response(ctx).Message("the secret is " + chat.PrincipalFrom(ctx).Name())
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "item", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		var it Item
		if err := req.Decode("item", &it); err != nil {
			return err
		}
		if err := chat.Response(ctx).Thinking("weighing"); err != nil {
			return err
		}
		it.Qty *= 2
		return chat.Response(ctx).Object(it)
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "stream", Handle: func(ctx context.Context) error {
		return chat.Response(ctx).Stream(slices.Values(strings.Fields("one two three")))
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "boom", Handle: func(ctx context.Context) error {
		return errors.New("the internal secret detail")
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "guarded", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		// What an AI service with a confirmed tool does: a request that
		// answers the pending confirmation runs or denies the call;
		// another pauses on a new one.
		if req.Has(ai.KeyConfirm) {
			var id, reason string
			var approve bool
			if err := errors.Join(req.Decode(ai.KeyConfirm, &id), req.Decode(ai.KeyApprove, &approve)); err != nil {
				return err
			}
			if id != "c-1" {
				return &chat.BadRequestError{Param: ai.KeyConfirm, Err: errors.New("stale")}
			}
			if !approve {
				if req.Has(ai.KeyReason) {
					if err := req.Decode(ai.KeyReason, &reason); err != nil {
						return err
					}
				}
				return chat.Response(ctx).Message("kept: " + reason)
			}
			return chat.Response(ctx).Message("deleted")
		}
		if err := chat.Response(ctx).Message("let me check"); err != nil {
			return err
		}
		return chat.Response(ctx).Event(protocol.EventConfirm, ai.Confirmation{ID: "c-1", Tool: "deleteItem", Arguments: []byte(`{"item":"Nightfall"}`), CallID: "call-1"})
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "wait", Handle: func(ctx context.Context) error {
		l.waiting <- struct{}{}
		<-ctx.Done()
		l.cancelled <- struct{}{}
		return ctx.Err()
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "quit", Handle: func(ctx context.Context) error {
		if err := chat.Response(ctx).Message("bye"); err != nil {
			return err
		}
		return chat.End(ctx)
	}})
	text := chatimpl.ParamInfo{Name: protocol.KeyUserMessage, Schema: `{"type":"string"}`}
	p.Describe(&chatimpl.Manifest{
		Routes: []chatimpl.RouteInfo{
			{Name: "count", Params: []chatimpl.ParamInfo{text, {Name: "by", Schema: `{"type":"integer"}`}}},
			{Name: "admin"},
			{Name: "item", Params: []chatimpl.ParamInfo{{Name: "item", Schema: `{"$ref":"#/$defs/Item"}`}},
				Events: []chatimpl.EventInfo{{Type: protocol.EventObject, Schema: `{"$ref":"#/$defs/Item"}`}}},
			{Name: "stream", Streaming: true, Params: []chatimpl.ParamInfo{text}},
			{Name: "boom", Params: []chatimpl.ParamInfo{text}},
			{Name: "guarded", Params: []chatimpl.ParamInfo{text}},
			{Name: "quit", Params: []chatimpl.ParamInfo{text}},
			{Name: "wait"},
		},
		Types: []chatimpl.TypeInfo{
			{Name: "Item", Schema: `{"type":"object","properties":{"name":{"type":"string"},"qty":{"type":"integer"}},"additionalProperties":false}`},
			{Name: "Unused", Schema: `{"type":"string"}`},
		},
	})
	return p
}

// allRoutes are the test application's routes, sorted.
var allRoutes = []string{"admin", "boom", "count", "guarded", "item", "quit", "stream", "wait"}

// quietLogger drops the logs of expected failures.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// app is the test application served over MCP.
type app struct {
	router *chat.Router
	ledger *ledger
	server *mcpserver.Server
}

func newApp(t testing.TB, opts *mcpserver.Options) *app {
	t.Helper()
	leaktest.Check(t) // first: its check runs after every other cleanup
	l := newLedger()
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, testPackage(l))
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &mcpserver.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	s, err := mcpserver.New(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	a := &app{router: r, ledger: l, server: s}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("closing the server: %v", err)
		}
		a.checkReleased(t)
	})
	return a
}

// checkReleased fails unless every conversation, scope and bean ended.
func (a *app) checkReleased(t testing.TB) {
	t.Helper()
	if st := a.router.Stats(); st.Conversations != 0 || st.Scopes != 0 {
		t.Errorf("the router holds %+v", st)
	}
	if built, closes := a.ledger.counts(); built != closes {
		t.Errorf("%d tallies built, %d closed", built, closes)
	}
	if n := a.server.Sessions(); n != 0 {
		t.Errorf("%d sessions left", n)
	}
}

// runInMemory serves one session over in-memory transports (as over
// stdio) and returns the client's session and the channel Run's result
// comes on.
func (a *app) runInMemory(t testing.TB, copts *mcp.ClientOptions) (*mcp.ClientSession, <-chan error) {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	started := make(chan struct{})
	go func() {
		close(started)
		done <- a.server.Run(ctx, st)
	}()
	<-started
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, done
}

// serveHTTP serves the app's streamable HTTP endpoint on loopback.
func (a *app) serveHTTP(t testing.TB) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(a.server.Handler())
	t.Cleanup(hs.Close)
	return hs
}

// connectHTTP connects a client to the endpoint with the header X-User
// set to user ("" for none).
func connectHTTP(t testing.TB, url, user string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: userTransport{user: user}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// userTransport sets the X-User header of every request.
type userTransport struct{ user string }

func (u userTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if u.user != "" {
		r = r.Clone(r.Context())
		r.Header.Set("X-User", u.user)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// headerAuth is the test's authenticator: X-User names the user, "alice"
// is an admin, "mallory" is refused.
func headerAuth(r *http.Request) (chat.Principal, error) {
	switch u := r.Header.Get("X-User"); u {
	case "":
		return nil, nil
	case "mallory":
		return nil, errors.New("banned")
	case "alice":
		return chat.User{ID: u, Roles: []string{"admin"}}, nil
	default:
		return chat.User{ID: u}, nil
	}
}

// call calls a tool and returns its text content, joined with "|", and
// whether it is a tool error.
func call(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	return texts(res), res.IsError
}

func texts(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "|")
}

// stdioArg is the argument that makes the test binary the test
// application's MCP server over its stdio (ServeStdio), for the tests of
// real stdio and of the npm client. The principal is alice, an admin. When
// the session ends it checks that every conversation, scope and bean
// ended, and exits 0, or 3 when one is left, or 2 when ServeStdio failed.
const stdioArg = "mcpserver-test-stdio"

// stdioBoxesArg is stdioArg with the tool boxes offered.
const stdioBoxesArg = "mcpserver-test-stdio-boxes"

func TestMain(m *testing.M) {
	if len(os.Args) == 2 && (os.Args[1] == stdioArg || os.Args[1] == stdioBoxesArg) {
		os.Exit(serveStdio(os.Args[1] == stdioBoxesArg))
	}
	os.Exit(m.Run())
}

func serveStdio(boxes bool) int {
	l := newLedger()
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, testPackage(l))
	if err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		return 1
	}
	opts := &mcpserver.Options{Logger: quietLogger(), Principal: chat.User{ID: "alice", Roles: []string{"admin"}}}
	if boxes {
		opts.ToolBoxes = testToolBoxes()
	}
	s, err := mcpserver.New(r, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test server:", err)
		return 1
	}
	err = s.ServeStdio(context.Background())
	built, closes := l.counts()
	if st := r.Stats(); st.Conversations != 0 || st.Scopes != 0 || built != closes {
		fmt.Fprintf(os.Stderr, "test server: left %+v, %d tallies built, %d closed\n", st, built, closes)
		return 3
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "test server: ServeStdio:", err)
		return 2
	}
	return 0
}

// waitStats waits until the router's figures satisfy ok: a session's end
// closes its beans before the router forgets the conversation, so the
// figures lag the ledger by a moment.
func waitStats(t testing.TB, r *chat.Router, ok func(chat.Stats) bool) chat.Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := r.Stats()
		if ok(st) || time.Now().After(deadline) {
			return st
		}
		time.Sleep(time.Millisecond)
	}
}
