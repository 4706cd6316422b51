package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/mcpserver"
)

// transports runs a test over each transport: in memory (what stdio
// runs: one session per Run) and streamable HTTP on loopback.
func transports(t *testing.T, test func(t *testing.T, a *app, connect func(user string, copts *mcp.ClientOptions) *mcp.ClientSession)) {
	t.Run("stdio", func(t *testing.T) {
		a := newApp(t, &mcpserver.Options{Principal: chat.User{ID: "alice", Roles: []string{"admin"}}})
		test(t, a, func(_ string, copts *mcp.ClientOptions) *mcp.ClientSession {
			cs, _ := a.runInMemory(t, copts)
			return cs
		})
	})
	t.Run("http", func(t *testing.T) {
		a := newApp(t, &mcpserver.Options{Authenticator: headerAuth})
		hs := a.serveHTTP(t)
		test(t, a, func(user string, copts *mcp.ClientOptions) *mcp.ClientSession {
			return connectHTTP(t, hs.URL, user, copts)
		})
	})
}

// TestListsRoutesWithValidSchemas: the tool list is the routes, each with
// an object input schema that resolves, with the named types it refers
// to and only those.
func TestListsRoutesWithValidSchemas(t *testing.T) {
	transports(t, func(t *testing.T, a *app, connect func(string, *mcp.ClientOptions) *mcp.ClientSession) {
		cs := connect("alice", nil)
		if got := cs.InitializeResult().ServerInfo.Name; got != "chatgen" {
			t.Errorf("server name %q", got)
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			raw, err := json.Marshal(tool.InputSchema)
			if err != nil {
				t.Fatal(err)
			}
			var s jsonschema.Schema
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatalf("%s: schema %s: %v", tool.Name, raw, err)
			}
			if s.Type != "object" {
				t.Errorf("%s: schema type %q", tool.Name, s.Type)
			}
			if _, err := s.Resolve(nil); err != nil {
				t.Errorf("%s: schema %s does not resolve: %v", tool.Name, raw, err)
			}
			if tool.Description == "" {
				t.Errorf("%s: no description", tool.Name)
			}
			switch tool.Name {
			case "item":
				if _, ok := s.Defs["Item"]; !ok || len(s.Defs) != 1 {
					t.Errorf("item: $defs %v, want Item only", s.Defs)
				}
			case "count":
				if s.Properties["by"] == nil || s.Properties["userMessage"] == nil || len(s.Properties) != 2 {
					t.Errorf("count: properties %v", s.Properties)
				}
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, allRoutes) {
			t.Errorf("tools %v, want %v", names, allRoutes)
		}
	})
}

// TestCallsEachTool: every route answers through its tool, its events
// mapped to content in order.
func TestCallsEachTool(t *testing.T) {
	transports(t, func(t *testing.T, a *app, connect func(string, *mcp.ClientOptions) *mcp.ClientSession) {
		cs := connect("alice", nil)
		for _, c := range []struct {
			tool    string
			args    map[string]any
			want    string
			isError bool
		}{
			{"count", map[string]any{"userMessage": "hi", "by": 2}, "hi: count is 2", false},
			{"count", map[string]any{"userMessage": "again"}, "again: count is 3", false},
			{"admin", nil, "the secret is alice", false},
			{"item", map[string]any{"item": map[string]any{"name": "rope", "qty": 2}}, `{"type":"Object","data":{"name":"rope","qty":4}}`, false},
			{"stream", map[string]any{"userMessage": "go"}, "onetwothree", false},
			{"boom", nil, "Failed: ServerError", true},
			{"guarded", nil, "let me check|Refused: the tool deleteItem needs the user's confirmation, and this MCP client does not support elicitation, so it cannot ask: the call was denied|kept: the user's MCP client cannot confirm tool calls (no elicitation)", true},
			{"quit", nil, "bye|Failed: SessionNotActive", true},
			{"quit", nil, "bye|Failed: SessionNotActive", true}, // a new conversation
		} {
			got, isErr := call(t, cs, c.tool, c.args)
			if got != c.want || isErr != c.isError {
				t.Errorf("%s %v: %q (error %v), want %q (error %v)", c.tool, c.args, got, isErr, c.want, c.isError)
			}
		}
	})
}

