package ws

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/coder/websocket"
)

// The adversarial checks of issue 10, run again over a real websocket with
// a raw client: odd frames are answered or dropped, never crash or wedge
// the connection, and every answer is the documented one.

// probe checks that the connection is alive and that nothing was sent
// since the last frame read: a Connect's Completed is the next frame.
func (c *rawConn) probe(n int) {
	c.t.Helper()
	id := fmt.Sprintf("probe-%d", n)
	c.send(map[string]any{"type": "Connect", "chatId": id, "route": "echo"})
	f := c.read()
	if f.ChatID != id || f.Type != "Completed" {
		c.t.Fatalf("probe: got %v, want the Completed of %s", f, id)
	}
	c.send(map[string]any{"type": "Disconnect", "chatId": id})
}

func TestAdversarialFramesAreDroppedQuietly(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	for i, fr := range []string{
		`[]`, `"Connect"`, `1`, `null`, `true`, ``, ` `, `{`, `}`, `{}`,
		`{"type":"Connect"}`,
		`{"type":"Connect","chatId":""}`,
		`{"type":"Connect","chatId":7}`,
		`{"type":"Connect","chatId":null}`,
		`{"type":"Connect","chatId":["a"]}`,
		`{"type":"Connect","chatId":{"a":1}}`,
		`[{"type":"Connect","chatId":"x"}]`,
		"\xff\xfe",
		`{"type":"Connect","chatId":"x"` + strings.Repeat(`,"k":1`, 5000) + `,"chatId":""}`,
	} {
		c.sendRaw(fr)
		c.probe(i)
	}
	waitNoConversations(t, ts.router)
}

