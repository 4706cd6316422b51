package agui_test

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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/agui"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

const pkgPath = "example.com/aguiapp"

// A tally is the chat-scoped bean of the "count" route.
type tally struct{ n int }

// Item is the value the "show" route sends as an Object.
type Item struct {
	Name string `json:"name"`
	Qty  int    `json:"qty"`
}

// signals are what the "wait" route tells a test.
type signals struct {
	waiting   chan struct{}
	cancelled chan bool     // whether the context's cause was a stop (chat.Cancelled)
	opened    chan struct{} // a "gate" run is open
	gate      chan struct{} // closed: the "gate" runs go on
}

// tallyBeanForShow is the tally bean: a bean is a description, shared
// by the test applications.
var tallyBeanForShow = chat.NewBean(pkgPath+".tally", nil, func(context.Context) (*tally, error) { return &tally{}, nil })

// A durableTally is the durable chat-scoped bean of the "dcount" route.
type durableTally struct{ N int }

var durableTallyBean = chat.NewBean(pkgPath+".durableTally", &chat.BeanOptions{Durable: true}, func(context.Context) (*durableTally, error) { return &durableTally{}, nil })

// testPackage returns the test application: routes as chatgen generates
// them.
func testPackage(sig *signals) *chatimpl.Package {
	tallyBean := tallyBeanForShow
	p := chatimpl.NewPackage(pkgPath)
	p.AddRoute(chatimpl.RouteSpec{Name: "count", Default: true, Handle: func(ctx context.Context) error {
		t, err := tallyBean.Lookup(ctx)
		if err != nil {
			return err
		}
		t.n++
		return chat.Response(ctx).Message(fmt.Sprintf("%s: count is %d", chat.Request(ctx).UserMessage(), t.n))
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "show", Handle: func(ctx context.Context) error {
		res := chat.Response(ctx)
		if err := errors.Join(res.Thinking("looking"), res.Thinking(" closer")); err != nil {
			return err
		}
		if err := chat.Response(ctx).Stream(slices.Values([]string{"one ", "two ", "three"})); err != nil {
			return err
		}
		if err := res.Object(Item{Name: "bolt", Qty: 2}); err != nil {
			return err
		}
		if err := res.Event("SubAgent", map[string]any{"agent": "finder", "type": "ToolCall", "tool": "lookup", "id": "call-1", "arguments": `{"q":"bolt"}`}); err != nil {
			return err
		}
		if err := res.Event("SubAgent", map[string]any{"agent": "finder", "type": "ToolResult", "tool": "lookup", "id": "call-1"}); err != nil {
			return err
		}
		return res.Message("done: " + chat.Request(ctx).UserMessage())
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "stream100", Handle: func(ctx context.Context) error {
		return chat.Response(ctx).Stream(func(yield func(string) bool) {
			for range 100 {
				if !yield("chunk ") {
					return
				}
			}
		})
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "boom", Handle: func(ctx context.Context) error {
		if err := chat.Response(ctx).Thinking("trying"); err != nil {
			return err
		}
		return errors.New("the internal secret detail")
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "wait", Handle: func(ctx context.Context) error {
		if err := chat.Response(ctx).Message("waiting"); err != nil {
			return err
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
		for i := 0; ctx.Err() == nil; i++ {
			if err := chat.Response(ctx).Message(strings.Repeat("x", 1024)); err != nil {
				return err
			}
		}
		sig.cancelled <- errors.Is(context.Cause(ctx), agui.ErrSlowClient)
		return ctx.Err()
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "big", Handle: func(ctx context.Context) error {
		// Few events, each large: more than a connection's buffers hold,
		// far fewer than the events a run's buffer holds.
		for range 64 {
			if err := chat.Response(ctx).Message(strings.Repeat("y", 256<<10)); err != nil {
				return err
			}
		}
		<-ctx.Done()
		sig.cancelled <- errors.Is(context.Cause(ctx), agui.ErrSlowClient)
		return ctx.Err()
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "gate", Handle: func(ctx context.Context) error {
		// The concurrent streams' test: each run opens, waits for the
		// gate, then streams.
		if err := chat.Response(ctx).Message("open"); err != nil {
			return err
		}
		sig.opened <- struct{}{}
		select {
		case <-sig.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		return chat.Response(ctx).Stream(slices.Values([]string{"a ", "b ", "c"}))
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "dcount", Handle: func(ctx context.Context) error {
		t, err := durableTallyBean.Lookup(ctx)
		if err != nil {
			return err
		}
		t.N++
		return chat.Response(ctx).Message(fmt.Sprintf("%s: count is %d", chat.Request(ctx).UserMessage(), t.N))
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "locate", Handle: func(ctx context.Context) error {
		// The protocol of a client-run tool, as runtime/ai plays it: the
		// request pauses on a ClientTool event; the next one answers it.
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
		return res.Event(protocol.EventClientTool, protocol.ClientToolCall{ID: "ct-" + req.UserMessage(), Tool: "Locate",
			Arguments: json.RawMessage(`{"precision":"city"}`), CallID: "call_1"})
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "nest", Handle: func(ctx context.Context) error {
		// The state's test: the tally and the scope stack change during
		// a run, with events between the changes.
		t, err := tallyBean.Lookup(ctx)
		if err != nil {
			return err
		}
		t.n++
		if err := chat.Response(ctx).Message("counted"); err != nil {
			return err
		}
		if chat.Request(ctx).UserMessage() != "push" {
			return nil
		}
		if err := chat.PushRoute(ctx, "nested"); err != nil {
			return err
		}
		t.n += 10
		return chat.Response(ctx).Message("pushed")
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "nested", Handle: func(ctx context.Context) error {
		t, err := tallyBean.Lookup(ctx)
		if err != nil {
			return err
		}
		if err := chat.Response(ctx).Message("popping"); err != nil {
			return err
		}
		if err := chat.Pop(ctx); err != nil {
			return err
		}
		t.n += 100
		return chat.Response(ctx).Stream(slices.Values([]string{"popped ", "back"}))
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "admin", Roles: []string{"admin"}, Handle: func(ctx context.Context) error {
		return chat.Response(ctx).Message("secret")
	}})
	return p
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// An app is the test application served over AG-UI on loopback.
type app struct {
	sig     *signals
	handler *agui.Handler
	srv     *httptest.Server
}

func newApp(t testing.TB, opts *agui.Options) *app {
	t.Helper()
	leaktest.Check(t)
	sig := &signals{waiting: make(chan struct{}, 10), cancelled: make(chan bool, 10), opened: make(chan struct{}, 2000), gate: make(chan struct{})}
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, testPackage(sig))
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &agui.Options{}
	}
	if opts.Logger == nil {
		opts.Logger = quietLogger()
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
	})
	return &app{sig: sig, handler: h, srv: srv}
}

// input is a RunAgentInput with one user message.
func input(thread, run, text string) string {
	b, _ := json.Marshal(map[string]any{
		"threadId": thread, "runId": run, "protocolVersion": "1.0", "state": map[string]any{},
		"messages": []any{map[string]any{"id": run + "-u", "role": "user", "content": text}},
		"tools":    []any{}, "context": []any{}, "forwardedProps": map[string]any{},
	})
	return string(b)
}

// post sends body and returns the response.
func (a *app) post(t testing.TB, ctx context.Context, body string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.srv.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// run posts body and returns the run's events.
func (a *app) run(t testing.TB, body string, hdr ...string) []map[string]any {
	t.Helper()
	res := a.post(t, context.Background(), body, hdr...)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("status %d: %s", res.StatusCode, b)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	return readEvents(t, res.Body)
}

// readEvents reads the SSE data lines of r until it ends.
func readEvents(t testing.TB, r io.Reader) []map[string]any {
	t.Helper()
	var evs []map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		var ev map[string]any
		if err := json.Unmarshal(data, &ev); err != nil {
			t.Fatalf("an event that is not JSON: %q: %v", data, err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// types returns the types of evs, CUSTOM events as CUSTOM:name.
func types(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		typ, _ := ev["type"].(string)
		if typ == "CUSTOM" {
			typ += ":" + fmt.Sprint(ev["name"])
		}
		out = append(out, typ)
	}
	return out
}

// checkNesting checks what AG-UI's verifier checks: RUN_STARTED first,
// one terminator last, every message and tool call closed before it, no
// content outside its message, ids of a message the same throughout.
func checkNesting(t testing.TB, evs []map[string]any) {
	t.Helper()
	if len(evs) < 2 || evs[0]["type"] != "RUN_STARTED" {
		t.Fatalf("the run does not start with RUN_STARTED: %v", types(evs))
	}
	open := map[string]string{} // id → kind
	for i, ev := range evs {
		typ, _ := ev["type"].(string)
		last := i == len(evs)-1
		if (typ == "RUN_FINISHED" || typ == "RUN_ERROR") != last {
			t.Fatalf("event %d %s: a terminator must be the last event: %v", i, typ, types(evs))
		}
		msg, _ := ev["messageId"].(string)
		call, _ := ev["toolCallId"].(string)
		for k, v := range ev {
			if v == nil {
				t.Fatalf("event %d %s: %s is null", i, typ, k)
			}
		}
		switch typ {
		case "TEXT_MESSAGE_START", "REASONING_MESSAGE_START":
			if open[msg] != "" && typ == "TEXT_MESSAGE_START" {
				t.Fatalf("event %d: message %q opened twice", i, msg)
			}
			open[msg+"/"+typ[:4]] = typ
		case "TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT":
			if open[msg+"/"+typ[:4]] == "" {
				t.Fatalf("event %d %s: message %q is not open", i, typ, msg)
			}
			if ev["delta"] == "" {
				t.Fatalf("event %d: an empty delta", i)
			}
		case "TEXT_MESSAGE_END", "REASONING_MESSAGE_END":
			if open[msg+"/"+typ[:4]] == "" {
				t.Fatalf("event %d %s: message %q is not open", i, typ, msg)
			}
			delete(open, msg+"/"+typ[:4])
		case "REASONING_START":
			open[msg+"/R"] = typ
		case "REASONING_END":
			if open[msg+"/R"] == "" {
				t.Fatalf("event %d: reasoning %q is not open", i, msg)
			}
			delete(open, msg+"/R")
		case "TOOL_CALL_START":
			open[call+"/T"] = typ
		case "TOOL_CALL_ARGS":
			if open[call+"/T"] == "" {
				t.Fatalf("event %d: tool call %q is not open", i, call)
			}
		case "TOOL_CALL_END":
			if open[call+"/T"] == "" {
				t.Fatalf("event %d: tool call %q is not open", i, call)
			}
			delete(open, call+"/T")
		case "RUN_FINISHED", "RUN_ERROR":
			if len(open) > 0 {
				t.Fatalf("event %d %s with open messages %v: %v", i, typ, open, types(evs))
			}
		}
	}
}

// showTally shows the tally bean as {"n": count}.
func showTally() []agui.Shown {
	return []agui.Shown{agui.ShowBean("tally", tallyBeanForShow, func(t *tally) any { return map[string]int{"n": t.n} })}
}
