package ws

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
)

func TestConnect(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)

	// A missing route, a null route and a named route.
	s1 := c.connect("a", "")
	c.send(map[string]any{"type": "Connect", "chatId": "b", "route": nil})
	s2 := c.expectNext("b", "Completed").text()
	s3 := c.connect("c", "echo")
	if s1 == "" || s2 == "" || s3 == "" || s1 == s2 || s2 == s3 {
		t.Fatalf("scope ids %q %q %q", s1, s2, s3)
	}
	// The missing and null routes are the default (menu).
	for _, id := range []struct{ chat, scope string }{{"a", s1}, {"b", s2}} {
		if got := last(c.chat(id.chat, id.scope, "hi")); got.Type != "Completed" {
			t.Fatalf("%s: %v", id.chat, got)
		}
	}
	// An unknown route.
	c.send(map[string]any{"type": "Connect", "chatId": "d", "route": "nowhere", "requestId": "r1"})
	f := c.expectNext("d", "Failed")
	if f.text() != "RouteNotFound" || string(f.RequestID) != `"r1"` {
		t.Fatalf("got %v", f)
	}
	// The failed chatId has no session.
	f = last(c.chat("d", "x", "hi"))
	if f.Type != "Failed" || f.text() != "SessionNotActive" {
		t.Fatalf("got %v", f)
	}
	// A duplicate chatId.
	c.send(map[string]any{"type": "Connect", "chatId": "a"})
	if f := c.expectNext("a", "Failed"); f.text() != "BadRequest" || f.Detail == "" {
		t.Fatalf("got %v", f)
	}
}

func TestConnectNoDefaultRoute(t *testing.T) {
	tr := newTestRoutes()
	router, err := chat.NewRouter(nil, tr.pkg())
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerFor(t, router, tr, nil)
	c := dialRaw(t, ts.url, nil)
	c.send(map[string]any{"type": "Connect", "chatId": "a"})
	if f := c.expectNext("a", "Failed"); f.text() != "RouteNotFound" {
		t.Fatalf("got %v", f)
	}
}

func TestChatEventsAndTerminator(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("s", "events")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": scope, "requestId": 7, "data": map[string]any{"userMessage": "x"}})
	fs := c.until("s")
	var types []string
	for _, f := range fs {
		types = append(types, f.Type)
		if string(f.RequestID) != "7" {
			t.Errorf("frame %v: requestId not echoed", f)
		}
	}
	want := "Thinking Console Object Stream Stream Stream custom Message Completed"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events %s, want %s", got, want)
	}
	if got := string(fs[2].Data); got != `{"n":1,"text":"x"}` {
		t.Errorf("object %s", got)
	}
	if got := last(fs).text(); got != scope {
		t.Errorf("Completed %q, want the scope %q", got, scope)
	}
}

func TestPushAndPop(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	top := c.connect("m", "")

	fs := c.chat("m", top, "build sword")
	if len(fs) != 3 || fs[0].Type != "Thinking" || fs[1].Type != "weapon" || fs[2].Type != "Completed" {
		t.Fatalf("build: %v", fs)
	}
	var w struct {
		Name   string `json:"name"`
		Damage int    `json:"damage"`
	}
	if err := json.Unmarshal(fs[1].Data, &w); err != nil || w.Name != "sword" {
		t.Fatalf("weapon %s: %v", fs[1].Data, err)
	}
	nested := fs[2].text()
	if nested == top {
		t.Fatal("build did not push a scope")
	}
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "m", "scopeId": nested, "data": map[string]any{"userMessage": "axe", "damage": 3}})
	fs = c.until("m")
	if err := json.Unmarshal(fs[0].Data, &w); err != nil || w.Name != "axe" || w.Damage != 3 {
		t.Fatalf("weapon %s: %v", fs[0].Data, err)
	}
	fs = c.chat("m", nested, "done")
	if fs[0].text() != "saved axe" || last(fs).text() != top {
		t.Fatalf("done: %v", fs)
	}
	// Back on the menu.
	fs = c.chat("m", top, "hello")
	if fs[0].text() != "menu 2: hello" {
		t.Fatalf("menu: %v", fs)
	}
}

