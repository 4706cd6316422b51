package ws

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
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/internal/e2e"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// quietLogger drops the logs of expected failures; -v shows them.
func quietLogger() *slog.Logger {
	if testing.Verbose() && os.Getenv("WS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testRoutes are the routes of the tests beside those of internal/e2e.
type testRoutes struct {
	gate    chan struct{} // "gate" waits for a value (or ctx)
	entered chan string   // "gate" and "hold" report that they started, with the user's text
	// held gets, from "hold" once its context ended, whether it was a
	// stop (chat.Cancelled) and the user's text.
	held chan holdEnd
}

// holdEnd is how a "hold" request ended.
type holdEnd struct {
	text    string
	stopped bool
}

func newTestRoutes() *testRoutes {
	return &testRoutes{gate: make(chan struct{}), entered: make(chan string, 100), held: make(chan holdEnd, 100)}
}

func (tr *testRoutes) pkg() *chatimpl.Package {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/runtime/ws/wstest")
	p.AddRoute(chatimpl.RouteSpec{Name: "gate", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		tr.entered <- req.UserMessage()
		select {
		case <-tr.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		return chat.SendValue(ctx, "passed "+req.UserMessage())
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "hold", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		// "quick" answers at once; anything else sends a Message and
		// waits for its context to end.
		if req.UserMessage() == "quick" {
			return chat.SendValue(ctx, "quick answer")
		}
		if err := chat.Response(ctx).Message("partial"); err != nil {
			return err
		}
		tr.entered <- req.UserMessage()
		<-ctx.Done()
		tr.held <- holdEnd{text: req.UserMessage(), stopped: chat.Cancelled(ctx)}
		return ctx.Err()
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "drip", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		// Messages until its context ends: events are in flight when a
		// client stops the request.
		tr.entered <- req.UserMessage()
		for i := 0; ; i++ {
			if err := chat.Response(ctx).Message(fmt.Sprintf("drip %d", i)); err != nil {
				// Cut off: a stop cancels the context first.
				tr.held <- holdEnd{text: req.UserMessage(), stopped: chat.Cancelled(ctx)}
				return err
			}
			select {
			case <-ctx.Done():
				tr.held <- holdEnd{text: req.UserMessage(), stopped: chat.Cancelled(ctx)}
				return ctx.Err()
			case <-time.After(100 * time.Microsecond):
			}
		}
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "thinkgate", Handle: func(ctx context.Context) error {
		if err := chat.Response(ctx).Thinking("waiting"); err != nil {
			return err
		}
		select {
		case <-tr.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		return chat.SendValue(ctx, "passed")
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "flood", Handle: func(ctx context.Context) error {
		chunk := strings.Repeat("x", 64<<10)
		for range 2000 { // 128 MB: more than any socket buffer
			if err := chat.Response(ctx).Message(chunk); err != nil {
				return err
			}
		}
		return nil
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "whoami", Handle: func(ctx context.Context) error {
		p := chat.PrincipalFrom(ctx)
		if p == nil {
			return chat.SendValue(ctx, "anonymous")
		}
		return chat.SendValue(ctx, p.Name())
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "events", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r := chat.Response(ctx)
		if err := r.Thinking("thinking about " + req.UserMessage()); err != nil {
			return err
		}
		if err := r.Console("console line"); err != nil {
			return err
		}
		if err := r.Object(map[string]any{"n": 1, "text": req.UserMessage()}); err != nil {
			return err
		}
		if err := chat.Response(ctx).Stream(func(yield func(string) bool) {
			for _, w := range []string{"one", "two", "three"} {
				if !yield(w) {
					return
				}
			}
		}); err != nil {
			return err
		}
		if err := r.Event("custom", []int{1, 2, 3}); err != nil {
			return err
		}
		return r.Message("done: " + req.UserMessage())
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "unencodable", Handle: func(ctx context.Context) error {
		return chat.Response(ctx).Object(make(chan int))
	}})
	return p
}

// newTestRouter returns a router of internal/e2e's routes (menu is the
// default) and the test routes.
func newTestRouter(t testing.TB) (*chat.Router, *testRoutes) {
	t.Helper()
	tr := newTestRoutes()
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, e2e.Register(), tr.pkg())
	if err != nil {
		t.Fatal(err)
	}
	return r, tr
}

// testServer is a running endpoint.
type testServer struct {
	*Server
	router *chat.Router
	routes *testRoutes
	http   *httptest.Server
	url    string // ws://…/_chat/routes
}

// startServer starts an endpoint of the test router; opts may be nil,
// and its Logger is quietLogger unless set.
func startServer(t testing.TB, opts *ServerOptions) *testServer {
	t.Helper()
	router, routes := newTestRouter(t)
	return startServerFor(t, router, routes, opts)
}

func startServerFor(t testing.TB, router *chat.Router, routes *testRoutes, opts *ServerOptions) *testServer {
	t.Helper()
	o := ServerOptions{Logger: quietLogger()}
	if opts != nil {
		o = *opts
		if o.Logger == nil {
			o.Logger = quietLogger()
		}
	}
	srv := NewServer(router, &o)
	hs := httptest.NewServer(srv)
	ts := &testServer{Server: srv, router: router, routes: routes, http: hs, url: "ws" + strings.TrimPrefix(hs.URL, "http") + RoutesPath}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		hs.Close()
	})
	return ts
}

// waitStats waits until the router holds no conversation.
func waitNoConversations(t testing.TB, r *chat.Router) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for r.Stats().Conversations != 0 || r.Stats().Scopes != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("conversations left: %+v", r.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// frame is a server frame as a test reads it.
type frame struct {
	ChatID    string          `json:"chatId"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	RequestID json.RawMessage `json:"requestId"`
	ScopeID   string          `json:"scopeId"`
	Detail    string          `json:"detail"`
}

func (f frame) text() string {
	var s string
	if err := json.Unmarshal(f.Data, &s); err != nil {
		return string(f.Data)
	}
	return s
}

func (f frame) String() string {
	return fmt.Sprintf("%s %s %s rid=%s scope=%s detail=%q", f.ChatID, f.Type, f.Data, f.RequestID, f.ScopeID, f.Detail)
}

// rawConn is a raw websocket client speaking the protocol by hand.
type rawConn struct {
	t  testing.TB
	ws *websocket.Conn
}

func dialRaw(t testing.TB, url string, header http.Header) *rawConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wc, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: header})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	wc.SetReadLimit(-1)
	t.Cleanup(func() { wc.CloseNow() })
	return &rawConn{t: t, ws: wc}
}

func (c *rawConn) sendRaw(s string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(s)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *rawConn) send(v map[string]any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(string(b))
}

// read returns the next frame, failing after a timeout.
func (c *rawConn) read() frame {
	c.t.Helper()
	f, err := c.readErr(5 * time.Second)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return f
}

func (c *rawConn) readErr(d time.Duration) (frame, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_, b, err := c.ws.Read(ctx)
	if err != nil {
		return frame{}, err
	}
	var f frame
	if err := json.Unmarshal(b, &f); err != nil {
		return frame{}, fmt.Errorf("frame %s: %w", b, err)
	}
	return f, nil
}

// expectNext reads the next frame and checks its chat and type.
func (c *rawConn) expectNext(chatID, typ string) frame {
	c.t.Helper()
	f := c.read()
	if f.ChatID != chatID || f.Type != typ {
		c.t.Fatalf("got %v, want %s %s", f, chatID, typ)
	}
	return f
}

// connect starts a session and returns its scope id.
func (c *rawConn) connect(chatID, route string) string {
	c.t.Helper()
	m := map[string]any{"type": "Connect", "chatId": chatID}
	if route != "" {
		m["route"] = route
	}
	c.send(m)
	f := c.read()
	if f.ChatID != chatID || f.Type != "Completed" {
		c.t.Fatalf("connect %s: got %v", route, f)
	}
	return f.text()
}

// chat sends a user message and returns the frames up to the terminator.
func (c *rawConn) chat(chatID, scopeID, text string) []frame {
	c.t.Helper()
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": chatID, "scopeId": scopeID, "data": map[string]any{"userMessage": text}})
	return c.until(chatID)
}

// until reads the frames of chatID up to its terminator.
func (c *rawConn) until(chatID string) []frame {
	c.t.Helper()
	var out []frame
	for {
		f := c.read()
		if f.ChatID != chatID {
			c.t.Fatalf("frame of another chat: %v", f)
		}
		out = append(out, f)
		if f.Type == "Completed" || f.Type == "Failed" {
			return out
		}
	}
}

func last(fs []frame) frame { return fs[len(fs)-1] }

func isCloseStatus(err error, code websocket.StatusCode) bool {
	return websocket.CloseStatus(err) == code
}

var errTimeout = errors.New("timeout")

// recv waits for a value on ch (generously: a loaded machine is slow).
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatal(errTimeout)
	}
	var zero T
	return zero
}
