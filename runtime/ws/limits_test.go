package ws

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// Adversarial checks of the server's global bounds: connections, the
// bytes of the requests waiting on a connection, the length of chatIds,
// JSON nesting, and what a Failed frame tells the client.

// Connections beyond MaxConnections are refused with 503 and a WARN that
// names the option; closing one makes room.
func TestMaxConnections(t *testing.T) {
	leaktest.Check(t)
	var logs lockedBuffer
	ts := startServer(t, &ServerOptions{MaxConnections: 2, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	a := dialRaw(t, ts.url, nil)
	b := dialRaw(t, ts.url, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wc, resp, err := websocket.Dial(ctx, ts.url, nil)
	if err == nil {
		wc.CloseNow()
		t.Fatal("a third connection was accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("response %v, err %v; want 503", resp, err)
	}
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "ServerOptions.MaxConnections") {
		t.Fatalf("log:\n%s", out)
	}
	// The connections admitted work.
	for _, c := range []*rawConn{a, b} {
		scope := c.connect("e", "echo")
		if f := c.chat("e", scope, "hi"); f[0].text() != "hi" {
			t.Fatalf("got %v", f)
		}
	}
	// Closing one makes room for another.
	a.ws.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(5 * time.Second)
	for ts.Connections() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections, want 1", ts.Connections())
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := dialRaw(t, ts.url, nil)
	c.connect("e", "echo")
}

func TestLimitDefaults(t *testing.T) {
	o := (*ServerOptions)(nil).withDefaults()
	if o.MaxConnections != DefaultMaxConnections || o.MaxQueuedBytes != DefaultMaxQueuedBytes ||
		o.RequestTimeout != DefaultRequestTimeout || o.PingInterval != DefaultPingInterval {
		t.Fatalf("defaults %+v", o)
	}
	o = (&ServerOptions{MaxConnections: -1, MaxQueuedBytes: -5, RequestTimeout: -1, PingInterval: -1}).withDefaults()
	if o.MaxConnections != -1 || o.MaxQueuedBytes != -1 || o.RequestTimeout > 0 || o.PingInterval > 0 {
		t.Fatalf("disabled %+v", o)
	}
}

// The attack: 64 sessions on one connection, each sent 17
// requests of 60 KB while its route is busy. Without a byte budget the
// connection pinned 64 × 17 × 60 KB (about 66 MB); now the requests
// waiting hold at most MaxQueuedBytes, every request beyond it is refused
// with TooManyRequests at once (never silently dropped), and the
// connection goes on working.
func TestQueuedBytesAreBounded(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil) // the defaults: 64 sessions, 16 queued, 1 MiB
	c := dialRaw(t, ts.url, nil)
	const sessions, perSession = DefaultMaxSessions, DefaultMaxQueued + 1
	scopes := make([]string, sessions)
	for i := range scopes {
		scopes[i] = c.connect(fmt.Sprint("s", i), "gate")
	}
	// Read while writing: the refusals come back as the requests go in.
	frames := make(chan frame, sessions*perSession+16)
	readErr := make(chan error, 1)
	go func() {
		for {
			f, err := c.readErr(30 * time.Second)
			if err != nil {
				readErr <- err
				return
			}
			frames <- f
		}
	}()
	payload := strings.Repeat("x", 60_000)
	for i := range sessions {
		for j := range perSession {
			c.sendRaw(fmt.Sprintf(`{"type":"ChatRouteMessage","chatId":"s%d","scopeId":%q,"requestId":"%d-%d","data":{"userMessage":%q}}`,
				i, scopes[i], i, j, payload))
		}
	}
	// The reply to a request of no session marks the end of the refusals.
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "marker", "scopeId": "x", "data": map[string]any{}})
	next := func() frame {
		t.Helper()
		select {
		case f := <-frames:
			return f
		case err := <-readErr:
			t.Fatalf("read: %v", err)
		}
		return frame{}
	}
	refused := 0
	for {
		f := next()
		if f.ChatID == "marker" {
			break
		}
		if f.Type != "Failed" || f.text() != "TooManyRequests" || !strings.Contains(f.Detail, "bytes") || f.ScopeID == "" {
			t.Fatalf("got %v, want Failed TooManyRequests for the byte budget, with the scopeId", f)
		}
		refused++
	}
	sc := serverConn(t, ts)
	waiting := sessions*perSession - sessions - refused // one runs per session
	if q := sc.queued.Load(); q > DefaultMaxQueuedBytes || q < int64(waiting*len(payload)) {
		t.Fatalf("%d bytes waiting for %d requests; the budget is %d", q, waiting, DefaultMaxQueuedBytes)
	}
	if waiting < 1 || waiting*len(payload) > DefaultMaxQueuedBytes {
		t.Fatalf("%d requests of %d bytes waiting, budget %d", waiting, len(payload), DefaultMaxQueuedBytes)
	}
	t.Logf("%d requests running, %d waiting (%d bytes), %d refused", sessions, waiting, sc.queued.Load(), refused)
	// Every request accepted completes.
	total := sessions + waiting
	go func() {
		for range total {
			ts.routes.gate <- struct{}{}
		}
	}()
	for completed := 0; completed < total; {
		switch f := next(); f.Type {
		case "Message":
		case "Completed":
			completed++
		default:
			t.Fatalf("got %v", f)
		}
	}
	if q := sc.queued.Load(); q != 0 {
		t.Fatalf("%d bytes still counted as waiting", q)
	}
	// The connection works on.
	c.send(map[string]any{"type": "Disconnect", "chatId": "s0"})
	c.send(map[string]any{"type": "Connect", "chatId": "e", "route": "echo"})
	f := next()
	if f.ChatID != "e" || f.Type != "Completed" {
		t.Fatalf("got %v", f)
	}
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "e", "scopeId": f.text(), "data": map[string]any{"userMessage": "hi"}})
	if f := next(); f.ChatID != "e" || f.text() != "hi" {
		t.Fatalf("got %v", f)
	}
	c.ws.CloseNow()
	<-readErr
}