func TestFailuresKeepTheSession(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	cases := []struct {
		route, text, reason string
	}{
		{"panic", "boom", "ServerError"},
		{"shop", "axe", "ServerError"},
		{"stream", "a fail b", "StreamingFailure"},
		{"admin", "", "Forbidden"},
		{"unencodable", "", "ServerError"},
	}
	for i, tc := range cases {
		id := string(rune('a' + i))
		scope := c.connect(id, tc.route)
		for range 2 { // the session survives
			f := last(c.chat(id, scope, tc.text))
			if f.Type != "Failed" || f.text() != tc.reason || f.ScopeID != scope {
				t.Fatalf("%s: got %v, want Failed %s with scopeId", tc.route, f, tc.reason)
			}
		}
	}
	// A handled error completes.
	scope := c.connect("shop", "shop")
	fs := c.chat("shop", scope, "sword")
	if fs[0].Type != "Error" || fs[0].text() != "sorry, no sword" || last(fs).Type != "Completed" {
		t.Fatalf("got %v", fs)
	}
	// A bad parameter.
	scope = c.connect("count", "count")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "count", "scopeId": scope, "data": map[string]any{"count": "three"}})
	if f := last(c.until("count")); f.Type != "Failed" || f.text() != "BadRequest" {
		t.Fatalf("got %v", f)
	}
}

func TestEndingTheConversation(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("b", "bye")
	if f := last(c.chat("b", scope, "")); f.Type != "Failed" || f.text() != "SessionNotActive" {
		t.Fatalf("got %v", f)
	}
	if f := last(c.chat("b", scope, "")); f.text() != "SessionNotActive" {
		t.Fatalf("got %v", f)
	}
	waitNoConversations(t, ts.router)
}

func TestDisconnect(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("a", "echo")
	c.connect("b", "echo")
	if ts.router.Stats().Conversations != 2 {
		t.Fatalf("stats %+v", ts.router.Stats())
	}
	c.send(map[string]any{"type": "Disconnect", "chatId": "a"})
	c.send(map[string]any{"type": "Disconnect", "chatId": "unknown"})
	// No reply: the next frame is the reply to this request.
	if f := last(c.chat("a", scope, "hi")); f.Type != "Failed" || f.text() != "SessionNotActive" {
		t.Fatalf("got %v", f)
	}
	if got := ts.router.Stats().Conversations; got != 1 {
		t.Fatalf("conversations %d, want 1", got)
	}
	// The chatId may be used again.
	scope = c.connect("a", "echo")
	if f := c.chat("a", scope, "again"); f[0].text() != "again" {
		t.Fatalf("got %v", f)
	}
}

func TestScopeIDOfAnotherConnection(t *testing.T) {
	ts := startServer(t, nil)
	a := dialRaw(t, ts.url, nil)
	b := dialRaw(t, ts.url, nil)
	scopeA := a.connect("s", "echo")
	scopeB := b.connect("s", "echo")
	// Same chatId on both connections, each with its own session; B
	// presents A's scope id.
	if f := last(b.chat("s", scopeA, "steal")); f.Type != "Failed" || f.text() != "SessionNotActive" {
		t.Fatalf("got %v", f)
	}
	// A session of the same connection cannot use another's scope either.
	b.connect("t", "echo")
	if f := last(b.chat("t", scopeB, "steal")); f.text() != "SessionNotActive" {
		t.Fatalf("got %v", f)
	}
	// Both sessions still work with their own scope.
	if f := a.chat("s", scopeA, "mine"); f[0].text() != "mine" {
		t.Fatalf("got %v", f)
	}
	if f := b.chat("s", scopeB, "mine"); f[0].text() != "mine" {
		t.Fatalf("got %v", f)
	}
}

