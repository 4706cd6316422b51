package ai_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// source is a ToolSource built by the test: the interface is public API
// (applications may offer run-time tools through it).
type source struct {
	name  string
	tools []ai.Tool
	err   error
	calls atomic.Int32 // Tools calls
}

func (s *source) Name() string { return s.name }

func (s *source) Tools(context.Context) ([]ai.Tool, error) {
	s.calls.Add(1)
	return s.tools, s.err
}

// lister is a source that knows its tools outside a turn.
type lister struct{ *source }

func (l lister) ListTools() []ai.Tool { return l.tools }

func sourceTool(name string, invoke func(context.Context, string) (any, error)) ai.Tool {
	return ai.Tool{Definition: tool(name, "A tool of a source.", `{"type":"object","properties":{"q":{"type":"string"}}}`), Invoke: invoke}
}

func TestToolSourceTools(t *testing.T) {
	src := &source{name: `source "lore"`, tools: []ai.Tool{
		sourceTool("lore", func(_ context.Context, args string) (any, error) { return "lore of " + args, nil }),
		sourceTool("broken", func(context.Context, string) (any, error) { return nil, errors.New("the scroll is torn") }),
	}}
	f := newServerFixture(t, llmtest.Sequence(
		calls(call("lore", `{"q":"mithril"}`), call("broken", `{}`), call("weather", `{"city":"Oslo"}`)),
		llmtest.Reply{Text: "Mithril is light."},
	), &ai.Config{ToolSources: []ai.ToolSource{src}})
	ctx := begin(t)
	reply, err := f.svc.Chat(ctx, f.req("mithril?"))
	if err != nil {
		t.Fatal(err)
	}
	if reply.Content != "Mithril is light." || src.calls.Load() != 1 {
		t.Fatalf("reply %q, Tools called %d times", reply.Content, src.calls.Load())
	}
	reqs := f.requests()
	wantStrings(t, "offered tools", reqs[0].ToolNames(), "weather", "add", "fail", "boom", "show", "note", "lore", "broken")
	var results []string
	for _, r := range reqs[1].LastToolResults() {
		results = append(results, r.Name+": "+r.Content)
	}
	wantStrings(t, "tool results", results,
		`lore: lore of {"q":"mithril"}`,
		"broken: error: the scroll is torn",
		`weather: {"city":"Oslo","sky":"sunny"}`)
	if ex := reply.Executions[1]; ex.Err == nil || ex.Result != nil {
		t.Fatalf("a failing source tool: %+v", ex)
	}

	// A method's own definitions are not changed by the sources.
	if n := len(f.req("").Method.Tools); n != len(testTools) {
		t.Fatalf("the method has %d tools", n)
	}
}

func TestToolSourceError(t *testing.T) {
	src := &source{name: `source "down"`, err: errors.New("no route to host")}
	f := newModelFixture(t, llmtest.Sequence(llmtest.Reply{Text: "unused"}), &ai.Config{ToolSources: []ai.ToolSource{src}})
	ctx := begin(t)
	_, err := f.svc.Chat(ctx, f.req("hi"))
	if err == nil || !strings.Contains(err.Error(), `the tools of source "down": no route to host`) {
		t.Fatalf("err %v", err)
	}
	if f.model.Calls() != 0 {
		t.Fatal("the model was called")
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)))
}