// TestSessionIsAConversation: the calls of one session share its beans;
// two sessions are isolated; ending a session ends its conversations and
// closes their beans.
func TestSessionIsAConversation(t *testing.T) {
	transports(t, func(t *testing.T, a *app, connect func(string, *mcp.ClientOptions) *mcp.ClientSession) {
		one, two := connect("bob", nil), connect("carol", nil)
		for _, c := range []struct {
			cs   *mcp.ClientSession
			want string
		}{
			{one, "a: count is 1"}, {one, "a: count is 2"}, {two, "a: count is 1"}, {one, "a: count is 3"}, {two, "a: count is 2"},
		} {
			if got, _ := call(t, c.cs, "count", map[string]any{"userMessage": "a"}); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		}
		if st := a.router.Stats(); st.Conversations != 2 {
			t.Errorf("stats %+v, want 2 conversations", st)
		}
		if err := one.Close(); err != nil {
			t.Fatal(err)
		}
		a.ledger.waitClosed(t, 1) // the first session's tally
		st := waitStats(t, a.router, func(st chat.Stats) bool { return st.Conversations == 1 && st.Scopes == 1 })
		if st.Conversations != 1 || st.Scopes != 1 {
			t.Errorf("stats after one session ended %+v, want 1 conversation", st)
		}
		if got, _ := call(t, two, "count", map[string]any{"userMessage": "a"}); got != "a: count is 3" {
			t.Errorf("the other session: %q", got)
		}
		if err := two.Close(); err != nil {
			t.Fatal(err)
		}
		a.ledger.waitClosed(t, 1)
		a.checkReleasedEventually(t)
	})
}

// checkReleasedEventually checks the release once the server dropped the
// sessions whose beans closed: Close waits for their ends.
func (a *app) checkReleasedEventually(t testing.TB) {
	t.Helper()
	if err := a.server.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.checkReleased(t)
}

// TestRunEndsItsConversations: Run returns when the client ends the
// session, after its conversations ended.
func TestRunEndsItsConversations(t *testing.T) {
	a := newApp(t, nil)
	cs, done := a.runInMemory(t, nil)
	for range 3 {
		call(t, cs, "count", map[string]any{"userMessage": "x"})
	}
	call(t, cs, "stream", nil)
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	a.checkReleased(t)
	if built, _ := a.ledger.counts(); built != 1 {
		t.Errorf("%d tallies built, want 1", built)
	}
}

// TestUnknownToolAndWrongArguments: an unknown tool is a JSON-RPC error;
// arguments that do not fit the schema are a tool error naming the
// problem, and the route does not run; the session keeps working.
func TestUnknownToolAndWrongArguments(t *testing.T) {
	transports(t, func(t *testing.T, a *app, connect func(string, *mcp.ClientOptions) *mcp.ClientSession) {
		cs := connect("bob", nil)
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope", Arguments: map[string]any{}})
		if err == nil || !strings.Contains(err.Error(), "nope") {
			t.Errorf("unknown tool: %v", err)
		}
		for _, args := range []map[string]any{
			{"by": "two"},
			{"userMessage": 7},
			{"extra": true},
			{"confirm": "c-1", "approve": true}, // a client may not answer confirmations itself
		} {
			got, isErr := call(t, cs, "count", args)
			if !isErr || !strings.HasPrefix(got, "BadRequest: the arguments do not match the tool's input schema") {
				t.Errorf("%v: %q (error %v)", args, got, isErr)
			}
		}
		if got, isErr := call(t, cs, "item", map[string]any{"item": map[string]any{"name": "x", "qty": "many"}}); !isErr || !strings.Contains(got, "BadRequest") {
			t.Errorf("a wrong nested type: %q (error %v)", got, isErr)
		}
		if built, _ := a.ledger.counts(); built != 0 {
			t.Errorf("a refused call ran the route: %d tallies", built)
		}
		if got, _ := call(t, cs, "count", map[string]any{"userMessage": "ok"}); got != "ok: count is 1" {
			t.Errorf("after refusals: %q", got)
		}
	})
}