func TestMalformedFrames(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("ok", "echo")

	dropped := []string{
		`not json`, `[]`, `null`, `"x"`, `42`, `{}`, `{"type":"Connect"}`,
		`{"chatId":5,"type":"Connect"}`, `{"chatId":"","type":"Connect"}`, `{"chatId":null}`, "{\"chatId\":\"\xff",
	}
	for _, d := range dropped {
		c.sendRaw(d)
	}
	// Dropped frames have no reply: the next one is for this request.
	if f := c.chat("ok", scope, "still here"); f[0].text() != "still here" {
		t.Fatalf("got %v", f)
	}

	failed := []struct{ frame, detail string }{
		{`{"chatId":"x"}`, "missing type"},
		{`{"chatId":"x","type":7}`, "type must be a string"},
		{`{"chatId":"x","type":"Hello"}`, `unknown frame type "Hello"`},
		{`{"chatId":"x","type":"Connect","route":5}`, "route must be a string or null"},
		{`{"chatId":"ok","type":"ChatRouteMessage","data":{}}`, "missing or invalid scopeId"},
		{`{"chatId":"ok","type":"ChatRouteMessage","scopeId":1,"data":{}}`, "missing or invalid scopeId"},
		{`{"chatId":"ok","type":"ChatRouteMessage","scopeId":"s","data":[1]}`, "data must be a JSON object"},
		{`{"chatId":"ok","type":"ChatRouteMessage","scopeId":"s","data":"text"}`, "data must be a JSON object"},
		{`{"chatId":"ok","type":"ChatRouteMessage","scopeId":"s","data":{"userMessage":[3]}}`, `must be a string`},
		{`{"chatId":"x","type":"Connect","requestId":{"a":1}}`, "requestId must be a string or a number"},
		{`{"chatId":"ok","type":"ChatRouteMessage","scopeId":"s","data":{"a":}}`, "invalid JSON"},
	}
	for _, tc := range failed {
		c.sendRaw(tc.frame)
		f := c.read()
		if f.Type != "Failed" || f.text() != "BadRequest" || !strings.Contains(f.Detail, tc.detail) {
			t.Fatalf("%s: got %v, want Failed BadRequest with %q", tc.frame, f, tc.detail)
		}
	}
}

func TestMalformedFrameWithRequestID(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	c.sendRaw(`{"chatId":"x","type":"ChatRouteMessage","requestId":"r9"}`)
	if f := c.read(); f.text() != "BadRequest" || string(f.RequestID) != `"r9"` {
		t.Fatalf("got %v", f)
	}
	// Binary frames are read as text.
	if err := c.ws.Write(context.Background(), websocket.MessageBinary, []byte(`{"chatId":"b","type":"Connect","route":"echo"}`)); err != nil {
		t.Fatal(err)
	}
	c.expectNext("b", "Completed")
}

func TestRolesAndAuthentication(t *testing.T) {
	leaktest.Check(t)
	auth := func(r *http.Request) (chat.Principal, error) {
		switch r.Header.Get("Authorization") {
		case "":
			return nil, nil
		case "Bearer admin":
			return chat.User{ID: "ada", Roles: []string{"admin"}}, nil
		case "Bearer user":
			return chat.User{ID: "bob"}, nil
		}
		return nil, errors.New("bad token")
	}
	ts := startServer(t, &ServerOptions{Authenticator: auth})

	for _, tc := range []struct{ token, who, admin string }{
		{"", "anonymous", "Forbidden"},
		{"Bearer user", "bob", "Forbidden"},
		{"Bearer admin", "ada", "welcome, admin"},
	} {
		h := http.Header{}
		if tc.token != "" {
			h.Set("Authorization", tc.token)
		}
		c := dialRaw(t, ts.url, h)
		scope := c.connect("w", "whoami")
		if f := c.chat("w", scope, ""); f[0].text() != tc.who {
			t.Errorf("%q: whoami %v", tc.token, f)
		}
		scope = c.connect("a", "admin")
		f := c.chat("a", scope, "")
		if f[0].text() != tc.admin {
			t.Errorf("%q: admin %v, want %s", tc.token, f, tc.admin)
		}
	}

	// A rejected token gets no websocket.
	_, resp, err := websocket.Dial(context.Background(), ts.url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer forged"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged token: %v %v", resp, err)
	}
	// The Go client: same.
	if _, err := Dial(context.Background(), ts.url, &DialOptions{Header: http.Header{"Authorization": {"Bearer forged"}}}); err == nil {
		t.Fatal("Dial with a forged token succeeded")
	}
	client, err := Dial(context.Background(), ts.url, &DialOptions{Header: http.Header{"Authorization": {"Bearer admin"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var got string
	s, err := client.Builder().OnMessage(func(m string) { got = m }).Connect(context.Background(), "admin")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(context.Background(), ""); err != nil || got != "welcome, admin" {
		t.Fatalf("admin via Dial: %q, %v", got, err)
	}
}

func TestOriginCheck(t *testing.T) {
	dial := func(url, origin string) (*http.Response, error) {
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		wc, resp, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: h})
		if err == nil {
			wc.CloseNow()
		}
		return resp, err
	}
	ts := startServer(t, nil)
	host := strings.TrimPrefix(ts.http.URL, "http://")
	if _, err := dial(ts.url, "http://"+host); err != nil {
		t.Errorf("same origin: %v", err)
	}
	if _, err := dial(ts.url, ""); err != nil {
		t.Errorf("no origin (not a browser): %v", err)
	}
	if resp, err := dial(ts.url, "http://evil.example"); err == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign origin: %v %v", resp, err)
	}

	ts2 := startServer(t, &ServerOptions{OriginPatterns: []string{"*.example.com"}})
	if _, err := dial(ts2.url, "https://app.example.com"); err != nil {
		t.Errorf("allowed origin: %v", err)
	}
	if resp, err := dial(ts2.url, "https://example.org"); err == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("origin outside the allow-list: %v %v", resp, err)
	}
}

