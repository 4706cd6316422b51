package ws

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
