package chat_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// countRoute is what chatgen generates for
//
//	//chat:route count
//	func Count(userMessage string, count int, tags []string) string
func countRoute() chatimpl.RouteSpec {
	return chatimpl.RouteSpec{
		Name: "count",
		Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			var arg1 int
			if err := req.Decode("count", &arg1); err != nil {
				return err
			}
			var arg2 []string
			if err := req.Decode("tags", &arg2); err != nil {
				return err
			}
			res := fmt.Sprintf("%s count=%d tags=%q", req.UserMessage(), arg1, arg2)
			return chat.SendValue(ctx, res)
		},
	}
}

func TestTypedParameters(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{countRoute()}, nil)
	s, l := e.connect(bg, "")
	wantNoErr(t, s.Send(bg, map[string]any{"userMessage": "hi", "count": 3, "tags": []string{"a", "b"}}))
	wantNoErr(t, s.Send(bg, map[string]any{"count": 4, "tags": nil})) // missing and null keys: zero values
	wantNoErr(t, s.Send(bg, struct {
		Msg   string `json:"userMessage"`
		Count int    `json:"count"`
	}{"struct", 5}))
	wantNoErr(t, s.Send(bg, "plain text"))
	wantEvents(t, l.take(),
		`Message:hi count=3 tags=["a" "b"]`,
		`Message: count=4 tags=[]`,
		`Message:struct count=5 tags=[]`,
		`Message:plain text count=0 tags=[]`)
}

func TestWrongTypedDataIsABadRequest(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{countRoute()}, nil)
	s, l := e.connect(bg, "")
	id := s.ScopeID()
	err := s.Send(bg, map[string]any{"userMessage": "hi", "count": "x"})
	wantFailure(t, err, "BadRequest")
	if !errors.Is(err, chat.ErrBadRequest) {
		t.Fatalf("errors.Is(%v, ErrBadRequest) is false", err)
	}
	wantEvents(t, l.take())
	rec := e.log.failureRecord(t)
	if rec["scope"] != id || rec["reason"] != "BadRequest" || rec["route"] != "count" ||
		rec["err"] != `chat: parameter "count": cannot use JSON string as int` {
		t.Fatalf("log record %v", rec)
	}
	// Still alive.
	wantNoErr(t, s.Send(bg, map[string]any{"count": 1}))
	wantEvents(t, l.take(), `Message: count=1 tags=[]`)
	for _, data := range []any{
		map[string]any{"count": 1.5},
		map[string]any{"count": []int{1}},
		map[string]any{"tags": "a"},
		map[string]any{"tags": []any{"a", 1}},
	} {
		wantFailure(t, s.Send(bg, data), "BadRequest")
	}
	wantEvents(t, l.take())
}

func TestUserMessageMustBeAString(t *testing.T) {
	e := newEnv(t, []chatimpl.RouteSpec{countRoute()}, nil)
	s, l := e.connect(bg, "")
	for _, data := range []any{
		map[string]any{"userMessage": map[string]int{"a": 5}},
		map[string]any{"userMessage": []string{"a"}},
		struct {
			M []bool `json:"userMessage"`
		}{[]bool{true}},
	} {
		err := s.Send(bg, data)
		var bad *chat.BadRequestError
		if !errors.Is(err, chat.ErrBadRequest) || !errors.As(err, &bad) || bad.Param != "userMessage" {
			t.Fatalf("Send(%v): %v", data, err)
		}
	}
	for _, raw := range []string{`{"userMessage": [5]}`, `{"userMessage": {}}`, `{"userMessage": {"text": "a"}}`} {
		_, err := chat.NewDataRequest(json.RawMessage(raw))
		var bad *chat.BadRequestError
		if !errors.Is(err, chat.ErrBadRequest) || !errors.As(err, &bad) || bad.Param != "userMessage" {
			t.Fatalf("NewDataRequest(%s): %v", raw, err)
		}
	}
	wantEvents(t, l.take())
}