func TestMaxFrameSize(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, &ServerOptions{MaxFrameSize: 1024})
	other := dialRaw(t, ts.url, nil)
	otherScope := other.connect("o", "echo")
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("s", "echo")
	// Just below the limit works.
	text := strings.Repeat("a", 900)
	if f := c.chat("s", scope, text); f[0].text() != text {
		t.Fatalf("got %v", f)
	}
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": scope, "data": map[string]any{"userMessage": strings.Repeat("a", 2000)}})
	_, err := c.readErr(5 * time.Second)
	if !isCloseStatus(err, websocket.StatusMessageTooBig) {
		t.Fatalf("oversized frame: %v, want close 1009", err)
	}
	// The other connection is unaffected; the closed one's session is gone.
	if f := other.chat("o", otherScope, "fine"); f[0].text() != "fine" {
		t.Fatalf("got %v", f)
	}
	deadline := time.Now().Add(5 * time.Second)
	for ts.router.Stats().Conversations != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", ts.router.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMaxSessions(t *testing.T) {
	ts := startServer(t, &ServerOptions{MaxSessions: 2})
	c := dialRaw(t, ts.url, nil)
	c.connect("a", "echo")
	c.connect("b", "echo")
	c.send(map[string]any{"type": "Connect", "chatId": "c", "route": "echo"})
	if f := c.expectNext("c", "Failed"); f.text() != "TooManySessions" {
		t.Fatalf("got %v", f)
	}
	// Another connection has its own limit.
	dialRaw(t, ts.url, nil).connect("c", "echo")
	// Ending one makes room.
	c.send(map[string]any{"type": "Disconnect", "chatId": "a"})
	c.connect("c", "echo")
}

func TestMaxQueued(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, &ServerOptions{MaxQueued: 1})
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("g", "gate")
	for i, text := range []string{"one", "two", "three"} {
		c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "g", "scopeId": scope, "requestId": i + 1, "data": map[string]any{"userMessage": text}})
	}
	if got := recv(t, ts.routes.entered); got != "one" {
		t.Fatalf("entered %q", got)
	}
	// "one" runs, "two" waits, "three" is refused at once.
	f := c.read()
	if f.Type != "Failed" || f.text() != "TooManyRequests" || string(f.RequestID) != "3" {
		t.Fatalf("got %v", f)
	}
	ts.routes.gate <- struct{}{}
	fs := c.until("g")
	if fs[0].text() != "passed one" || string(last(fs).RequestID) != "1" {
		t.Fatalf("got %v", fs)
	}
	if got := recv(t, ts.routes.entered); got != "two" {
		t.Fatalf("entered %q", got)
	}
	ts.routes.gate <- struct{}{}
	if fs := c.until("g"); fs[0].text() != "passed two" {
		t.Fatalf("got %v", fs)
	}
}

func TestSessionsRunIndependently(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	slow := c.connect("slow", "gate")
	fast := c.connect("fast", "echo")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "slow", "scopeId": slow, "data": map[string]any{"userMessage": "wait"}})
	recv(t, ts.routes.entered)
	// The slow session blocks; the fast one on the same connection answers.
	for _, text := range []string{"a", "b", "c"} {
		if f := c.chat("fast", fast, text); f[0].text() != text {
			t.Fatalf("got %v", f)
		}
	}
	ts.routes.gate <- struct{}{}
	if fs := c.until("slow"); fs[0].text() != "passed wait" {
		t.Fatalf("got %v", fs)
	}
}

