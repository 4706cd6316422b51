package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/agent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/ws"
)

const (
	triageSystem  = "You are triage."
	billingSystem = "You are billing."
)

// model is one scripted OpenAI-compatible server for every agent of a
// test: triage hands "refund" messages to billing, billing hands "back"
// messages back, the summariser answers "SUMMARY"; the others echo.
type model struct {
	srv *llmtest.Server
	llm llms.Model
}

func newModel(t *testing.T) *model {
	t.Helper()
	srv := llmtest.NewServer(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		sys := text(req.Messages[0])
		last := req.Messages[len(req.Messages)-1]
		user := lastHuman(req.Messages)
		switch {
		case strings.HasPrefix(sys, agent.DefaultSummaryPrompt):
			return llmtest.Reply{Text: "SUMMARY"}, nil
		case last.Role == llms.ChatMessageTypeTool:
			return llmtest.Reply{Text: "done"}, nil
		case strings.HasPrefix(sys, triageSystem) && strings.Contains(user, "refund"):
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "transfer_to_billing"}}}, nil
		case strings.HasPrefix(sys, billingSystem) && strings.Contains(user, "back"):
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "transfer_back"}}}, nil
		case strings.HasPrefix(sys, triageSystem):
			return llmtest.Reply{Text: "triage: " + user}, nil
		case strings.HasPrefix(sys, billingSystem):
			return llmtest.Reply{Text: "billing: " + user}, nil
		}
		return llmtest.Reply{}, fmt.Errorf("unexpected system message %q", sys)
	}), nil)
	t.Cleanup(srv.Close)
	llm, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	return &model{srv: srv, llm: llm}
}

// requestsOf returns the model's requests whose system message starts
// with system, each described one string per message.
func (m *model) requestsOf(system string) [][]string {
	var out [][]string
	for _, r := range m.srv.Requests() {
		if strings.HasPrefix(text(r.Messages[0]), system) {
			out = append(out, describe(r.Messages))
		}
	}
	return out
}

func text(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func lastHuman(msgs []llms.MessageContent) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llms.ChatMessageTypeHuman {
			return text(msgs[i])
		}
	}
	return ""
}

// describe renders messages as "role: text", tool calls as "ai: call NAME"
// and tool results as "tool: NAME".
func describe(msgs []llms.MessageContent) []string {
	var out []string
	for _, m := range msgs {
		s := string(m.Role) + ": " + text(m)
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				s += "call " + p.FunctionCall.Name
			case llms.ToolCallResponse:
				s += p.Name
			}
		}
		out = append(out, s)
	}
	return out
}

// app is a router of three agents — triage, billing and a summariser —
// and plain routes that hand off, served over a websocket.
type app struct {
	h      *agent.Handoffs
	router *chat.Router
	url    string
	// input is what the tools' hand-offs give.
	input agent.Input
	// records gets the history after each hand-off of a tool.
	records chan []agent.Record
	// errs gets the errors of the "lost" and "bounce" routes.
	errs chan error

	mu sync.Mutex
	// usage is the usage of the last turn of each service.
	usage map[string]ai.Usage
}

// lastUsage returns the usage of the last turn of the service svc.
func (a *app) lastUsage(svc string) ai.Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usage[svc]
}

func newApp(t *testing.T, m *model, store *chat.InMemoryConversationStore, input agent.Input) *app {
	t.Helper()
	return newAppWith(t, m, store, input, nil)
}