func TestAdversarialFramesAreAnswered(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	for i, tc := range []struct{ frame, detail string }{
		{`{"chatId":"a"}`, "missing type"},
		{`{"chatId":"a","type":7}`, "type must be a string"},
		{`{"chatId":"a","type":"Nope"}`, "unknown frame type"},
		{`{"chatId":"a","type":"Connect","route":7}`, "route must be"},
		{`{"chatId":"a","type":"Connect","requestId":{"x":1}}`, "requestId must be a string or a number"},
		{`{"chatId":"a","type":"Connect","requestId":[1]}`, "requestId must be a string or a number"},
		{`{"chatId":"a","type":"Connect","requestId":true}`, "requestId must be a string or a number"},
		{`{"chatId":"a","type":"Connect","requestId":"` + strings.Repeat("r", 200) + `"}`, "requestId must be a string or a number"},
		{`{"chatId":"a","type":"ChatRouteMessage","scopeId":"s","data":[1]}`, "data must be a JSON object"},
		{`{"chatId":"a","type":"ChatRouteMessage","scopeId":"s","data":"hi"}`, "data must be a JSON object"},
		{`{"chatId":"a","type":"ChatRouteMessage","scopeId":7,"data":{}}`, "scopeId"},
		{`{"chatId":"a","type":"ChatRouteMessage","data":{}}`, "scopeId"},
		{`{"chatId":"a","type":"Connect","resume":"x"}`, "resume must be"},
		{`{"chatId":"a","type":"Connect","resume":[]}`, "resume must be"},
		{`{"chatId":"a","type":"Connect","resume":{}}`, "resume must be"},
		{`{"chatId":"a","type":"Connect","resume":{"conversationId":1,"token":2}}`, "resume must be"},
		{`{"chatId":"a","type":"Connect","resume":{"conversationId":"x"}}`, "resume must be"},
		{`{"chatId":"a","type":"Connect","resume":{"conversationId":"","token":"t"}}`, "resume must be"},
		{`{"chatId":"a","type":"Connect","data":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, "nested more than 10000"},
		{`{"chatId":"a","type":"Connect",` + strings.Repeat(" ", 10) + `"data":{"x":}}`, "invalid JSON"},
	} {
		c.sendRaw(tc.frame)
		f := c.expectNext("a", "Failed")
		if f.text() != "BadRequest" || !strings.Contains(f.Detail, tc.detail) {
			t.Errorf("%d %.80s: got %v, want BadRequest with %q", i, tc.frame, f, tc.detail)
		}
		c.probe(i)
	}
}

// A resume on a server that keeps no conversation is refused like the
// resume of an unknown conversation (it was ServerError, logged at ERROR).
func TestAdversarialResumeOfUnknown(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	c.sendRaw(`{"chatId":"a","type":"Connect","resume":{"conversationId":"nope","token":"` + strings.Repeat("t", 10000) + `"}}`)
	f := c.expectNext("a", "Failed")
	if f.text() != "ResumeRefused" {
		t.Fatalf("got %v", f)
	}
	c.probe(0)
}

// Binary frames are read as text frames.
func TestAdversarialBinaryFrame(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	ctx := context.Background()
	if err := c.ws.Write(ctx, websocket.MessageBinary, []byte(`{"type":"Connect","chatId":"b","route":"echo","requestId":1}`)); err != nil {
		t.Fatal(err)
	}
	f := c.expectNext("b", "Completed")
	if string(f.RequestID) != "1" {
		t.Fatalf("got %v", f)
	}
	scope := f.text()
	if err := c.ws.Write(ctx, websocket.MessageBinary, []byte(`{"type":"ChatRouteMessage","chatId":"b","scopeId":"`+scope+`","data":{"userMessage":"bin"}}`)); err != nil {
		t.Fatal(err)
	}
	if fs := c.until("b"); fs[0].text() != "bin" {
		t.Fatalf("got %v", fs)
	}
}

// Keys written with escapes are the same keys: JSON says so, and Quarkus'
// Jackson reads them so.
func TestAdversarialEscapedKeys(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	c.sendRaw(`{"t\u0079pe":"Connect","chat\u0049d":"e","route":"echo"}`)
	f := c.expectNext("e", "Completed")
	c.sendRaw(`{"type":"ChatRouteMessage","chatId":"e","scopeId":"` + f.text() + `","data":{"user\u004dessage":"esc"}}`)
	if fs := c.until("e"); fs[0].text() != "esc" {
		t.Fatalf("got %v", fs)
	}
}

// Duplicate keys: the last one wins, as in encoding/json and Jackson.
func TestAdversarialDuplicateKeys(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	c.sendRaw(`{"type":"Disconnect","chatId":"x","type":"Connect","chatId":"d","route":"nope","route":"echo"}`)
	f := c.expectNext("d", "Completed")
	c.sendRaw(`{"type":"ChatRouteMessage","chatId":"d","scopeId":"` + f.text() + `","data":{"userMessage":"one","userMessage":"two"}}`)
	if fs := c.until("d"); fs[0].text() != "two" {
		t.Fatalf("got %v", fs)
	}
}

// chatIds at the edges: 128 bytes of multi-byte characters, escapes that
// decode within the limit, unicode.
func TestAdversarialChatIDEdges(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	for _, id := range []string{
		strings.Repeat("é", MaxChatIDLength/2),
		"with \"quotes\" and \\ and \n and </script>",
		"\u2028\u2029",
		" ",
	} {
		scope := c.connect(id, "echo")
		if fs := c.chat(id, scope, "hi"); fs[0].text() != "hi" || fs[0].ChatID != id {
			t.Fatalf("%q: got %v", id, fs)
		}
	}
	// 129 bytes of which the last character is multi-byte.
	id := strings.Repeat("a", MaxChatIDLength-1) + "é"
	c.send(map[string]any{"type": "Connect", "chatId": id})
	if f := c.expectNext("", "Failed"); f.text() != "BadRequest" {
		t.Fatalf("got %v", f)
	}
	// An escaped id of 128 bytes once decoded, longer as written.
	esc := strings.Repeat(`\u0061`, MaxChatIDLength)
	c.sendRaw(`{"type":"Connect","chatId":"` + esc + `","route":"echo"}`)
	if f := c.read(); f.ChatID != strings.Repeat("a", MaxChatIDLength) || f.Type != "Completed" {
		t.Fatalf("got %v", f)
	}
}

// Data of the wrong type for every parameter kind of internal/e2e's
// routes fails with BadRequest naming the parameter, with the scopeId,
// and the session keeps working.
func TestAdversarialParameterTypes(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	good := map[string]string{
		"lines":    `[{"item":"tea","quantity":2,"price":"150"}]`,
		"customer": `{"name":"Ann","street":"Main","tags":["a"]}`,
		"due":      `"2025-01-02T03:04:05Z"`,
		"gift":     `true`,
		"rate":     `0.5`,
		"notes":    `{"a":[1,2]}`,
	}
	orderData := func(key, val string) string {
		var parts []string
		for _, k := range []string{"lines", "customer", "due", "gift", "rate", "notes"} {
			v := good[k]
			if k == key {
				v = val
			}
			parts = append(parts, `"`+k+`":`+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	scope := c.connect("o", "order")
	send := func(chatID, scope, data string) []frame {
		c.sendRaw(`{"type":"ChatRouteMessage","chatId":"` + chatID + `","scopeId":"` + scope + `","data":` + data + `}`)
		return c.until(chatID)
	}
	if f := last(send("o", scope, orderData("", ""))); f.Type != "Completed" {
		t.Fatalf("good order: %v", f)
	}
	for _, tc := range []struct{ param, val string }{
		{"lines", `"tea"`}, {"lines", `{}`}, {"lines", `[1]`}, {"lines", `[{"price":150}]`}, {"lines", `[{"quantity":"2"}]`},
		{"customer", `1`}, {"customer", `"Ann"`}, {"customer", `{"tags":"a"}`}, {"customer", `{"street":7}`},
		{"due", `"tomorrow"`}, {"due", `1`}, {"due", `"2025-13-40T00:00:00Z"`},
		{"gift", `"yes"`}, {"gift", `1`}, {"gift", `"true"`}, {"gift", `[]`},
		{"rate", `"NaN"`}, {"rate", `"Infinity"`}, {"rate", `"abc"`}, {"rate", `true`}, {"rate", `""`}, {"rate", `"1e400"`}, {"rate", `{}`},
		{"notes", `[1]`}, {"notes", `{"a":"1"}`}, {"notes", `{"a":[1.5]}`},
	} {
		fs := send("o", scope, orderData(tc.param, tc.val))
		f := last(fs)
		if f.text() != "BadRequest" || !strings.Contains(f.Detail, `"`+tc.param+`"`) || f.ScopeID != scope || len(fs) != 1 {
			t.Errorf("%s=%s: got %v", tc.param, tc.val, fs)
		}
	}
	count := c.connect("c", "count")
	for _, val := range []string{`"three"`, `"4.5"`, `"3.0"`, `"1e2"`, `""`, `" "`, `"99999999999999999999"`, `99999999999999999999`, `true`, `[3]`, `{"n":3}`, `"0x10"`, `"+3"`, `"3 3"`, `"\"3\""`} {
		fs := send("c", count, `{"count":`+val+`}`)
		if f := last(fs); f.text() != "BadRequest" || !strings.Contains(f.Detail, `"count"`) || f.ScopeID != count {
			t.Errorf("count=%s: got %v", val, fs)
		}
	}
	for _, val := range []string{`[]`, `{}`, `["a"]`} {
		fs := send("c", count, `{"label":`+val+`}`)
		if f := last(fs); f.text() != "BadRequest" || !strings.Contains(f.Detail, `"label"`) {
			t.Errorf("label=%s: got %v", val, fs)
		}
	}
	for val, want := range map[string]string{`" 3 "`: `6`, `"-0"`: `0`, `3`: `6`, `null`: `0`} {
		fs := send("c", count, `{"count":`+val+`,"label":-1.50}`)
		if f := fs[0]; f.Type != "Object" || !strings.Contains(string(f.Data), `"double":`+want) || !strings.Contains(string(f.Data), `"-1.50"`) {
			t.Errorf("count=%s: got %v", val, fs)
		}
	}
	echo := c.connect("e", "echo")
	for val, want := range map[string]string{`42`: "42", `true`: "true", `-1e3`: "-1e3"} {
		fs := send("e", echo, `{"userMessage":`+val+`}`)
		if fs[0].text() != want || last(fs).Type != "Completed" {
			t.Errorf("userMessage=%s: got %v", val, fs)
		}
	}
	b := c.connect("b", "builder")
	if fs := send("b", b, `{"userMessage":"axe","damage":"x"}`); last(fs).text() != "BadRequest" || !strings.Contains(last(fs).Detail, `"damage"`) {
		t.Errorf("damage: got %v", fs)
	}
	if fs := send("b", b, `{"userMessage":"axe","damage":"3"}`); last(fs).Type != "Completed" {
		t.Errorf("damage \"3\": got %v", fs)
	}
}

// A Disconnect while a route streams: once the server has read the
// Disconnect (a later Connect is answered), nothing more of that chat
// comes, not even a Failed; queued requests are dropped too.
func TestAdversarialDisconnectDuringFlood(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("f", "flood")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "f", "scopeId": scope, "data": map[string]any{}})
	for range 5 {
		c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "f", "scopeId": scope, "data": map[string]any{}})
	}
	if f := c.read(); f.ChatID != "f" || f.Type != "Message" {
		t.Fatalf("got %v", f)
	}
	c.send(map[string]any{"type": "Disconnect", "chatId": "f"})
	c.send(map[string]any{"type": "Connect", "chatId": "after", "route": "echo"})
	for {
		f := c.read()
		if f.ChatID == "after" {
			break
		}
		if f.ChatID != "f" || f.Type != "Message" {
			t.Fatalf("got %v", f)
		}
	}
	c.probe(0)
	c.probe(1)
	waitFor(t, "one conversation", func() bool { return ts.router.Stats().Conversations == 1 })
}

// A flood of Connects and of requests on one connection: the limits
// answer each one, the connection keeps working, and everything is
// returned when it closes.
func TestAdversarialFlood(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	const n = 500
	for i := range n {
		c.send(map[string]any{"type": "Connect", "chatId": fmt.Sprint(i), "route": "gate", "requestId": i})
	}
	scopes := map[string]string{}
	refused := 0
	for range n {
		f := c.read()
		switch {
		case f.Type == "Completed":
			scopes[f.ChatID] = f.text()
		case f.Type == "Failed" && f.text() == "TooManySessions" && string(f.RequestID) == f.ChatID:
			refused++
		default:
			t.Fatalf("got %v", f)
		}
	}
	if len(scopes) != DefaultMaxSessions || refused != n-DefaultMaxSessions {
		t.Fatalf("%d sessions, %d refused", len(scopes), refused)
	}
	scope := scopes["0"]
	for i := range 100 {
		c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "0", "scopeId": scope, "data": map[string]any{"userMessage": fmt.Sprint(i)}, "requestId": i})
	}
	recv(t, ts.routes.entered)
	for i := 1 + DefaultMaxQueued; i < 100; i++ {
		if f := c.expectNext("0", "Failed"); f.text() != "TooManyRequests" || string(f.RequestID) != fmt.Sprint(i) || f.ScopeID != scope {
			t.Fatalf("got %v", f)
		}
	}
	for i := range 1 + DefaultMaxQueued {
		ts.routes.gate <- struct{}{}
		if fs := c.until("0"); fs[0].text() != fmt.Sprint("passed ", i) || string(last(fs).RequestID) != fmt.Sprint(i) {
			t.Fatalf("got %v", fs)
		}
		if i < DefaultMaxQueued {
			recv(t, ts.routes.entered)
		}
	}
	c.ws.Close(websocket.StatusNormalClosure, "")
	waitNoConversations(t, ts.router)
}
