package ai_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// clientScript calls the client tool locate for "where", the confirmed
// tool drop for "drop <item>", and tells what a tool said after a call;
// it echoes everything else.
func clientScript() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 && req.Messages[len(req.Messages)-1].Role == llms.ChatMessageTypeTool {
			return llmtest.Reply{Text: "tool said: " + res[len(res)-1].Content}, nil
		}
		text := req.LastUserText()
		if text == "where" {
			return calls(call("locate", `{"precision":"city"}`)), nil
		}
		if item, ok := strings.CutPrefix(text, "drop "); ok {
			return calls(call("drop", `{"item":"`+item+`"}`)), nil
		}
		return llmtest.Reply{Text: "re: " + text}, nil
	})
}

// clientApp is an application whose tool locate the client runs and
// whose tool drop needs confirmation.
type clientApp struct {
	model  *llmtest.Model
	router *chat.Router
	client *chat.LocalClient
	mu     sync.Mutex
	calls  []protocol.ClientToolCall
	asks   []ai.Confirmation
}

type clientAppOptions struct {
	store   *chat.InMemoryConversationStore
	timeout time.Duration
	limit   int
}

func newClientApp(t *testing.T, o clientAppOptions) *clientApp {
	t.Helper()
	a := &clientApp{model: llmtest.NewModel(clientScript(), nil)}
	cfg := &ai.Config{Model: a.model, Logger: (&logBuffer{}).logger(), ClientToolResultLimit: o.limit}
	if o.store != nil {
		cfg.Memory = memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(o.store), Policy: memory.Window(20, nil)})
	}
	svc := ai.NewService(svcName, cfg)
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse.", Tools: []ai.Tool{
		{
			Definition: tool("locate", "the user's location", `{"type":"object","properties":{"precision":{"type":"string"}}}`),
			Client:     true,
			Timeout:    o.timeout,
		},
		{
			Definition: tool("drop", "drops an item", `{"type":"object","properties":{"item":{"type":"string"}}}`),
			Confirm:    true,
			Invoke:     func(context.Context, string) (any, error) { return "dropped", nil },
		},
	}}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "menu", Default: true, Handle: func(ctx context.Context) error {
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	opts := &chat.RouterOptions{Logger: (&logBuffer{}).logger()}
	if o.store != nil {
		opts.Store = o.store
	}
	r, err := chat.NewRouter(opts, p)
	if err != nil {
		t.Fatal(err)
	}
	a.router = r
	a.client = chat.NewLocalClient(r)
	t.Cleanup(func() { _ = a.client.Close() })
	return a
}

func (a *clientApp) builder(got *messages) *chat.SessionBuilder {
	return a.client.Builder().OnMessage(got.add).On(protocol.EventClientTool, func(ev chat.Event) {
		var c protocol.ClientToolCall
		if err := ev.Decode(&c); err != nil {
			panic(err)
		}
		a.mu.Lock()
		a.calls = append(a.calls, c)
		a.mu.Unlock()
	}).On(protocol.EventConfirm, func(ev chat.Event) {
		var c ai.Confirmation
		if err := ev.Decode(&c); err != nil {
			panic(err)
		}
		a.mu.Lock()
		a.asks = append(a.asks, c)
		a.mu.Unlock()
	})
}

func (a *clientApp) session(t *testing.T, got *messages) chat.Session {
	t.Helper()
	s, err := a.builder(got).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (a *clientApp) clientCalls() []protocol.ClientToolCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]protocol.ClientToolCall(nil), a.calls...)
}

// locate asks where the user is and returns the client tool call the
// turn paused on.
func (a *clientApp) locate(t *testing.T, s chat.Session, got *messages) protocol.ClientToolCall {
	t.Helper()
	n := len(a.clientCalls())
	chatOK(t, s, "where")
	cs := a.clientCalls()
	if len(cs) != n+1 {
		t.Fatalf("%d ClientTool events after asking where, want %d", len(cs), n+1)
	}
	c := cs[n]
	if c.Tool != "locate" || string(c.Arguments) != `{"precision":"city"}` || c.ID == "" || c.CallID == "" {
		t.Fatalf("client tool call %+v", c)
	}
	if m := got.take(); m != "" {
		t.Fatalf("the paused request answered %q", m)
	}
	return c
}