// TestRolesHold: a session lists and calls only the routes its principal
// may use.
func TestRolesHold(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		a := newApp(t, &mcpserver.Options{Authenticator: headerAuth})
		hs := a.serveHTTP(t)
		alice, bob, anon := connectHTTP(t, hs.URL, "alice", nil), connectHTTP(t, hs.URL, "bob", nil), connectHTTP(t, hs.URL, "", nil)
		checkAdmin(t, alice, true)
		checkAdmin(t, bob, false)
		checkAdmin(t, anon, false)
	})
	t.Run("stdio", func(t *testing.T) {
		checkAdmin(t, first(newApp(t, &mcpserver.Options{Principal: chat.User{ID: "root", Roles: []string{"admin"}}}).runInMemory(t, nil)), true)
		checkAdmin(t, first(newApp(t, &mcpserver.Options{Principal: chat.User{ID: "guest"}}).runInMemory(t, nil)), false)
		checkAdmin(t, first(newApp(t, nil).runInMemory(t, nil)), false)
	})
}

func first[A, B any](a A, _ B) A { return a }

func checkAdmin(t *testing.T, cs *mcp.ClientSession, admin bool) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := slices.ContainsFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == "admin" })
	got, isErr := call(t, cs, "admin", nil)
	if admin {
		if !listed || isErr || !strings.HasPrefix(got, "the secret is ") {
			t.Errorf("an admin: listed %v, call %q (error %v)", listed, got, isErr)
		}
		return
	}
	if listed || !isErr || strings.Contains(got, "secret") || !strings.HasPrefix(got, "Forbidden") {
		t.Errorf("not an admin: listed %v, call %q (error %v)", listed, got, isErr)
	}
	if len(res.Tools) != len(allRoutes)-1 {
		t.Errorf("%d tools listed, want %d", len(res.Tools), len(allRoutes)-1)
	}
}