// A chatId longer than MaxChatIDLength is refused with BadRequest without
// being echoed: a 200 KB id costs one short reply, not 200 KB per frame.
func TestLongChatIDIsRefusedWithoutEcho(t *testing.T) {
	ts := startServer(t, &ServerOptions{MaxFrameSize: 1 << 20})
	c := dialRaw(t, ts.url, nil)
	huge := strings.Repeat("c", 200_000)
	over := strings.Repeat("c", MaxChatIDLength+1)
	for _, frame := range []string{
		`{"type":"Connect","chatId":"` + huge + `","requestId":"r1"}`,
		`{"type":"ChatRouteMessage","chatId":"` + huge + `","scopeId":"s","data":{},"requestId":"r1"}`,
		`{"type":"Connect","chatId":"` + over + `","requestId":"r1"}`,
		`{"type":"Connect","chatId":"` + huge + `","requestId":"r1","data":` + strings.Repeat("[", 20000) + `}`, // invalid JSON
	} {
		c.sendRaw(frame)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, b, err := c.ws.Read(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 200 {
			t.Fatalf("a reply of %d bytes: %.300s", len(b), b)
		}
		if !strings.Contains(string(b), `"chatId":""`) || !strings.Contains(string(b), `"BadRequest"`) ||
			!strings.Contains(string(b), `"requestId":"r1"`) || !strings.Contains(string(b), "chatId is longer than 128 bytes") {
			t.Fatalf("got %s", b)
		}
	}
	// An id of the maximum length is served, and echoed.
	id := strings.Repeat("i", MaxChatIDLength)
	scope := c.connect(id, "echo")
	if f := c.chat(id, scope, "hi"); f[0].text() != "hi" {
		t.Fatalf("got %v", f)
	}
}

// JSON nested deeper than encoding/json accepts (10000 levels) is not
// valid JSON to the server: the frame is answered with BadRequest, found
// by its chatId, not dropped in silence. Nesting within the limit is
// served.
func TestDeeplyNestedJSONIsAnswered(t *testing.T) {
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("d", "echo")
	nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	c.sendRaw(`{"type":"ChatRouteMessage","chatId":"d","scopeId":"` + scope + `","requestId":"deep","data":{"x":` + nested(10001) + `}}`)
	f := c.expectNext("d", "Failed")
	if f.text() != "BadRequest" || string(f.RequestID) != `"deep"` || !strings.Contains(f.Detail, "nested more than 10000 levels") || f.ScopeID != scope {
		t.Fatalf("got %v", f)
	}
	c.sendRaw(`{"type":"ChatRouteMessage","chatId":"d","scopeId":"` + scope + `","data":{"userMessage":"fine","x":` + nested(5000) + `}}`)
	if fs := c.until("d"); fs[0].text() != "fine" || last(fs).Type != "Completed" {
		t.Fatalf("got %v", fs)
	}
}

// A parameter of the wrong type fails with BadRequest whose detail names
// the parameter (generated dispatch, over the websocket and through the Go
// client), and every Failed of a session that has a scope carries it.
func TestFailedNamesTheParameterAndCarriesTheScope(t *testing.T) {
	ts := startServer(t, &ServerOptions{MaxQueued: -1})
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("count", "count")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "count", "scopeId": scope, "data": map[string]any{"count": "three"}})
	if f := last(c.until("count")); f.text() != "BadRequest" || !strings.Contains(f.Detail, `"count"`) || f.ScopeID != scope {
		t.Fatalf("got %v, want BadRequest naming count, with the scopeId", f)
	}
	// Unparsable data.
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "count", "scopeId": scope, "data": map[string]any{"userMessage": []int{3}}})
	if f := last(c.until("count")); f.text() != "BadRequest" || !strings.Contains(f.Detail, "userMessage") || f.ScopeID != scope {
		t.Fatalf("got %v", f)
	}
	// A malformed frame naming the session.
	c.sendRaw(`{"type":"ChatRouteMessage","chatId":"count","data":{}}`)
	if f := c.expectNext("count", "Failed"); f.text() != "BadRequest" || f.ScopeID != scope {
		t.Fatalf("got %v", f)
	}
	// A request refused because another one runs (MaxQueued -1: none may
	// wait).
	g := c.connect("g", "gate")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "g", "scopeId": g, "data": map[string]any{"userMessage": "one"}})
	recv(t, ts.routes.entered)
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "g", "scopeId": g, "data": map[string]any{"userMessage": "two"}})
	if f := c.expectNext("g", "Failed"); f.text() != "TooManyRequests" || f.ScopeID != g {
		t.Fatalf("got %v", f)
	}
	ts.routes.gate <- struct{}{}
	c.until("g")

	// The Go client reports the detail.
	client := dialTest(t, ts)
	s, err := client.Builder().Connect(context.Background(), "count")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Send(context.Background(), map[string]any{"count": "three"})
	if !errors.Is(err, chat.ErrBadRequest) || !strings.Contains(err.Error(), `"count"`) {
		t.Fatalf("Go client: %v", err)
	}
}