func TestRequestsOfASessionInOrder(t *testing.T) {
	ts := startServer(t, &ServerOptions{MaxQueued: 100})
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("s", "count")
	const n = 50
	for i := range n {
		c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": scope, "requestId": i, "data": map[string]any{"count": i}})
	}
	for i := range n {
		fs := c.until("s")
		var obj struct{ Double int }
		if err := json.Unmarshal(fs[0].Data, &obj); err != nil || obj.Double != 2*i || string(last(fs).RequestID) != jsonInt(i) {
			t.Fatalf("request %d: %v (%v)", i, fs, err)
		}
	}
}

func jsonInt(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestFramesNeverInterleave runs many streaming sessions on one connection
// at once: every frame must parse and each session's frames stay in order.
func TestFramesNeverInterleave(t *testing.T) {
	ts := startServer(t, &ServerOptions{MaxSessions: 64})
	c := dialRaw(t, ts.url, nil)
	const sessions, words = 32, 40
	scopes := map[string]string{}
	for i := range sessions {
		id := "s" + jsonInt(i)
		scopes[id] = c.connect(id, "stream")
	}
	text := strings.TrimSpace(strings.Repeat("word ", words))
	for id, scope := range scopes {
		c.send(map[string]any{"type": "ChatRouteMessage", "chatId": id, "scopeId": scope, "data": map[string]any{"userMessage": text}})
	}
	streams := map[string]int{}
	for done := 0; done < sessions; {
		f := c.read()
		switch f.Type {
		case "Stream":
			streams[f.ChatID]++
		case "Completed":
			if streams[f.ChatID] != words {
				t.Fatalf("%s completed after %d chunks", f.ChatID, streams[f.ChatID])
			}
			done++
		default:
			t.Fatalf("got %v", f)
		}
	}
}

func TestIdleExpiry(t *testing.T) {
	leaktest.Check(t)
	// The idle time is long beside the activity's pauses (a tenth of
	// it), so that a loaded machine's stalls do not make a pause one.
	const idle = 2 * time.Second
	ts := startServer(t, &ServerOptions{IdleTimeout: idle})
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("s", "echo")
	// Activity keeps it alive past the idle time.
	for start := time.Now(); time.Since(start) < idle*3/2; {
		time.Sleep(idle / 10)
		if f := c.chat("s", scope, "x"); f[0].text() != "x" {
			t.Fatalf("got %v after %v", f, time.Since(start))
		}
	}
	waitNoConversations(t, ts.router) // expires
	if f := last(c.chat("s", scope, "x")); f.Text() != "SessionNotActive" {
		t.Fatalf("got %v", f)
	}
	// A connection with no session is closed after the idle time.
	_, err := c.readErr(idle + 20*time.Second)
	if !isCloseStatus(err, websocket.StatusNormalClosure) {
		t.Fatalf("idle connection: %v", err)
	}
}

func (f frame) Text() string { return f.text() }

func TestConnectionCloseEndsEverything(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	top := c.connect("m", "")
	c.chat("m", top, "build bow") // a nested scope
	c.connect("e", "echo")
	g := c.connect("g", "gate")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "g", "scopeId": g, "data": map[string]any{"userMessage": "hold"}})
	recv(t, ts.routes.entered)
	if st := ts.router.Stats(); st.Conversations != 3 || st.Scopes != 4 {
		t.Fatalf("stats %+v", st)
	}
	c.ws.CloseNow() // lost, not closed: the running request is cancelled
	waitNoConversations(t, ts.router)
	deadline := time.Now().Add(5 * time.Second)
	for ts.Connections() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("connection not released")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestGracefulShutdown(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	g := c.connect("g", "gate")
	e := c.connect("e", "echo")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "g", "scopeId": g, "data": map[string]any{"userMessage": "in flight"}})
	recv(t, ts.routes.entered)

	done := make(chan error, 1)
	go func() { done <- ts.Shutdown(context.Background()) }()
	// New requests are refused while the one in flight finishes.
	deadline := time.Now().Add(5 * time.Second)
	for {
		f := last(c.chat("e", e, "late"))
		if f.Type == "Failed" && f.text() == "ShuttingDown" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %v", f)
		}
	}
	// New connections are refused.
	if _, resp, err := websocket.Dial(context.Background(), ts.url, nil); err == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial during shutdown: %v", err)
	}
	ts.routes.gate <- struct{}{}
	if fs := c.until("g"); fs[0].text() != "passed in flight" || last(fs).Type != "Completed" {
		t.Fatalf("got %v", fs)
	}
	_, err := c.readErr(5 * time.Second)
	if !isCloseStatus(err, websocket.StatusGoingAway) {
		t.Fatalf("close: %v, want 1001", err)
	}
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	waitNoConversations(t, ts.router)
}

