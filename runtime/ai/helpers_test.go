package ai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

const svcName = "example.com/app.Assistant"

// tool returns a generated-style tool definition.
func tool(name, desc, params string) llms.Tool {
	return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: name, Description: desc, Parameters: json.RawMessage(params),
	}}
}

// testTools are the definitions of the tests' tools, in the order of
// toolbox.tools.
var testTools = []llms.Tool{
	tool("weather", "Weather tells the weather in a city.", `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`),
	tool("add", "Add adds two numbers.", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
	tool("fail", "Fail always fails.", `{"type":"object","properties":{}}`),
	tool("boom", "Boom panics.", `{"type":"object","properties":{}}`),
	tool("show", "Show shows a card to the user (immediate).", `{"type":"object","properties":{"card":{"type":"string"}},"required":["card"]}`),
	tool("note", "Note takes a note.", `{"type":"object","properties":{"text":{"type":"string"}}}`),
}

// Forecast is the weather tool's result.
type Forecast struct {
	City string `json:"city"`
	Sky  string `json:"sky"`
}

// Card is the show tool's result.
type Card struct {
	Title string `json:"title"`
}

// ChatEventType makes Card a //chat:event type.
func (Card) ChatEventType() string { return "Card" }

// toolbox holds the tools' state: what they were called with.
type toolbox struct {
	mu    sync.Mutex
	calls []string
	// hooks run inside a tool, by tool name (tests use them to act from
	// within the loop: clear memory, block, call the service again).
	hooks map[string]func(ctx context.Context) error
}

func (b *toolbox) record(s string) {
	b.mu.Lock()
	b.calls = append(b.calls, s)
	b.mu.Unlock()
}

func (b *toolbox) called() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.calls...)
}

func (b *toolbox) hook(ctx context.Context, name string) error {
	if fn := b.hooks[name]; fn != nil {
		return fn(ctx)
	}
	return nil
}

// decode decodes tool arguments as generated code does.
func decode(arguments string, v any) error {
	dec := json.NewDecoder(strings.NewReader(arguments))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &ai.ArgumentsError{Err: err}
	}
	return nil
}

// tools returns the tools of testTools, with the functions that run them.
func (b *toolbox) tools() []ai.Tool {
	invokers := []ai.Tool{
		{Invoke: func(ctx context.Context, arguments string) (any, error) {
			var args struct {
				City string `json:"city"`
			}
			if err := decode(arguments, &args); err != nil {
				return nil, err
			}
			b.record("weather " + args.City)
			if err := b.hook(ctx, "weather"); err != nil {
				return nil, err
			}
			return Forecast{City: args.City, Sky: "sunny"}, nil
		}},
		{Invoke: func(ctx context.Context, arguments string) (any, error) {
			var args struct{ A, B int }
			if err := decode(arguments, &args); err != nil {
				return nil, err
			}
			b.record(fmt.Sprintf("add %d %d", args.A, args.B))
			if err := b.hook(ctx, "add"); err != nil {
				return nil, err
			}
			return args.A + args.B, nil
		}},
		{Invoke: func(ctx context.Context, _ string) (any, error) {
			b.record("fail")
			return nil, errors.New("the forge is cold")
		}},
		{Invoke: func(ctx context.Context, _ string) (any, error) {
			b.record("boom")
			panic("kaboom")
		}},
		{Immediate: true, Invoke: func(ctx context.Context, arguments string) (any, error) {
			var args struct {
				Card string `json:"card"`
			}
			if err := decode(arguments, &args); err != nil {
				return nil, err
			}
			b.record("show " + args.Card)
			if err := b.hook(ctx, "show"); err != nil {
				return nil, err
			}
			return Card{Title: args.Card}, nil
		}},
		{Invoke: func(ctx context.Context, arguments string) (any, error) {
			var args struct {
				Text string `json:"text"`
			}
			if err := decode(arguments, &args); err != nil {
				return nil, err
			}
			b.record("note " + args.Text)
			if err := b.hook(ctx, "note"); err != nil {
				return nil, err
			}
			return nil, nil
		}},
	}
	for i := range invokers {
		invokers[i].Definition = testTools[i]
	}
	return invokers
}

