package a2aserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/a2aserver"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

const pkgPath = "example.com/a2aapp"

// A tally is the chat-scoped bean of the "count" route.
type tally struct{ N int }

// signals are what the routes tell a test.
type signals struct {
	waiting   chan struct{}
	cancelled chan bool // whether the context's cause was a stop (chat.Cancelled)
	runs      chan string
	ready     chan struct{} // the "gate" route waits
	gate      chan struct{} // closed: the "gate" route goes on
}

// testPackage returns the test application: routes as chatgen generates
// them.
func testPackage(sig *signals) *chatimpl.Package {
	tallyBean := chat.NewBean(pkgPath+".tally", &chat.BeanOptions{Durable: true}, func(context.Context) (*tally, error) { return &tally{}, nil })
	p := chatimpl.NewPackage(pkgPath)
	p.AddRoute(chatimpl.RouteSpec{Name: "count", Default: true, Handle: func(ctx context.Context) error {
		t, err := tallyBean.Lookup(ctx)
		if err != nil {
			return err
		}
		t.N++
		return chat.Response(ctx).Message(fmt.Sprintf("%s: count is %d", chat.Request(ctx).UserMessage(), t.N))
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "stream", Handle: func(ctx context.Context) error {
		return chat.Response(ctx).Stream(func(yield func(string) bool) {
			for i := range 20 {
				if !yield(fmt.Sprintf("c%d ", i)) {
					return
				}
			}
		})
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "show", Handle: func(ctx context.Context) error {
		res := chat.Response(ctx)
		if err := errors.Join(res.Thinking("looking"), res.Event("Part", map[string]any{"name": "bolt", "qty": 2})); err != nil {
			return err
		}
		return res.Message("done: " + chat.Request(ctx).UserMessage())
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "wait", Handle: func(ctx context.Context) error {
		if err := chat.Response(ctx).Message("waiting"); err != nil {
			return err
		}
		if sig.runs != nil {
			sig.runs <- chat.Request(ctx).UserMessage()
		}
		if chat.Request(ctx).UserMessage() == "go on" {
			return nil
		}
		sig.waiting <- struct{}{}
		<-ctx.Done()
		sig.cancelled <- chat.Cancelled(ctx)
		return ctx.Err()
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "flood", Handle: func(ctx context.Context) error {
		for i := 0; i < 5000 && ctx.Err() == nil; i++ {
			if err := chat.Response(ctx).Message(strings.Repeat("x", 1024)); err != nil {
				return err
			}
		}
		return chat.Response(ctx).Message("flood over")
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "locate", Handle: func(ctx context.Context) error {
		req, res := chat.Request(ctx), chat.Response(ctx)
		if req.Has(protocol.KeyClientTool) {
			var id, why string
			var result json.RawMessage
			if err := errors.Join(req.Decode(protocol.KeyClientTool, &id), req.Decode(protocol.KeyResult, &result), req.Decode(protocol.KeyError, &why)); err != nil {
				return err
			}
			if why != "" {
				return res.Message("failed " + id + ": " + why)
			}
			return res.Message("located " + id + ": " + string(result))
		}
		if err := res.Message("let me see"); err != nil {
			return err
		}
		return res.Event(protocol.EventClientTool, protocol.ClientToolCall{ID: "ct-1", Tool: "Locate",
			Arguments: json.RawMessage(`{"precision":"city"}`), CallID: "call_1"})
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "gate", Handle: func(ctx context.Context) error {
		if err := chat.Response(ctx).Message("ready"); err != nil {
			return err
		}
		sig.ready <- struct{}{}
		select {
		case <-sig.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		return chat.Response(ctx).Message("through")
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "node", Handle: func(ctx context.Context) error {
		text := chat.Request(ctx).UserMessage()
		if sig.runs != nil {
			sig.runs <- text
		}
		if text != "slow" {
			return chat.Response(ctx).Message("quick: " + text)
		}
		if err := chat.Response(ctx).Message("started slow"); err != nil {
			return err
		}
		<-ctx.Done()
		return ctx.Err()
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "arm", Handle: func(ctx context.Context) error {
		// A tool call waiting for the user's confirmation, as runtime/ai
		// plays it: a Confirm event; the next request answers it.
		req, res := chat.Request(ctx), chat.Response(ctx)
		switch {
		case req.Has("cancel"):
			return chat.ErrCancelled
		case req.Has("confirm"):
			var approve bool
			var reason string
			if err := errors.Join(req.Decode("approve", &approve), req.Decode("reason", &reason)); err != nil {
				return err
			}
			if approve {
				return res.Message("fired")
			}
			return res.Message("denied: " + reason)
		}
		return res.Event(protocol.EventConfirm, map[string]any{"id": "cf-1", "tool": "Fire", "arguments": map[string]any{"at": "dragon"}, "callId": "call_9"})
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "boom", Handle: func(ctx context.Context) error {
		return errors.New("the internal secret detail")
	}})
	return p
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// authenticate is the test Authenticator: the X-User header names the
// user; "bad" is refused.
func authenticate(r *http.Request) (chat.Principal, error) {
	switch u := r.Header.Get("X-User"); u {
	case "":
		return nil, nil
	case "bad":
		return nil, errors.New("bad credentials")
	default:
		return chat.User{ID: u}, nil
	}
}

// An app is the test application served over A2A on loopback.
type app struct {
	sig     *signals
	handler *a2aserver.Handler
	srv     *httptest.Server
}

// newApp serves the test application; store, when not nil, is the
// router's conversation store.
func newApp(t testing.TB, opts *a2aserver.Options, store chatstore.ConversationStore) *app {
	t.Helper()
	leaktest.Check(t)
	return serve(t, opts, store)
}

// serve is newApp without the goroutine check: for the second app of a
// test, whose check the first one's covers.
func serve(t testing.TB, opts *a2aserver.Options, store chatstore.ConversationStore) *app {
	t.Helper()
	return serveRouter(t, opts, &chat.RouterOptions{Store: store})
}

// serveRouter is serve with the router's options.
func serveRouter(t testing.TB, opts *a2aserver.Options, ropts *chat.RouterOptions) *app {
	t.Helper()
	sig := &signals{waiting: make(chan struct{}, 10), cancelled: make(chan bool, 10), ready: make(chan struct{}, 2000), gate: make(chan struct{})}
	ropts.Logger = quietLogger()
	r, err := chat.NewRouter(ropts, testPackage(sig))
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &a2aserver.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	if opts.Authenticator == nil {
		opts.Authenticator = authenticate
	}
	h, err := a2aserver.New(r, opts)
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
	})
	return &app{sig: sig, handler: h, srv: srv}
}

// post sends a raw body with the headers hdr (name, value, …) and returns
// the response.
func (a *app) post(t testing.TB, body []byte, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.srv.URL+"/", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// An rpcReply is a JSON-RPC response.
type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rpc calls method with params (version "" is 0.3) as user.
func (a *app) rpc(t testing.TB, version, user, method string, params any) rpcReply {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	return a.rpcRaw(t, body, version, user)
}

// rpcRaw posts body (version "" is 0.3) as user.
func (a *app) rpcRaw(t testing.TB, body []byte, version, user string) rpcReply {
	t.Helper()
	var hdr []string
	if version != "" {
		hdr = append(hdr, "A2A-Version", version)
	}
	if user != "" {
		hdr = append(hdr, "X-User", user)
	}
	res := a.post(t, body, hdr...)
	defer res.Body.Close()
	var r rpcReply
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
		t.Fatalf("the response (status %d) is not JSON: %v", res.StatusCode, err)
	}
	if r.JSONRPC != "2.0" {
		t.Fatalf("the response is not JSON-RPC: %+v", r)
	}
	return r
}

// code returns the error code of r, 0 for a result.
func (r rpcReply) code() int {
	if r.Error == nil {
		return 0
	}
	return r.Error.Code
}

// stream posts a streaming call and returns the results of its events.
func (a *app) stream(t testing.TB, version, user, method string, params any) []json.RawMessage {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "s1", "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	hdr := []string{"Accept", "text/event-stream"}
	if version != "" {
		hdr = append(hdr, "A2A-Version", version)
	}
	if user != "" {
		hdr = append(hdr, "X-User", user)
	}
	res := a.post(t, body, hdr...)
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("the stream's content type is %q: %s", ct, b)
	}
	var out []json.RawMessage
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var r rpcReply
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("an event is not JSON-RPC: %v: %s", err, line)
		}
		if string(r.ID) != `"s1"` || r.Error != nil {
			t.Fatalf("an event: %s", line)
		}
		out = append(out, r.Result)
	}
	return out
}

// userMessage returns a 0.3 user message of text.
func userMessage03(text, contextID, taskID string) map[string]any {
	m := map[string]any{"kind": "message", "messageId": fmt.Sprint(time.Now().UnixNano()), "role": "user",
		"parts": []any{map[string]any{"kind": "text", "text": text}}}
	if contextID != "" {
		m["contextId"] = contextID
	}
	if taskID != "" {
		m["taskId"] = taskID
	}
	return map[string]any{"message": m}
}

// userMessage1 returns the SendMessage params of a 1.0 user message of
// text.
func userMessage1(text, contextID, taskID string) map[string]any {
	m := map[string]any{"messageId": fmt.Sprint(time.Now().UnixNano()), "role": "ROLE_USER",
		"parts": []any{map[string]any{"text": text}}}
	if contextID != "" {
		m["contextId"] = contextID
	}
	if taskID != "" {
		m["taskId"] = taskID
	}
	return map[string]any{"message": m}
}

// A task1 is the part of a 1.0 task the tests read.
type task1 struct {
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State   string `json:"state"`
		Message *struct {
			Role  string `json:"role"`
			Parts []struct {
				Text *string        `json:"text"`
				Data map[string]any `json:"data"`
			} `json:"parts"`
		} `json:"message"`
	} `json:"status"`
	History   []json.RawMessage `json:"history"`
	Artifacts []struct {
		Name  string `json:"name"`
		Parts []struct {
			Data map[string]any `json:"data"`
		} `json:"parts"`
	} `json:"artifacts"`
}

// text returns the text of the task's status message.
func (t *task1) text() string {
	if t.Status.Message == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range t.Status.Message.Parts {
		if p.Text != nil {
			b.WriteString(*p.Text)
		}
	}
	return b.String()
}