func TestClientToolResult(t *testing.T) {
	a := newClientApp(t, clientAppOptions{})
	var got messages
	s := a.session(t, &got)
	c := a.locate(t, s, &got)
	if c.Deadline != nil {
		t.Fatalf("a tool without a timeout has a deadline: %v", c.Deadline)
	}
	send(t, s, map[string]any{"clientTool": c.ID, "result": map[string]any{"city": "Lyon"}})
	if m := got.take(); m != `tool said: {"city":"Lyon"}` {
		t.Fatalf("after the result: %q", m)
	}
	wantStrings(t, "the model's last request", lastModelRequest(a.model),
		"system: You are terse.", "human: where", `ai: call locate {"precision":"city"}`, `tool: result locate {"city":"Lyon"}`)
	// Answered: the id is stale now.
	if err := s.Send(context.Background(), map[string]any{"clientTool": c.ID, "result": 1}); !errors.Is(err, chat.ErrBadRequest) {
		t.Fatalf("answering twice: %v", err)
	}
	// A scalar result, and an error.
	c = a.locate(t, s, &got)
	send(t, s, map[string]any{"clientTool": c.ID, "result": "Paris"})
	if m := got.take(); m != `tool said: "Paris"` {
		t.Fatalf("a string result: %q", m)
	}
	c = a.locate(t, s, &got)
	send(t, s, map[string]any{"clientTool": c.ID, "error": "the user refused to share the location"})
	if m := got.take(); m != "tool said: error: the client could not run this call: the user refused to share the location" {
		t.Fatalf("an error: %q", m)
	}
	// A new message instead of an answer: the call is closed, the message
	// answered.
	a.locate(t, s, &got)
	chatOK(t, s, "hello")
	if m := got.take(); m != "re: hello" {
		t.Fatalf("the unrelated message: %q", m)
	}
	last := lastModelRequest(a.model)
	wantStrings(t, "the model's last request", last[len(last)-3:],
		`ai: call locate {"precision":"city"}`,
		"tool: result locate error: the client did not run this call; the user wrote a new message instead",
		"human: hello")
}

func TestClientToolBadAnswers(t *testing.T) {
	a := newClientApp(t, clientAppOptions{limit: 64})
	var got, other messages
	s := a.session(t, &got)
	s2 := a.session(t, &other)
	c := a.locate(t, s, &got)
	c2 := a.locate(t, s2, &other)
	if c.ID == c2.ID {
		t.Fatalf("two conversations' calls have one id %s", c.ID)
	}
	for _, bad := range []map[string]any{
		{"clientTool": "nope", "result": 1},                     // unknown id
		{"clientTool": c2.ID, "result": 1},                      // another conversation's call
		{"clientTool": c.ID + "1", "result": 1},                 // a forged deadline
		{"clientTool": c.ID, "result": 1, "error": "x"},         // both
		{"clientTool": c.ID, "error": ""},                       // an empty error
		{"clientTool": 7, "result": 1},                          // an id that is no string
		{"clientTool": c.ID, "result": strings.Repeat("x", 80)}, // too large
		{"clientTool": c.ID, "error": strings.Repeat("x", 80)},  // too long
		{"confirm": c.ID, "approve": true},                      // a confirmation's answer
		{"cancel": ""},                                          // a cancel without an id
		{"cancel": c2.ID},                                       // a cancel of another conversation's call
	} {
		if err := s.Send(context.Background(), bad); !errors.Is(err, chat.ErrBadRequest) {
			t.Fatalf("%v: %v, want BadRequest", bad, err)
		}
	}
	// Still pending, in both conversations.
	send(t, s, map[string]any{"clientTool": c.ID, "result": true})
	if m := got.take(); m != "tool said: true" {
		t.Fatalf("after the bad answers: %q", m)
	}
	send(t, s2, map[string]any{"clientTool": c2.ID, "result": false})
	if m := other.take(); m != "tool said: false" {
		t.Fatalf("the other conversation: %q", m)
	}
	// A client result for a confirmation.
	chatOK(t, s, "drop sword")
	a.mu.Lock()
	ask := a.asks[len(a.asks)-1]
	a.mu.Unlock()
	if err := s.Send(context.Background(), map[string]any{"clientTool": ask.ID, "result": 1}); !errors.Is(err, chat.ErrBadRequest) {
		t.Fatalf("a result for a confirmation: %v", err)
	}
	send(t, s, map[string]any{"confirm": ask.ID, "approve": true})
	if m := got.take(); m != "tool said: dropped" {
		t.Fatalf("the confirmation after a bad answer: %q", m)
	}
}