func TestShutdownDeadline(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	g := c.connect("g", "gate")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "g", "scopeId": g, "data": map[string]any{"userMessage": "stuck"}})
	recv(t, ts.routes.entered)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := ts.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second { // the route is stuck for good: generous
		t.Fatalf("shutdown took %v", d)
	}
	waitNoConversations(t, ts.router)
}

func TestAssets(t *testing.T) {
	router, _ := newTestRouter(t)
	srv := NewServer(router, &ServerOptions{Logger: quietLogger()})
	mux := http.NewServeMux()
	mux.Handle("/", srv)
	mux.Handle("/app/", srv)                               // a prefix, kept
	mux.Handle("/strip/", http.StripPrefix("/strip", srv)) // a prefix, stripped
	hs := httptest.NewServer(mux)
	defer hs.Close()
	for _, tc := range []struct{ path, ctype, contains string }{
		{ScriptPath, "text/javascript", "class ChatScopesClient"},
		{ModulePath, "text/javascript", "export class ChatScopesClient"},
		{TypeScriptPath, "application/typescript", "export class ChatScopesClient"},
		{"/app" + ScriptPath, "text/javascript", "class ChatScopesClient"},
		{"/strip" + ModulePath, "text/javascript", "export class SessionBuilder"},
	} {
		resp, err := http.Get(hs.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) || !strings.Contains(string(body), tc.contains) {
			t.Errorf("%s: %d %s", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		req, _ := http.NewRequest(http.MethodGet, hs.URL+tc.path, nil)
		req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotModified {
			t.Errorf("%s with its ETag: %d", tc.path, resp.StatusCode)
		}
	}
	for _, p := range []string{"/", "/_chat/javascript/other.js", "/_chat"} {
		resp, err := http.Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
	}
	resp, err := http.Post(hs.URL+ScriptPath, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
	// A plain GET of the endpoint is not an upgrade.
	resp, err = http.Get(hs.URL + RoutesPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 || resp.StatusCode == 101 {
		t.Errorf("GET %s: %d", RoutesPath, resp.StatusCode)
	}
}

func TestConcurrentConnections(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			c, err := Dial(ctx, ts.url, &DialOptions{Logger: quietLogger()})
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			var got []string
			s, err := c.Builder().OnMessage(func(m string) { got = append(got, m) }).Connect(ctx, "")
			if err != nil {
				t.Error(err)
				return
			}
			for j := range 10 {
				text := jsonInt(i*100 + j)
				if err := s.Chat(ctx, text); err != nil {
					t.Error(err)
					return
				}
				if want := "menu " + jsonInt(j+1) + ": " + text; got[len(got)-1] != want {
					t.Errorf("got %q, want %q", got[len(got)-1], want)
					return
				}
			}
		})
	}
	wg.Wait()
	waitNoConversations(t, ts.router)
}

// TestLoneEventIsNotHeldBack: an event is held back only briefly waiting
// for the next one or the terminator.
func TestLoneEventIsNotHeldBack(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("t", "thinkgate")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "t", "scopeId": scope, "data": map[string]any{}})
	if f := c.read(); f.Type != "Thinking" || f.text() != "waiting" {
		t.Fatalf("got %v", f)
	}
	ts.routes.gate <- struct{}{}
	if fs := c.until("t"); fs[0].text() != "passed" || last(fs).Type != "Completed" {
		t.Fatalf("got %v", fs)
	}
}

// TestSlowClientIsDisconnected: a client that does not read is cut off
// after the write timeout, and everything it held is freed.
func TestSlowClientIsDisconnected(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, &ServerOptions{WriteTimeout: 300 * time.Millisecond})
	other := dialRaw(t, ts.url, nil)
	otherScope := other.connect("o", "echo")
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("f", "flood")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "f", "scopeId": scope, "data": map[string]any{}})
	// c never reads.
	deadline := time.Now().Add(10 * time.Second)
	for ts.Connections() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the slow client is still connected (%d connections)", ts.Connections())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if f := other.chat("o", otherScope, "still fine"); f[0].text() != "still fine" {
		t.Fatalf("got %v", f)
	}
	deadline = time.Now().Add(5 * time.Second)
	for ts.router.Stats().Conversations != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", ts.router.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