// rawPost posts body to the endpoint as the MCP client would, with the
// given session id and user, and returns the status and body.
func rawPost(t *testing.T, url, session, user, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if user != "" {
		req.Header.Set("X-User", user)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestHTTPSessionOwnership: a session belongs to the principal that
// opened it; another principal's requests for it are refused, and a
// refused authentication is 401.
func TestHTTPSessionOwnership(t *testing.T) {
	a := newApp(t, &mcpserver.Options{Authenticator: headerAuth})
	hs := a.serveHTTP(t)
	alice := connectHTTP(t, hs.URL, "alice", nil)
	call(t, alice, "count", map[string]any{"userMessage": "mine"})
	callBody := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"admin","arguments":{}}}`
	for _, user := range []string{"bob", ""} {
		if code, body := rawPost(t, hs.URL, alice.ID(), user, callBody); code != http.StatusForbidden || strings.Contains(body, "secret") {
			t.Errorf("%q on alice's session: %d %s", user, code, body)
		}
	}
	if code, _ := rawPost(t, hs.URL, alice.ID(), "mallory", callBody); code != http.StatusUnauthorized {
		t.Errorf("a refused principal: %d", code)
	}
	if code, body := rawPost(t, hs.URL, alice.ID(), "alice", callBody); code != http.StatusOK || !strings.Contains(body, "the secret is alice") {
		t.Errorf("alice on her session: %d %s", code, body)
	}
	if got, _ := call(t, alice, "count", map[string]any{"userMessage": "mine"}); got != "mine: count is 2" {
		t.Errorf("alice's conversation after the refusals: %q", got)
	}
}

// TestMalformedJSONRPC: malformed messages are refused with JSON-RPC
// errors (over HTTP: 400) and the session goes on.
func TestMalformedJSONRPC(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		a := newApp(t, nil)
		hs := a.serveHTTP(t)
		cs := connectHTTP(t, hs.URL, "", nil)
		for _, body := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"tools/call",`,
			`not json at all`,
			`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":"count"}`,
			`{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{}}`,
			`[]`,
		} {
			code, resp := rawPost(t, hs.URL, cs.ID(), "", body)
			if code == http.StatusOK && !strings.Contains(resp, `"error"`) {
				t.Errorf("%s: %d %s", body, code, resp)
			}
			if code >= 500 {
				t.Errorf("%s: a server error %d %s", body, code, resp)
			}
		}
		if got, _ := call(t, cs, "count", map[string]any{"userMessage": "still"}); got != "still: count is 1" {
			t.Errorf("after malformed messages: %q", got)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		a := newApp(t, nil)
		in, toServer := io.Pipe()
		fromServer, out := io.Pipe()
		done := make(chan error, 1)
		go func() { done <- a.server.Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: out}) }()
		dec := json.NewDecoder(fromServer)
		send := func(line string) {
			t.Helper()
			if _, err := io.WriteString(toServer, line+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		recv := func() map[string]any {
			t.Helper()
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			return m
		}
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
		if m := recv(); m["result"] == nil {
			t.Fatalf("initialize: %v", m)
		}
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope","arguments":{}}}`)
		if m := recv(); m["error"] == nil || m["id"] != float64(2) {
			t.Errorf("unknown tool: %v", m)
		}
		send(`{"jsonrpc":"2.0","id":3,"method":"no/such/method"}`)
		if m := recv(); m["error"] == nil {
			t.Errorf("unknown method: %v", m)
		} else if code := m["error"].(map[string]any)["code"]; code != float64(-32601) {
			t.Errorf("unknown method: code %v", code)
		}
		send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"count","arguments":{"userMessage":"ok"}}}`)
		if m := recv(); !strings.Contains(mustJSON(t, m), "ok: count is 1") {
			t.Errorf("a call: %v", m)
		}
		// A line that is not JSON at all ends the session: the stream
		// cannot be trusted any more.
		send(`{{{ not json`)
		_ = toServer.Close()
		go func() { _, _ = io.Copy(io.Discard, fromServer) }()
		<-done
		a.checkReleasedEventually(t)
	})
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTenMegabyteMessageBounded: a 10 MB message is refused (413 over
// HTTP; over stdio the session ends) without being buffered whole.
func TestTenMegabyteMessageBounded(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"count","arguments":{"userMessage":"` + strings.Repeat("x", 10<<20) + `"}}}`
	t.Run("http", func(t *testing.T) {
		a := newApp(t, nil)
		hs := a.serveHTTP(t)
		cs := connectHTTP(t, hs.URL, "", nil)
		if code, _ := rawPost(t, hs.URL, cs.ID(), "", big); code != http.StatusRequestEntityTooLarge {
			t.Errorf("10 MB: %d, want 413", code)
		}
		if got, _ := call(t, cs, "count", map[string]any{"userMessage": "small"}); got != "small: count is 1" {
			t.Errorf("after the big message: %q", got)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		a := newApp(t, nil)
		in, toServer := io.Pipe()
		fromServer, out := io.Pipe()
		go func() { _, _ = io.Copy(io.Discard, fromServer) }()
		done := make(chan error, 1)
		go func() {
			done <- a.server.Run(context.Background(), &mcp.IOTransport{Reader: in, Writer: out, MaxLineLength: mcpserver.DefaultMaxMessageBytes})
		}()
		init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n"
		if _, err := io.WriteString(toServer, init+`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{"userMessage":"x"}}}`+"\n"); err != nil {
			t.Fatal(err)
		}
		// The server stops reading at the bound: the write fails once it
		// closed its end.
		_, werr := io.Copy(toServer, bytes.NewReader([]byte(big+"\n")))
		err := <-done
		if err == nil {
			t.Errorf("Run returned nil after a 10 MB line")
		}
		if werr == nil {
			t.Logf("the whole message was written (the pipe drained)")
		}
		_ = toServer.Close()
		a.checkReleasedEventually(t)
	})
}

// TestNewRefusesInvalidToolNames: a route name MCP cannot carry is an
// error of New.
func TestNewRefusesInvalidToolNames(t *testing.T) {
	p := chatimpl.NewPackage("example.com/bad")
	p.AddRoute(chatimpl.RouteSpec{Name: "has space", Handle: func(context.Context) error { return nil }})
	r, err := chat.NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcpserver.New(r, nil); !errors.Is(err, mcpserver.ErrInvalidToolName) {
		t.Errorf("New: %v", err)
	}
	if _, err := mcpserver.New(nil, nil); err == nil {
		t.Errorf("New(nil): no error")
	}
}

// TestConfirmThroughElicitation: a route paused on a confirmation asks
// the client through elicitation, within the same call, and the answer
// goes to the route: approve runs the call, a decline or a "no" with a
// reason denies it.
func TestConfirmThroughElicitation(t *testing.T) {
	transports(t, func(t *testing.T, a *app, connect func(string, *mcp.ClientOptions) *mcp.ClientSession) {
		answers := []*mcp.ElicitResult{
			{Action: "accept", Content: map[string]any{"approve": true}},
			{Action: "decline"},
			{Action: "accept", Content: map[string]any{"approve": false, "reason": "no way"}},
			{Action: "cancel"},
		}
		var asked []string
		cs := connect("bob", &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			res := answers[0]
			answers = answers[1:]
			return res, nil
		}})
		for _, want := range []string{
			"let me check|deleted",
			"let me check|kept: the user declined",
			"let me check|kept: no way",
			"let me check|kept: the user dismissed the question",
		} {
			if got, isErr := call(t, cs, "guarded", nil); got != want || isErr {
				t.Errorf("got %q (error %v), want %q", got, isErr, want)
			}
		}
		if len(asked) != 4 || asked[0] != `Allow the tool deleteItem to run with the arguments {"item":"Nightfall"}?` {
			t.Errorf("asked %q", asked)
		}
	})
}

// TestConfirmOverBothProtocols: the confirmation is asked through a
// request to the client on the protocols up to 2025-11-25 and through an
// input-required result (multi round-trip) on 2026-07-28; a retry whose
// request state names no pending confirmation is refused.
func TestConfirmOverBothProtocols(t *testing.T) {
	a := newApp(t, nil)
	approve := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}}
	// In memory the client speaks the newest protocol.
	cs, _ := a.runInMemory(t, approve)
	if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		t.Fatalf("in memory: protocol %s", v)
	}
	if got, _ := call(t, cs, "guarded", nil); got != "let me check|deleted" {
		t.Errorf("multi round-trip: %q", got)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "guarded", Arguments: map[string]any{}, RequestState: "c-1",
		InputResponses: mcp.InputResponseMap{"confirm": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}})
	if err != nil || !res.IsError || !strings.Contains(texts(res), "no confirmation of this tool is pending") {
		t.Errorf("a forged retry: %v %v", texts(res), err)
	}
	// Over HTTP, an older protocol: the server asks during the call.
	hs := a.serveHTTP(t)
	old := connectHTTP(t, hs.URL, "", approve)
	if v := old.InitializeResult().ProtocolVersion; v >= "2026-07-28" {
		t.Fatalf("http: protocol %s, want one before 2026-07-28", v)
	}
	if got, _ := call(t, old, "guarded", nil); got != "let me check|deleted" {
		t.Errorf("old protocol: %q", got)
	}
}