func TestToolSourceClash(t *testing.T) {
	noop := func(context.Context, string) (any, error) { return nil, nil }
	a := &source{name: `MCP server "a"`, tools: []ai.Tool{sourceTool("lore", noop), sourceTool("weather", noop)}}
	b := &source{name: `MCP server "b"`, tools: []ai.Tool{sourceTool("lore", noop)}}
	m := &ai.Method{Name: "Ask", Tools: (&toolbox{}).tools()}

	t.Run("check", func(t *testing.T) {
		svc := ai.NewService(svcName, &ai.Config{Model: llmtest.NewModel(nil, nil), ToolSources: []ai.ToolSource{lister{a}}})
		if err := svc.Check(); err != nil {
			t.Fatalf("no methods declared: %v", err)
		}
		svc.AddMethods(m)
		err := svc.Check()
		if !errors.Is(err, ai.ErrToolClash) {
			t.Fatalf("err %v", err)
		}
		want := `ai: example.com/app.Assistant.Ask: tool name clash: tool "weather" of MCP server "a" clashes with the generated tool "weather" of method Ask`
		if err.Error() != want {
			t.Fatalf("err\n got: %v\nwant: %s", err, want)
		}

		svc = ai.NewService(svcName, &ai.Config{Model: llmtest.NewModel(nil, nil), ToolSources: []ai.ToolSource{lister{b}, lister{a}}})
		svc.AddMethods(&ai.Method{Name: "Plain"})
		want = `ai: example.com/app.Assistant.Plain: tool name clash: tool "lore" of MCP server "a" clashes with tool "lore" of MCP server "b"`
		if err := svc.Check(); err == nil || err.Error() != want {
			t.Fatalf("err\n got: %v\nwant: %s", err, want)
		}
	})

	t.Run("turn", func(t *testing.T) {
		// A source that cannot list its tools outside a turn: the clash
		// fails the turn that meets it, before any model call.
		model := llmtest.NewModel(llmtest.Sequence(llmtest.Reply{Text: "unused"}), nil)
		svc := ai.NewService(svcName, &ai.Config{Model: model, ToolSources: []ai.ToolSource{a}})
		svc.AddMethods(m)
		if err := svc.Check(); err != nil {
			t.Fatalf("check: %v", err)
		}
		_, err := svc.Chat(begin(t), &ai.Request{Method: m, User: "hi"})
		if !errors.Is(err, ai.ErrToolClash) || !strings.Contains(err.Error(), `tool "weather" of MCP server "a" clashes with the generated tool "weather" of method Ask`) {
			t.Fatalf("err %v", err)
		}
		if model.Calls() != 0 {
			t.Fatal("the model was called")
		}
	})

	t.Run("nameless", func(t *testing.T) {
		c := &source{name: `source "c"`, tools: []ai.Tool{{Definition: llms.Tool{Type: "function"}, Invoke: noop}}}
		svc := ai.NewService(svcName, &ai.Config{Model: llmtest.NewModel(nil, nil), ToolSources: []ai.ToolSource{lister{c}}})
		svc.AddMethods(&ai.Method{Name: "Ask"})
		if err := svc.Check(); !errors.Is(err, ai.ErrToolClash) || !strings.Contains(err.Error(), `source "c" offers a tool without a name`) {
			t.Fatalf("err %v", err)
		}
	})
}

// TestToolSourceChanges: a source that returns a new slice has its new
// tools offered (and checked) from the next turn on.
func TestToolSourceChanges(t *testing.T) {
	noop := func(context.Context, string) (any, error) { return "ok", nil }
	src := &source{name: `source "s"`, tools: []ai.Tool{sourceTool("lore", noop)}}
	f := newModelFixture(t, llmtest.Sequence(llmtest.Reply{Text: "1"}, llmtest.Reply{Text: "2"}, llmtest.Reply{Text: "3"}),
		&ai.Config{ToolSources: []ai.ToolSource{src}})
	ctx := begin(t)
	m := f.req("").Method
	for range 2 {
		if _, err := f.svc.Chat(ctx, &ai.Request{Method: m, User: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	src.tools = []ai.Tool{sourceTool("lore", noop), sourceTool("oracle", noop)}
	if _, err := f.svc.Chat(ctx, &ai.Request{Method: m, User: "hi"}); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	wantStrings(t, "second turn", reqs[1].ToolNames()[len(testTools):], "lore")
	wantStrings(t, "third turn", reqs[2].ToolNames()[len(testTools):], "lore", "oracle")

	src.tools = []ai.Tool{sourceTool("weather", noop)}
	if _, err := f.svc.Chat(ctx, &ai.Request{Method: m, User: "hi"}); !errors.Is(err, ai.ErrToolClash) {
		t.Fatalf("a clash after a change: %v", err)
	}
}

// TestToolSourceNil: a nil source (a slot left empty) fails Check and each
// turn with a clear error instead of a panic.
func TestToolSourceNil(t *testing.T) {
	model := llmtest.NewModel(llmtest.Sequence(llmtest.Reply{Text: "unused"}), nil)
	a := &source{name: `MCP server "a"`}
	svc := ai.NewService(svcName, &ai.Config{Model: model, ToolSources: []ai.ToolSource{a, nil}})
	want := "ai: example.com/app.Assistant: nil tool source: ToolSources[1]"
	if err := svc.Check(); !errors.Is(err, ai.ErrNilToolSource) || err.Error() != want {
		t.Fatalf("Check: %v, want %s", err, want)
	}
	m := &ai.Method{Name: "Ask"}
	_, err := svc.Chat(begin(t), &ai.Request{Method: m, User: "hi"})
	if !errors.Is(err, ai.ErrNilToolSource) || !strings.Contains(err.Error(), "nil tool source: ToolSources[1]") {
		t.Fatalf("Chat: %v", err)
	}
	if model.Calls() != 0 {
		t.Fatal("the model was called")
	}
}