func TestClientToolTimeout(t *testing.T) {
	// A deadline in the past at once: the answer is late.
	a := newClientApp(t, clientAppOptions{timeout: time.Nanosecond})
	var got messages
	s := a.session(t, &got)
	c := a.locate(t, s, &got)
	if c.Deadline == nil || !strings.Contains(c.ID, ".") {
		t.Fatalf("a tool with a timeout: deadline %v, id %s", c.Deadline, c.ID)
	}
	send(t, s, map[string]any{"clientTool": c.ID, "result": map[string]any{"city": "Lyon"}})
	if m := got.take(); m != "tool said: error: the client did not answer in time" {
		t.Fatalf("a late answer: %q", m)
	}
	// In time.
	b := newClientApp(t, clientAppOptions{timeout: time.Hour})
	s = b.session(t, &got)
	c = b.locate(t, s, &got)
	if c.Deadline == nil || time.Until(*c.Deadline) < 30*time.Minute {
		t.Fatalf("deadline %v", c.Deadline)
	}
	send(t, s, map[string]any{"clientTool": c.ID, "result": 1})
	if m := got.take(); m != "tool said: 1" {
		t.Fatalf("an answer in time: %q", m)
	}
}

func TestClientToolSurvivesARestart(t *testing.T) {
	cs := chat.NewInMemoryConversationStore(nil)
	a := newClientApp(t, clientAppOptions{store: cs, timeout: time.Hour})
	var got messages
	s := a.session(t, &got)
	c := a.locate(t, s, &got)
	id, token := s.ConversationID(), s.ResumeToken()
	if err := a.client.Detach(); err != nil {
		t.Fatal(err)
	}
	b := newClientApp(t, clientAppOptions{store: cs, timeout: time.Hour})
	s2, err := b.builder(&got).Resume(context.Background(), id, token)
	if err != nil {
		t.Fatal(err)
	}
	send(t, s2, map[string]any{"clientTool": c.ID, "result": map[string]any{"city": "Lyon"}})
	if m := got.take(); m != `tool said: {"city":"Lyon"}` {
		t.Fatalf("after the restart: %q", m)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	wantStats(t, "after closing", b.router, 0, 0)
}

// A cancel naming the paused call stops the turn: the call gets a
// cancelled result, the request fails as cancelled, and the memory is
// valid for the next turn.
func TestCancelPausedTurn(t *testing.T) {
	a := newClientApp(t, clientAppOptions{})
	var got messages
	s := a.session(t, &got)
	for _, pause := range []func() string{
		func() string { return a.locate(t, s, &got).ID },
		func() string {
			chatOK(t, s, "drop sword")
			a.mu.Lock()
			defer a.mu.Unlock()
			return a.asks[len(a.asks)-1].ID
		},
	} {
		id := pause()
		n := len(a.model.Requests())
		err := s.Send(context.Background(), map[string]any{"cancel": id})
		if !errors.Is(err, chat.ErrCancelled) {
			t.Fatalf("cancel of %s: %v, want Cancelled", id, err)
		}
		if len(a.model.Requests()) != n {
			t.Fatalf("the cancel called the model")
		}
		if m := got.take(); m != "" {
			t.Fatalf("the cancel answered %q", m)
		}
		for _, answer := range []map[string]any{{"cancel": id}, {"clientTool": id, "result": 1}, {"confirm": id, "approve": true}} {
			if err := s.Send(context.Background(), answer); !errors.Is(err, chat.ErrBadRequest) {
				t.Fatalf("%v after the cancel: %v, want BadRequest", answer, err)
			}
		}
		chatOK(t, s, "hello")
		if m := got.take(); m != "re: hello" {
			t.Fatalf("after the cancel: %q", m)
		}
		last := lastModelRequest(a.model)
		wantStrings(t, "the model's last request", last[len(last)-3:],
			"tool: result "+map[bool]string{true: "locate", false: "drop"}[strings.Contains(last[len(last)-4], "locate")]+" cancelled: the user stopped the turn while this call waited",
			"ai: "+ai.InterruptedMarker,
			"human: hello")
	}
}

// answered is what an OnClientToolAnswered handler saw.
type answered struct {
	call protocol.ClientToolCall
	err  error
}

// The Go client answers client tool calls on its own: a result, an
// error, a cancel, a deadline, a panic.
func TestOnClientTool(t *testing.T) {
	leaktest.Check(t)
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		fn      chat.ClientToolFunc
		want    string // the answer to the user, after the client's answer
		wantErr error  // the answer request's error
	}{
		{name: "result", fn: func(_ context.Context, args json.RawMessage) (any, error) {
			var v struct{ Precision string }
			if err := json.Unmarshal(args, &v); err != nil {
				return nil, err
			}
			return map[string]string{"city": "Lyon", "precision": v.Precision}, nil
		}, want: `tool said: {"city":"Lyon","precision":"city"}`},
		{name: "nil result", fn: func(context.Context, json.RawMessage) (any, error) { return nil, nil }, want: "tool said: null"},
		{name: "error", fn: func(context.Context, json.RawMessage) (any, error) {
			return nil, errors.New("the user said no")
		}, want: "tool said: error: the client could not run this call: the user said no"},
		{name: "panic", fn: func(context.Context, json.RawMessage) (any, error) { panic("boom") },
			want: "tool said: error: the client could not run this call: the client tool panicked: boom"},
		{name: "unencodable", fn: func(context.Context, json.RawMessage) (any, error) { return func() {}, nil },
			want: "tool said: error: the client could not run this call: the client's result cannot be encoded: json: unsupported type: func()"},
		{name: "cancel", fn: func(context.Context, json.RawMessage) (any, error) { return nil, chat.ErrCancelled }, wantErr: chat.ErrCancelled},
		{name: "deadline", timeout: time.Nanosecond, fn: func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, want: "tool said: error: the client did not answer in time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newClientApp(t, clientAppOptions{timeout: tc.timeout})
			var got messages
			done := make(chan answered, 1)
			s, err := a.builder(&got).OnClientTool("locate", tc.fn).OnClientToolAnswered(func(c protocol.ClientToolCall, err error) {
				done <- answered{c, err}
			}).Connect(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			chatOK(t, s, "where")
			ans := <-done
			if ans.call.Tool != "locate" || !errors.Is(ans.err, tc.wantErr) || (tc.wantErr == nil && ans.err != nil) {
				t.Fatalf("answered %+v, want the error %v", ans, tc.wantErr)
			}
			if m := got.take(); m != tc.want {
				t.Fatalf("the answer %q, want %q", m, tc.want)
			}
			if len(a.clientCalls()) != 0 {
				t.Fatalf("the On(ClientTool) handler saw the calls OnClientTool answers")
			}
		})
	}
}

// Closing the session stops a client tool that is still running, and no
// answer is sent; calls of tools without a function reach On(ClientTool).
func TestOnClientToolClose(t *testing.T) {
	leaktest.Check(t)
	a := newClientApp(t, clientAppOptions{})
	var got messages
	started := make(chan struct{})
	stopped := make(chan error, 1)
	s, err := a.builder(&got).OnClientTool("other", func(context.Context, json.RawMessage) (any, error) {
		t.Error("the function of another tool ran")
		return nil, nil
	}).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	a.locate(t, s, &got)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = a.builder(&got).OnClientTool("locate", func(ctx context.Context, _ json.RawMessage) (any, error) {
		close(started)
		<-ctx.Done()
		stopped <- ctx.Err()
		return "too late", nil
	}).OnClientToolAnswered(func(c protocol.ClientToolCall, err error) {
		t.Errorf("an answer was sent after the close: %v", err)
	}).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	chatOK(t, s, "where")
	<-started
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("the tool's context ended with %v", err)
	}
}