func newAppWith(t *testing.T, m *model, store *chat.InMemoryConversationStore, input agent.Input, opts *agent.Options) *app {
	t.Helper()
	a := &app{h: agent.New(opts), input: input, records: make(chan []agent.Record, 16), errs: make(chan error, 16)}
	mem := &memory.ManagerOptions{Policy: memory.Window(50, nil)}
	var ropts chat.RouterOptions
	ropts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if store != nil {
		mem.Store = chatstoretest.InMemoryMemories(store)
		ropts.Store = store
	}
	manager := memory.NewManager(mem)
	cfg := func() *ai.Config {
		return &ai.Config{Model: m.llm, Memory: manager, Logger: ropts.Logger, ModelHooks: []ai.ModelHook{a.h.ModelHook()}}
	}
	triage := ai.NewService("example.com/desk.Triage", cfg())
	billing := ai.NewService("example.com/desk.Billing", cfg())
	summariser := ai.NewService("example.com/desk.Summariser", &ai.Config{Model: m.llm, Logger: ropts.Logger})
	if input.String() == "summary" {
		a.input = agent.Summary(agent.ServiceSummarizer(summariser, ""))
	}
	handOff := func(back bool) func(ctx context.Context, _ string) (any, error) {
		return func(ctx context.Context, _ string) (any, error) {
			var err error
			if back {
				err = a.h.HandBack(ctx, &agent.HandOffOptions{Input: a.input})
			} else {
				err = a.h.HandOff(ctx, "billing", &agent.HandOffOptions{Input: a.input})
			}
			if err != nil {
				return nil, err
			}
			recs, err := a.h.History(ctx)
			a.records <- recs
			return nil, err
		}
	}
	triageAsk := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: triageSystem, Tools: []ai.Tool{
		{Name: "transfer_to_billing", Description: "Hands the conversation to billing.", Immediate: true, Invoke: handOff(false)},
	}}
	billingAsk := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: billingSystem, Tools: []ai.Tool{
		{Name: "transfer_back", Description: "Hands the conversation back.", Immediate: true, Invoke: handOff(true)},
	}}
	route := func(svc *ai.Service, method *ai.Method) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			r, err := svc.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
			if err != nil {
				return err
			}
			a.mu.Lock()
			if a.usage == nil {
				a.usage = map[string]ai.Usage{}
			}
			a.usage[svc.Name()] = r.Usage
			a.mu.Unlock()
			return ai.NewResult(r.Content, r).Send(ctx)
		}
	}
	p := chatimpl.NewPackage("example.com/desk")
	p.AddRoute(chatimpl.RouteSpec{Name: "triage", Default: true, Handle: route(triage, triageAsk)})
	p.AddRoute(chatimpl.RouteSpec{Name: "billing", Handle: route(billing, billingAsk)})
	// desk is a route that hands "billing" messages to billing itself,
	// giving it the last turn, and lets triage answer the others.
	p.AddRoute(chatimpl.RouteSpec{Name: "desk", Handle: func(ctx context.Context) error {
		if strings.Contains(chat.Request(ctx).UserMessage(), "billing") {
			return a.h.HandOff(ctx, "billing", &agent.HandOffOptions{Input: agent.LastTurns(1)})
		}
		return route(triage, triageAsk)(ctx)
	}})
	// door hands off to vip, which needs a role; "history" tells the
	// number of hand-offs instead.
	p.AddRoute(chatimpl.RouteSpec{Name: "vip", Roles: []string{"vip"}, Handle: func(ctx context.Context) error {
		return chat.SendValue(ctx, "welcome")
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "door", Handle: func(ctx context.Context) error {
		if chat.Request(ctx).UserMessage() == "history" {
			recs, err := a.h.History(ctx)
			if err != nil {
				return err
			}
			route, err := chat.CurrentRoute(ctx)
			if err != nil {
				return err
			}
			return chat.SendValue(ctx, fmt.Sprintf("%s: %d hand-offs", route, len(recs)))
		}
		return a.h.HandOff(ctx, "vip", nil)
	}})
	// lost hands off to a route that does not exist.
	p.AddRoute(chatimpl.RouteSpec{Name: "lost", Handle: func(ctx context.Context) error {
		err := a.h.HandOff(ctx, "biling", nil)
		a.errs <- err
		return chat.Response(ctx).Error(fmt.Sprint(err))
	}})
	// ping and pong hand off to each other for ever.
	for _, pair := range [][2]string{{"ping", "pong"}, {"pong", "ping"}} {
		p.AddRoute(chatimpl.RouteSpec{Name: pair[0], Handle: func(ctx context.Context) error {
			err := a.h.HandOff(ctx, pair[1], nil)
			if errors.Is(err, agent.ErrTooManyHandOffs) {
				select {
				case a.errs <- err:
				default:
				}
			}
			return err
		}})
	}
	router, err := chat.NewRouter(&ropts, p)
	if err != nil {
		t.Fatal(err)
	}
	a.router = router
	srv := ws.NewServer(router, &ws.ServerOptions{Logger: ropts.Logger})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	a.url = hs.URL
	return a
}

// client is a websocket session that records its events.
type client struct {
	c  *ws.Client
	s  chat.Session
	mu sync.Mutex
	// events are "Type: data" of every event but the terminators.
	events []string
}

func (a *app) dial(t *testing.T, route string) *client {
	t.Helper()
	return a.open(t, func(b *chat.SessionBuilder) (chat.Session, error) { return b.Connect(context.Background(), route) })
}

// resume resumes a durable conversation.
func (a *app) resume(t *testing.T, id, token string) *client {
	t.Helper()
	return a.open(t, func(b *chat.SessionBuilder) (chat.Session, error) { return b.Resume(context.Background(), id, token) })
}

func (a *app) open(t *testing.T, start func(*chat.SessionBuilder) (chat.Session, error)) *client {
	t.Helper()
	c, err := ws.Dial(context.Background(), a.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl := &client{c: c}
	s, err := start(c.Builder().OnDefault(cl.record).OnMessage(func(s string) { cl.record(chat.Event{Type: "Message", Data: s}) }).
		OnError(func(s string) { cl.record(chat.Event{Type: "Error", Data: s}) }).
		OnThinking(func(s string) { cl.record(chat.Event{Type: "Thinking", Data: s}) }))
	if err != nil {
		t.Fatal(err)
	}
	cl.s = s
	return cl
}

func (c *client) record(ev chat.Event) {
	var data string
	if s, ok := ev.Data.(string); ok {
		data = s
	} else if raw, err := ev.Raw(); err == nil {
		data = string(raw)
	}
	c.mu.Lock()
	c.events = append(c.events, ev.Type+": "+data)
	c.mu.Unlock()
}

// say sends text and returns the events of its request.
func (c *client) say(t *testing.T, text string) []string {
	t.Helper()
	c.mu.Lock()
	c.events = nil
	c.mu.Unlock()
	if err := c.s.Chat(context.Background(), text); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.events...)
}

func wantStrings(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// waitDetached waits for the router to let go of its conversations (a
// client detached: the server notices the closed connection).
func waitDetached(t *testing.T, r *chat.Router) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for r.Stats().Conversations != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("conversations left: %+v", r.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