func TestNewDataRequestJSON(t *testing.T) {
	for _, raw := range []string{`{`, `{"a":1`, `[1,2]`, `"text"`, `42`, `true`, `{"a":1} x`, `{"a":}`} {
		r, err := chat.NewDataRequest(json.RawMessage(raw))
		if !errors.Is(err, chat.ErrBadRequest) || r != nil {
			t.Errorf("NewDataRequest(%s) = %v, %v; want BadRequest", raw, r, err)
		}
	}
	for _, raw := range []string{``, `  `, `null`, ` null `, `{}`} {
		r, err := chat.NewDataRequest(json.RawMessage(raw))
		if err != nil || r.HasUserMessage() || len(r.Keys()) != 0 {
			t.Errorf("NewDataRequest(%q) = %v, %v; want an empty request", raw, r, err)
		}
	}
	r, err := chat.NewDataRequest(json.RawMessage(` {"userMessage":"hi","n":2,"gone":null,"obj":{"a":[1]}} `))
	wantNoErr(t, err)
	if !r.HasUserMessage() || r.UserMessage() != "hi" {
		t.Fatalf("user message %q", r.UserMessage())
	}
	if got := r.Keys(); !slices.Equal(got, []string{"n", "obj", "userMessage"}) {
		t.Fatalf("keys %v (nulls are dropped)", got)
	}
	if r.Has("gone") || !r.Has("n") || !r.Has("userMessage") {
		t.Fatal("Has")
	}
	var obj struct{ A []int }
	wantNoErr(t, r.Decode("obj", &obj))
	if !slices.Equal(obj.A, []int{1}) {
		t.Fatalf("obj %+v", obj)
	}
	var raw json.RawMessage
	wantNoErr(t, r.Decode("userMessage", &raw))
	if string(raw) != `"hi"` {
		t.Fatalf("userMessage as raw JSON: %s", raw)
	}
}

func TestDecode(t *testing.T) {
	r := chat.NewTextRequest("hello")
	if !r.HasUserMessage() || r.UserMessage() != "hello" || !slices.Equal(r.Keys(), []string{"userMessage"}) {
		t.Fatalf("text request %v", r.Keys())
	}
	var s string
	wantNoErr(t, r.Decode("userMessage", &s))
	var n = 7
	wantNoErr(t, r.Decode("missing", &n)) // untouched
	if s != "hello" || n != 7 {
		t.Fatalf("s=%q n=%d", s, n)
	}
	var i int
	err := r.Decode("userMessage", &i)
	var bad *chat.BadRequestError
	if !errors.As(err, &bad) || bad.Param != "userMessage" || err.Error() != `chat: parameter "userMessage": cannot use JSON string as int` {
		t.Fatalf("Decode into int: %v", err)
	}
	// The nil request (outside a route) has nothing.
	var none *chat.RouteRequest
	if none.UserMessage() != "" || none.HasUserMessage() || none.Has("x") || none.Keys() != nil || none.Decode("x", &i) != nil {
		t.Fatal("nil request")
	}
	if chat.Request(bg) != nil {
		t.Fatal("Request outside a route")
	}
}

// NewDataRequest of a map encodes values one by one; the request must be
// the one NewDataRequest gives for the map's JSON.
func TestNewDataRequestMatchesJSON(t *testing.T) {
	type inner struct {
		A int    `json:"a"`
		B string `json:"b,omitempty"`
	}
	var nilPtr *inner
	maps := []map[string]any{
		nil,
		{},
		{"userMessage": "hi"},
		{"userMessage": "hi", "n": 1, "f": 1.5, "s": "<&>", "b": true, "l": []int{1, 2}, "o": inner{A: 1}, "p": &inner{B: "x"}},
		{"userMessage": nil, "x": nilPtr, "y": nil, "z": 0},
		{"userMessage": json.RawMessage(`"raw"`)},
		{"userMessage": json.RawMessage(`3`)},
		{"userMessage": 3},
	}
	for _, m := range maps {
		got, gerr := chat.NewDataRequest(m)
		raw, err := json.Marshal(m)
		wantNoErr(t, err)
		want, werr := chat.NewDataRequest(json.RawMessage(raw))
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("%s: errors %v vs %v", raw, gerr, werr)
		}
		if gerr != nil {
			continue
		}
		if got.UserMessage() != want.UserMessage() || got.HasUserMessage() != want.HasUserMessage() || !slices.Equal(got.Keys(), want.Keys()) {
			t.Fatalf("%s: got %q %v %v, want %q %v %v", raw, got.UserMessage(), got.HasUserMessage(), got.Keys(), want.UserMessage(), want.HasUserMessage(), want.Keys())
		}
		for _, k := range want.Keys() {
			var a, b any
			if err := got.Decode(k, &a); err != nil {
				t.Fatal(err)
			}
			if err := want.Decode(k, &b); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Fatalf("%s: key %s: %v vs %v", raw, k, a, b)
			}
		}
	}
	if _, err := chat.NewDataRequest(map[string]any{"c": make(chan int)}); err == nil || errors.Is(err, chat.ErrBadRequest) {
		t.Fatalf("unencodable data: %v", err)
	}
	if _, err := chat.NewDataRequest([]int{1}); !errors.Is(err, chat.ErrBadRequest) {
		t.Fatalf("non-object data: %v", err)
	}
}