// TestCancelledCall: a client cancelling a call (notifications/cancelled)
// cancels its request's context; the conversation takes the next call.
func TestCancelledCall(t *testing.T) {
	transports(t, func(t *testing.T, a *app, connect func(string, *mcp.ClientOptions) *mcp.ClientSession) {
		cs := connect("bob", nil)
		for range 2 { // the second call shows the conversation is not stuck
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
				errc <- err
			}()
			<-a.ledger.waiting
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("the cancelled call: %v", err)
			}
			<-a.ledger.cancelled // the route saw its context end
		}
	})
}

// TestThinkingAsProgress: a client that asks for progress gets the
// route's Thinking text as progress notifications; the result has none.
func TestThinkingAsProgress(t *testing.T) {
	transports(t, func(t *testing.T, a *app, connect func(string, *mcp.ClientOptions) *mcp.ClientSession) {
		progress := make(chan *mcp.ProgressNotificationParams, 10)
		cs := connect("bob", &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params
		}})
		params := &mcp.CallToolParams{Name: "item", Arguments: map[string]any{"item": map[string]any{"name": "rope", "qty": 1}}}
		params.SetProgressToken("p-1")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(res); got != `{"type":"Object","data":{"name":"rope","qty":2}}` {
			t.Errorf("result %q", got)
		}
		select {
		case p := <-progress:
			if p.Message != "weighing" || p.ProgressToken != "p-1" || p.Progress != 1 {
				t.Errorf("progress %+v", p)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no progress notification")
		}
		// Without a token, none.
		call(t, cs, "item", map[string]any{"item": map[string]any{"name": "rope", "qty": 1}})
		params.SetProgressToken("p-2")
		if _, err := cs.CallTool(context.Background(), params); err != nil {
			t.Fatal(err)
		}
		if p := <-progress; p.ProgressToken != "p-2" {
			t.Errorf("a progress notification of the call without a token: %+v", p)
		}
	})
}