// fixture is a service with its model, memory and tools.
type fixture struct {
	t     *testing.T
	srv   *llmtest.Server // nil for an in-process model
	model *llmtest.Model  // nil for a server
	store *memory.InMemoryStore
	mem   *memory.Manager
	svc   *ai.Service
	box   *toolbox
	tools []ai.Tool
	logs  *logBuffer
}

// newServerFixture returns a service talking to an llmtest.Server through
// langchaingo's real OpenAI client.
func newServerFixture(t *testing.T, script llmtest.Script, cfg *ai.Config) *fixture {
	t.Helper()
	srv := llmtest.NewServer(script, nil)
	t.Cleanup(srv.Close)
	llm, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, llm, cfg)
	f.srv = srv
	return f
}

// newModelFixture returns a service with an in-process llmtest.Model.
func newModelFixture(t *testing.T, script llmtest.Script, cfg *ai.Config) *fixture {
	t.Helper()
	m := llmtest.NewModel(script, nil)
	f := newFixture(t, m, cfg)
	f.model = m
	return f
}

func newFixture(t *testing.T, llm llms.Model, opts *ai.Config) *fixture {
	cfg := *opts
	f := &fixture{t: t, store: memory.NewInMemoryStore(), box: &toolbox{hooks: map[string]func(context.Context) error{}}, logs: &logBuffer{}}
	f.mem = memory.NewManager(&memory.ManagerOptions{Store: f.store, Policy: memory.Window(50, nil)})
	cfg.Model = llm
	if cfg.Memory == nil {
		cfg.Memory = f.mem
	}
	if cfg.Logger == nil {
		cfg.Logger = f.logs.logger()
	}
	f.svc = ai.NewService(svcName, &cfg)
	f.tools = f.box.tools()
	return f
}

// req returns a request of method Ask with the test tools. Its Method is
// its own: tests may change it.
func (f *fixture) req(user string) *ai.Request {
	return &ai.Request{
		Method: &ai.Method{
			Name:   "Ask",
			Kind:   chat.KindChat,
			System: "You are terse.",
			Tools:  f.tools,
		},
		User: user,
	}
}

// requests returns what the model was asked.
func (f *fixture) requests() []llmtest.Request {
	if f.srv != nil {
		return f.srv.Requests()
	}
	return f.model.Requests()
}

// memory returns the messages of id, described.
func (f *fixture) memory(ctx context.Context, id string) []string {
	f.t.Helper()
	m, err := f.mem.Memory(ctx, id)
	if err != nil {
		f.t.Fatal(err)
	}
	msgs, err := m.Messages(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return describe(msgs)
}

// ids returns the memory ids in the store.
func (f *fixture) ids() []string {
	f.t.Helper()
	ids, err := f.store.IDs(context.Background())
	if err != nil {
		f.t.Fatal(err)
	}
	return ids
}

// describe renders messages compactly: "role: part | part".
func describe(msgs []llms.MessageContent) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		var parts []string
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				parts = append(parts, p.Text)
			case llms.ToolCall:
				parts = append(parts, "call "+p.FunctionCall.Name+" "+p.FunctionCall.Arguments)
			case llms.ToolCallResponse:
				parts = append(parts, "result "+p.Name+" "+p.Content)
			default:
				parts = append(parts, fmt.Sprintf("%T", p))
			}
		}
		out = append(out, string(m.Role)+": "+strings.Join(parts, " | "))
	}
	return out
}

func wantStrings(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got: %s\nwant: %s", what, strings.Join(quoteAll(got), "\n      "), strings.Join(quoteAll(want), "\n      "))
	}
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// begin starts a conversation that the test ends.
func begin(t *testing.T) context.Context {
	t.Helper()
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = chat.End(ctx) })
	return ctx
}

// memID is the default memory id of method Ask in ctx's current scope.
func memID(t *testing.T, ctx context.Context) string {
	t.Helper()
	id, err := chat.ID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return id + "#" + svcName + ".Ask"
}

// calls returns a reply calling tools.
func calls(tc ...llmtest.ToolCall) llmtest.Reply { return llmtest.Reply{ToolCalls: tc} }

func call(name, args string) llmtest.ToolCall { return llmtest.ToolCall{Name: name, Arguments: args} }

// logBuffer captures the service's logs.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