// --- the route context ---

type alert struct {
	Level string `json:"level"`
}

func (alert) ChatEventType() string { return "Alert" }

// report is application code the route calls: it reaches the response
// channel through ctx.
func report(ctx context.Context, text string) error {
	return chat.Response(ctx).Thinking(text)
}

func TestResponseChannelFromHelpersAndGoroutines(t *testing.T) {
	const workers, each = 8, 25
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("r", func(ctx context.Context, msg string) (string, error) {
			if err := report(ctx, "working on "+chat.Request(ctx).UserMessage()); err != nil {
				return "", err
			}
			rc := chat.Response(ctx)
			var wg sync.WaitGroup
			errs := make(chan error, workers*each)
			for w := range workers {
				wg.Go(func() {
					for i := range each {
						// Each goroutine looks the channel up itself.
						errs <- chat.Response(ctx).Console(fmt.Sprintf("w%d:%d", w, i))
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					return "", err
				}
			}
			for _, err := range []error{
				rc.Error("careful"),
				rc.Object(weapon{Name: "axe", Damage: 3}),
				rc.Event("Custom", map[string]int{"k": 1}),
				rc.Send(alert{Level: "high"}),
				rc.Message("done"),
			} {
				if err != nil {
					return "", err
				}
			}
			if err := rc.Send(weapon{}); err == nil || !strings.Contains(err.Error(), "no //chat:event type") {
				return "", fmt.Errorf("Send of an untyped value: %v", err)
			}
			return "", nil
		}),
	}, nil)
	var mu sync.Mutex
	perWorker := map[int][]int{}
	var order []string
	s, err := e.client.Builder().
		OnConsole(func(text string) {
			var w, i int
			if _, err := fmt.Sscanf(text, "w%d:%d", &w, &i); err != nil {
				t.Errorf("console %q", text)
			}
			mu.Lock()
			perWorker[w] = append(perWorker[w], i)
			order = append(order, "Console")
			mu.Unlock()
		}).
		OnDefault(func(ev chat.Event) {
			mu.Lock()
			order = append(order, ev.Type+":"+ev.Text())
			mu.Unlock()
		}).
		Connect(bg, "r")
	wantNoErr(t, err)
	for round := range 3 {
		wantNoErr(t, s.Chat(bg, fmt.Sprint("round ", round)))
		// Everything arrived before Chat returned.
		mu.Lock()
		if len(order) != workers*each+6 {
			t.Fatalf("round %d: %d events, want %d", round, len(order), workers*each+6)
		}
		want := fmt.Sprintf("Thinking:working on round %d", round)
		if order[0] != want {
			t.Fatalf("first event %q, want %q", order[0], want)
		}
		wantEvents(t, order[workers*each+1:], "Error:careful", `Object:{"name":"axe","damage":3}`, `Custom:{"k":1}`, `Alert:{"level":"high"}`, "Message:done")
		for w := range workers {
			if len(perWorker[w]) != each {
				t.Fatalf("worker %d: %d events", w, len(perWorker[w]))
			}
			for i, got := range perWorker[w] {
				if got != i {
					t.Fatalf("worker %d's events out of order: %v", w, perWorker[w])
				}
			}
		}
		order, perWorker = nil, map[int][]int{}
		mu.Unlock()
	}
}

func TestResponseOutsideARoute(t *testing.T) {
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, chat.ErrNotActive) {
			t.Fatalf("%s outside a route: %v, want ErrNotActive", what, err)
		}
	}
	for _, ctx := range []context.Context{bg, mustBegin(t)} {
		rc := chat.Response(ctx)
		check("Message", rc.Message("x"))
		check("Object", rc.Object(1))
		check("Thinking", rc.Thinking("x"))
		check("Console", rc.Console("x"))
		check("Error", rc.Error("x"))
		check("Event", rc.Event("T", 1))
		check("Send", rc.Send(alert{}))
		check("SendValue", chat.SendValue(ctx, "x"))
		check("SendValue", chat.SendValue(ctx, weapon{}))
		check("SendStream", chat.Response(ctx).Stream(chunks("a")))
		check("SendStreamWithErrors", chat.Response(ctx).StreamWithErrors(failingChunks(errors.New("x"), "a")))
		// Nothing to send is not an error, even outside a route.
		wantNoErr(t, chat.SendValue(ctx, ""))
		wantNoErr(t, chat.SendValue[any](ctx, nil))
	}
}

