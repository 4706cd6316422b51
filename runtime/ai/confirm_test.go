package ai_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// confirmScript calls drop for "drop <item>" and tells what a tool said
// after a tool call; it echoes everything else.
func confirmScript() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 && req.Messages[len(req.Messages)-1].Role == llms.ChatMessageTypeTool {
			return llmtest.Reply{Text: "tool said: " + res[len(res)-1].Content}, nil
		}
		text := req.LastUserText()
		if item, ok := strings.CutPrefix(text, "drop "); ok {
			return calls(call("drop", `{"item":"`+item+`"}`)), nil
		}
		return llmtest.Reply{Text: "re: " + text}, nil
	})
}

// confirmApp is an application whose tool drop needs confirmation.
type confirmApp struct {
	model   *llmtest.Model
	router  *chat.Router
	client  *chat.LocalClient
	mu      sync.Mutex
	dropped []string
	asks    []ai.Confirmation
}

func (a *confirmApp) confirmations() []ai.Confirmation {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]ai.Confirmation(nil), a.asks...)
}

func (a *confirmApp) drops() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.dropped...)
}

// newConfirmApp starts the application over store (nil: not durable, the
// memory in the service's manager); with hook, drop is not marked Confirm
// and the hook demands the confirmation instead.
func newConfirmApp(t *testing.T, cs *chat.InMemoryConversationStore, hook bool) *confirmApp {
	t.Helper()
	a := &confirmApp{model: llmtest.NewModel(confirmScript(), nil)}
	cfg := &ai.Config{Model: a.model, Logger: (&logBuffer{}).logger()}
	if cs != nil {
		cfg.Memory = memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(cs), Policy: memory.Window(20, nil)})
	}
	if hook {
		cfg.ToolHooks = []ai.ToolHook{func(next ai.ToolHandler) ai.ToolHandler {
			return func(ctx context.Context, c *ai.ToolCall) (any, error) {
				if c.Name == "drop" && !c.Confirmed {
					return nil, ai.ErrConfirmationRequired
				}
				return next(ctx, c)
			}
		}}
	}
	svc := ai.NewService(svcName, cfg)
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse.", Tools: []ai.Tool{{
		Definition: tool("drop", "drops an item", `{"type":"object","properties":{"item":{"type":"string"}}}`),
		Confirm:    !hook,
		Invoke: func(_ context.Context, args string) (any, error) {
			var v struct{ Item string }
			if err := decode(args, &v); err != nil {
				return nil, err
			}
			a.mu.Lock()
			a.dropped = append(a.dropped, v.Item)
			a.mu.Unlock()
			return "dropped " + v.Item, nil
		},
	}}}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "menu", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: req.UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	opts := &chat.RouterOptions{Logger: (&logBuffer{}).logger()}
	if cs != nil {
		opts.Store = cs
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

func (a *confirmApp) builder(got *messages) *chat.SessionBuilder {
	return a.client.Builder().OnMessage(got.add).On(protocol.EventConfirm, func(ev chat.Event) {
		var c ai.Confirmation
		if err := ev.Decode(&c); err != nil {
			panic(err)
		}
		a.mu.Lock()
		a.asks = append(a.asks, c)
		a.mu.Unlock()
	})
}

func (a *confirmApp) session(t *testing.T, got *messages) chat.Session {
	t.Helper()
	s, err := a.builder(got).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pause asks to drop item and returns the confirmation the turn paused
// on.
func (a *confirmApp) pause(t *testing.T, s chat.Session, got *messages, item string) ai.Confirmation {
	t.Helper()
	n := len(a.confirmations())
	chatOK(t, s, "drop "+item)
	asks := a.confirmations()
	if len(asks) != n+1 {
		t.Fatalf("%d Confirm events after asking to drop %s, want %d", len(asks), item, n+1)
	}
	c := asks[n]
	if c.Tool != "drop" || string(c.Arguments) != `{"item":"`+item+`"}` || c.ID == "" || c.CallID == "" {
		t.Fatalf("confirmation %+v", c)
	}
	if m := got.take(); m != "" {
		t.Fatalf("the paused request answered %q", m)
	}
	return c
}

func send(t *testing.T, s chat.Session, data map[string]any) {
	t.Helper()
	if err := s.Send(context.Background(), data); err != nil {
		t.Fatalf("%v: %v", data, err)
	}
}

func TestConfirmApprove(t *testing.T) {
	for _, hook := range []bool{false, true} {
		a := newConfirmApp(t, nil, hook)
		var got messages
		s := a.session(t, &got)
		c := a.pause(t, s, &got, "sword")
		if d := a.drops(); len(d) != 0 {
			t.Fatalf("hook %v: the tool ran before the confirmation: %v", hook, d)
		}
		send(t, s, map[string]any{"confirm": c.ID, "approve": true})
		if m := got.take(); m != "tool said: dropped sword" {
			t.Fatalf("hook %v: after approving: %q", hook, m)
		}
		wantStrings(t, "drops", a.drops(), "sword")
		wantStrings(t, "the model's last request", lastModelRequest(a.model),
			"system: You are terse.", "human: drop sword", `ai: call drop {"item":"sword"}`, "tool: result drop dropped sword")
		// Answered: the id is stale now.
		err := s.Send(context.Background(), map[string]any{"confirm": c.ID, "approve": true})
		if !errors.Is(err, chat.ErrBadRequest) {
			t.Fatalf("hook %v: answering twice: %v", hook, err)
		}
		wantStrings(t, "drops", a.drops(), "sword")
	}
}

func lastModelRequest(m *llmtest.Model) []string {
	reqs := m.Requests()
	return describe(reqs[len(reqs)-1].Messages)
}

func TestConfirmDenyEditUnrelatedStale(t *testing.T) {
	a := newConfirmApp(t, nil, false)
	var got messages
	s := a.session(t, &got)

	// Denied, with a reason: the model is told.
	c := a.pause(t, s, &got, "sword")
	send(t, s, map[string]any{"confirm": c.ID, "approve": false, "reason": "I like it"})
	if m := got.take(); m != "tool said: the user denied this call: I like it" {
		t.Fatalf("after denying: %q", m)
	}

	// Approved with edited arguments.
	c = a.pause(t, s, &got, "axe")
	send(t, s, map[string]any{"confirm": c.ID, "approve": true, "arguments": map[string]any{"item": "bow"}})
	if m := got.take(); m != `tool said: the user changed the arguments to {"item":"bow"}; the result: dropped bow` {
		t.Fatalf("after editing: %q", m)
	}
	wantStrings(t, "drops", a.drops(), "bow")

	// A stale id, a bad answer: BadRequest, and the confirmation is still
	// pending.
	c = a.pause(t, s, &got, "staff")
	for _, bad := range []map[string]any{
		{"confirm": "nope", "approve": true},
		{"confirm": c.ID},
		{"confirm": c.ID, "approve": "yes"},
		{"confirm": c.ID, "approve": true, "arguments": "bow"},
	} {
		if err := s.Send(context.Background(), bad); !errors.Is(err, chat.ErrBadRequest) {
			t.Fatalf("%v: %v, want BadRequest", bad, err)
		}
	}
	wantStrings(t, "drops", a.drops(), "bow")

	// A message instead of an answer denies the call and is answered.
	chatOK(t, s, "hello")
	if m := got.take(); m != "re: hello" {
		t.Fatalf("the unrelated message: %q", m)
	}
	last := lastModelRequest(a.model)
	wantStrings(t, "the model's last request", last[max(0, len(last)-3):],
		`ai: call drop {"item":"staff"}`,
		"tool: result drop the user did not confirm this call and wrote a new message instead",
		"human: hello")
	wantStrings(t, "drops", a.drops(), "bow")
	if err := s.Send(context.Background(), map[string]any{"confirm": c.ID, "approve": true}); !errors.Is(err, chat.ErrBadRequest) {
		t.Fatalf("answering a confirmation the user passed over: %v", err)
	}
}

func TestConfirmSurvivesARestart(t *testing.T) {
	cs := chat.NewInMemoryConversationStore(nil)
	a := newConfirmApp(t, cs, false)
	var got messages
	s := a.session(t, &got)
	c := a.pause(t, s, &got, "sword")
	id, token := s.ConversationID(), s.ResumeToken()
	if err := a.client.Detach(); err != nil {
		t.Fatal(err)
	}

	b := newConfirmApp(t, cs, false)
	s2, err := b.builder(&got).Resume(context.Background(), id, token)
	if err != nil {
		t.Fatal(err)
	}
	send(t, s2, map[string]any{"confirm": c.ID, "approve": true})
	if m := got.take(); m != "tool said: dropped sword" {
		t.Fatalf("after the restart: %q", m)
	}
	wantStrings(t, "drops in the new process", b.drops(), "sword")
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	wantStats(t, "after closing", b.router, 0, 0)
}

// Outside a route, the paused turn is an error the caller can answer on
// its own.
func TestConfirmPendingError(t *testing.T) {
	f := newModelFixture(t, confirmScript(), &ai.Config{})
	req := f.req("drop sword")
	req.Method.Tools = []ai.Tool{{Definition: tool("drop", "drops an item", `{"type":"object"}`), Confirm: true,
		Invoke: func(context.Context, string) (any, error) { return "dropped", nil }}}
	ctx := begin(t)
	_, err := f.svc.Chat(ctx, req)
	var p *ai.ConfirmationPending
	if !errors.As(err, &p) || !errors.Is(err, chat.ErrPaused) || !errors.Is(err, ai.ErrConfirmationRequired) || p.Tool != "drop" {
		t.Fatalf("err %v", err)
	}
}

// Two calls of one reply need confirmation, beside one that does not: the
// free one runs at once, the turn pauses on the first, then on the second,
// and the model gets every result in the end.
func TestConfirmSeveralCallsOfOneReply(t *testing.T) {
	model := llmtest.NewModel(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 {
			var parts []string
			for _, r := range res {
				parts = append(parts, r.Name+"="+r.Content)
			}
			return llmtest.Reply{Text: strings.Join(parts, ", ")}, nil
		}
		return calls(call("drop", `{"item":"a"}`), call("look", `{}`), call("drop", `{"item":"b"}`)), nil
	}), nil)
	svc := ai.NewService(svcName, &ai.Config{Model: model, ParallelTools: true, Logger: (&logBuffer{}).logger()})
	var mu sync.Mutex
	var ran []string
	invoke := func(name string) func(context.Context, string) (any, error) {
		return func(_ context.Context, args string) (any, error) {
			mu.Lock()
			ran = append(ran, name+" "+args)
			mu.Unlock()
			return "ok", nil
		}
	}
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, Tools: []ai.Tool{
		{Definition: tool("drop", "drops", `{"type":"object"}`), Confirm: true, Invoke: invoke("drop")},
		{Definition: tool("look", "looks", `{"type":"object"}`), Invoke: invoke("look")},
	}}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "menu", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: req.UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: (&logBuffer{}).logger()}, p)
	if err != nil {
		t.Fatal(err)
	}
	a := &confirmApp{model: model, router: r, client: chat.NewLocalClient(r)}
	t.Cleanup(func() { _ = a.client.Close() })
	var got messages
	s := a.session(t, &got)
	chatOK(t, s, "go")
	asks := a.confirmations()
	if len(asks) != 1 || string(asks[0].Arguments) != `{"item":"a"}` || got.take() != "" {
		t.Fatalf("first pause: %+v", asks)
	}
	wantStrings(t, "ran before the first answer", ran, "look {}")
	send(t, s, map[string]any{"confirm": asks[0].ID, "approve": false})
	asks = a.confirmations()
	if len(asks) != 2 || string(asks[1].Arguments) != `{"item":"b"}` || got.take() != "" {
		t.Fatalf("second pause: %+v", asks)
	}
	send(t, s, map[string]any{"confirm": asks[1].ID, "approve": true})
	if m := got.take(); m != "look=ok, drop=the user denied this call, drop=ok" {
		t.Fatalf("the answer: %q", m)
	}
	wantStrings(t, "ran", ran, "look {}", `drop {"item":"b"}`)
	wantStrings(t, "the model's last request", lastModelRequest(model)[1:],
		`ai: call drop {"item":"a"} | call look {} | call drop {"item":"b"}`,
		"tool: result look ok", "tool: result drop the user denied this call", "tool: result drop ok")
}