func mustBegin(t *testing.T) context.Context {
	t.Helper()
	ctx, err := chat.Begin(bg, nil)
	wantNoErr(t, err)
	t.Cleanup(func() { _ = chat.End(ctx) })
	return ctx
}

func TestEventsAfterTheRequestAreRefused(t *testing.T) {
	type leftover struct {
		ctx context.Context
		rc  *chat.ResponseChannel
	}
	kept := make(chan leftover, 1)
	lateErr := make(chan error, 1)
	release := make(chan struct{})
	e := newEnv(t, []chatimpl.RouteSpec{
		textRoute("r", func(ctx context.Context, msg string) (string, error) {
			switch msg {
			case "keep":
				kept <- leftover{ctx, chat.Response(ctx)}
			case "straggler": // a goroutine the route does not wait for
				go func() {
					<-release
					lateErr <- chat.Response(ctx).Message("too late")
				}()
			}
			return "ok " + msg, nil
		}),
	}, nil)
	s, l := e.connect(bg, "r")
	wantNoErr(t, s.Chat(bg, "keep"))
	k := recv(t, kept, "the kept channel")
	if err := k.rc.Message("late"); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("late Message: %v", err)
	}
	if err := chat.SendValue(k.ctx, "late"); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("late SendValue: %v", err)
	}
	wantNoErr(t, s.Chat(bg, "straggler"))
	close(release)
	if err := recv(t, lateErr, "the straggler"); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("straggler's Message: %v", err)
	}
	// A new request does not revive the old channel.
	wantNoErr(t, s.Chat(bg, "next"))
	if err := k.rc.Message("late"); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("late Message during a later request: %v", err)
	}
	wantEvents(t, l.take(), "Message:ok keep", "Message:ok straggler", "Message:ok next")
}

func TestEventHelpers(t *testing.T) {
	ev := chat.Event{Type: "Object", Data: json.RawMessage(`{"name":"bow","damage":2}`)}
	var w weapon
	wantNoErr(t, ev.Decode(&w))
	if w != (weapon{"bow", 2}) || ev.Text() != `{"name":"bow","damage":2}` {
		t.Fatalf("wire event: %+v %q", w, ev.Text())
	}
	if got := (chat.Event{Type: "Message", Data: json.RawMessage(`"hi"`)}).Text(); got != "hi" {
		t.Fatalf("wire text %q", got)
	}
	local := chat.Event{Type: "Object", Data: &weapon{"pike", 4}}
	var w2 weapon
	wantNoErr(t, local.Decode(&w2))
	var wp *weapon
	wantNoErr(t, local.Decode(&wp))
	if w2 != (weapon{"pike", 4}) || wp != local.Data {
		t.Fatalf("local decode %+v %p", w2, wp)
	}
	if err := local.Decode(new(int)); err == nil {
		t.Fatal("decoding an object into an int succeeded")
	}
	if (chat.Event{}).Text() != "" {
		t.Fatal("empty event text")
	}
}

// SendValue sends a string as a Message; a value of a named string type is
// not a string: it is sent as an Object, as before SendValue was generic.
func TestSendValueOfStringsAndOtherValues(t *testing.T) {
	type mood string
	var nilWeapon *weapon
	e := newEnv(t, []chatimpl.RouteSpec{{Name: "r", Handle: func(ctx context.Context) error {
		for _, err := range []error{
			chat.SendValue(ctx, "text"),
			chat.SendValue(ctx, mood("calm")),
			chat.SendValue[any](ctx, "boxed text"),
			chat.SendValue(ctx, nilWeapon),
			chat.SendValue[any](ctx, nilWeapon),
			chat.SendValue(ctx, ""),
		} {
			if err != nil {
				return err
			}
		}
		return nil
	}}}, nil)
	s, l := e.connect(bg, "")
	wantNoErr(t, s.Chat(bg, "go"))
	wantEvents(t, l.take(), "Message:text", `Object:"calm"`, "Message:boxed text")
}
