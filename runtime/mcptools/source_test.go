package mcptools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/mcptools"
)

// weather is a generated-style tool, offered next to the MCP ones.
var weather = ai.Tool{
	Name:        "weather",
	Description: "Weather tells the weather in a city.",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
	Invoke:      func(context.Context, string) (any, error) { return "sunny", nil },
}

// ask is the method the tests' services run.
var ask = ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are a loremaster.", Tools: []ai.Tool{weather}}

// plain is a method of a service without MCP tools.
var plain = ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You keep the gate.", Tools: []ai.Tool{weather}}

// fixture is a scripted OpenAI-compatible server, langchaingo's real
// OpenAI client talking to it, and a service with the MCP sources.
type fixture struct {
	t    *testing.T
	llm  *llmtest.Server
	svc  *ai.Service
	logs *logBuffer
}

func newFixture(t *testing.T, script llmtest.Script, sources ...ai.ToolSource) *fixture {
	t.Helper()
	f := &fixture{t: t, llm: llmtest.NewServer(script, nil), logs: &logBuffer{}}
	t.Cleanup(f.llm.Close)
	client, err := f.llm.Client()
	if err != nil {
		t.Fatal(err)
	}
	f.svc = ai.NewService("example.com/lore.Loremaster", &ai.Config{Model: client, ToolSources: sources, Logger: f.logs.logger()})
	f.svc.AddMethods(&ask)
	if err := f.svc.Check(); err != nil {
		t.Fatal(err)
	}
	return f
}

// chat runs a turn of ask.
func (f *fixture) chat(ctx context.Context, user string) *ai.Reply {
	f.t.Helper()
	reply, err := f.svc.Chat(ctx, &ai.Request{Method: &ask, User: user})
	if err != nil {
		f.t.Fatal(err)
	}
	return reply
}

// results describes the executions: "name: text".
func results(r *ai.Reply) []string {
	var out []string
	for _, ex := range r.Executions {
		out = append(out, ex.Name+": "+ex.Text)
	}
	return out
}

func begin(t *testing.T) context.Context {
	t.Helper()
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = chat.End(ctx) })
	return ctx
}

func connect(t *testing.T, opts *mcptools.Options) *mcptools.Source {
	t.Helper()
	src, err := mcptools.Connect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Error(err)
		}
	})
	return src
}

func names(tools []ai.Tool) []string {
	var out []string
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

func call(name, args string) llmtest.ToolCall { return llmtest.ToolCall{Name: name, Arguments: args} }

func calls(tc ...llmtest.ToolCall) llmtest.Reply { return llmtest.Reply{ToolCalls: tc} }

func say(text string) llmtest.Reply { return llmtest.Reply{Text: text} }

func want[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got: %#v\nwant: %#v", what, got, want)
	}
}

// TestStdio runs a full turn through langchaingo's OpenAI client in which
// the model calls the tools of an MCP server over stdio, shared by the
// application: results, an error result and a protocol error go to the
// model, and the schemas reach it as the server gives them.
func TestStdio(t *testing.T) {
	leaktest.Check(t)
	src := connect(t, &mcptools.Options{Name: "lore", Transport: stdio("lore"), Deny: []string{"die"}})
	want(t, "listed tools", names(src.ListTools()), []string{"count", "legend", "slow"})
	f := newFixture(t, llmtest.Sequence(
		calls(call("legend", `{"topic":"mithril"}`), call("weather", `{"city":"Moria"}`)),
		calls(call("legend", `{"topic":"unknown"}`), call("legend", `{"topic":7}`), call("legend", `[1]`)),
		say("Mithril was forged in starfire."),
	), src)
	ctx := begin(t)
	reply := f.chat(ctx, "Tell me of mithril.")
	if reply.Content != "Mithril was forged in starfire." {
		t.Fatalf("answer %q", reply.Content)
	}
	want(t, "results", results(reply), []string{
		"legend: The legend of mithril: forged in starfire.",
		"weather: sunny",
		`legend: error: MCP server "lore", tool "legend": no legend speaks of that`,
		`legend: error: MCP server "lore", tool "legend": ` + reply.Executions[3].Err.(*mcptools.ToolError).Text,
		"legend: error: invalid arguments for tool \"legend\": the arguments are not a JSON object",
	})
	var toolErr *mcptools.ToolError
	if !errors.As(reply.Executions[2].Err, &toolErr) || toolErr.Text != "no legend speaks of that" {
		t.Fatalf("an error result: %#v", reply.Executions[2].Err)
	}
	// The SDK's server validates the arguments against the schema.
	if !strings.Contains(reply.Executions[3].Text, "topic") {
		t.Fatalf("the server's validation error does not say what is wrong: %q", reply.Executions[3].Text)
	}
	t.Logf("bad arguments: %s", reply.Executions[3].Text)

	// What the model was offered: the generated tool, then the server's,
	// with the server's input schemas.
	reqs := f.llm.Requests()
	want(t, "offered tools", reqs[0].ToolNames(), []string{"weather", "count", "legend", "slow"})
	var listed map[string]any
	for _, tool := range mustList(t, stdio("lore")) {
		if tool.Name == "legend" {
			listed = tool.InputSchema.(map[string]any)
		}
	}
	want(t, "legend's schema", reqs[0].Tools[2].Function.Parameters, any(listed))
	if reqs[0].Tools[2].Function.Description != "Legend tells the legend of a topic." {
		t.Fatalf("description %q", reqs[0].Tools[2].Function.Description)
	}
	if src.Sessions() != 1 {
		t.Fatalf("%d sessions", src.Sessions())
	}
}

// mustList lists the tools of a server with the SDK's client alone.
func mustList(t *testing.T, transport func(context.Context) (mcp.Transport, error)) []*mcp.Tool {
	t.Helper()
	ctx := context.Background()
	tr, err := transport(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}

// TestHTTPPerScope serves a nested conversation's service with the tools
// of an MCP server over streamable HTTP, a session per chat scope: the
// outer service offers none of them, the session opens on the nested
// scope's first turn, lasts its turns, closes with it, and another
// conversation has its own.
func TestHTTPPerScope(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	src, err := mcptools.PerScope(chat.KindChat, &mcptools.Options{Name: "lore", Transport: h.transport(), Allow: []string{"count"}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	script := llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if len(req.LastToolResults()) > 0 {
			return say("count " + req.LastToolResults()[0].Content), nil
		}
		if slices.Contains(req.ToolNames(), "count") {
			return calls(call("count", `{}`)), nil
		}
		return say("the gate is open"), nil
	})
	f := newFixture(t, script, src)
	gate := ai.NewService("example.com/lore.Gate", &ai.Config{Model: must(f.llm.Client()), Logger: f.logs.logger()})

	ctx := begin(t)
	if _, err := gate.Chat(ctx, &ai.Request{Method: &plain, User: "let me in"}); err != nil {
		t.Fatal(err)
	}
	want(t, "the outer service's tools", f.llm.Requests()[0].ToolNames(), []string{"weather"})
	if src.Sessions() != 0 || h.waitSessions(0) != 0 {
		t.Fatalf("a session opened before use: %d, %d on the server", src.Sessions(), h.sessions())
	}

	if err := chat.Push(ctx); err != nil {
		t.Fatal(err)
	}
	for _, wantCount := range []string{"count 1", "count 2"} {
		if got := f.chat(ctx, "count").Content; got != wantCount {
			t.Fatalf("got %q, want %q", got, wantCount)
		}
	}
	want(t, "the nested service's tools", f.llm.Requests()[1].ToolNames(), []string{"weather", "count"})

	// Another conversation: its own session.
	other := begin(t)
	if got := f.chat(other, "count").Content; got != "count 1" {
		t.Fatalf("another conversation: %q", got)
	}
	if src.Sessions() != 2 || h.waitSessions(2) != 2 {
		t.Fatalf("%d sessions, %d on the server", src.Sessions(), h.sessions())
	}
	if err := chat.End(other); err != nil {
		t.Fatal(err)
	}

	// Popping the scope closes its session: the server forgets it.
	if err := chat.Pop(ctx); err != nil {
		t.Fatal(err)
	}
	if src.Sessions() != 0 || h.waitSessions(0) != 0 {
		t.Fatalf("after the scopes ended: %d sessions, %d on the server", src.Sessions(), h.sessions())
	}
	// A new nested scope starts afresh.
	if err := chat.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.chat(ctx, "count").Content; got != "count 1" {
		t.Fatalf("a new scope: %q", got)
	}
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
	if src.Sessions() != 0 || h.waitSessions(0) != 0 {
		t.Fatalf("after the conversation: %d sessions, %d on the server", src.Sessions(), h.sessions())
	}

	// Outside a chat scope the source cannot say which session to use.
	if _, err := src.Tools(context.Background()); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("no scope: %v", err)
	}
}

// TestDyingServer: the server's process exits during a call. The call
// fails, the model is told, the turn goes on; the next turn opens a new
// session.
func TestDyingServer(t *testing.T) {
	leaktest.Check(t)
	logs := &logBuffer{}
	src := connect(t, &mcptools.Options{Name: "lore", Transport: stdio("lore"), Logger: logs.logger()})
	f := newFixture(t, llmtest.Sequence(
		calls(call("die", `{}`)),
		say("The loremaster fell silent."),
		calls(call("count", `{}`)),
		say("Back."),
	), src)
	ctx := begin(t)
	reply := f.chat(ctx, "die")
	if reply.Content != "The loremaster fell silent." {
		t.Fatalf("answer %q", reply.Content)
	}
	ex := reply.Executions[0]
	if !errors.Is(ex.Err, mcptools.ErrUnavailable) || !strings.HasPrefix(ex.Text, `error: MCP server "lore", tool "die": MCP server unavailable: the session ended during the call`) {
		t.Fatalf("the dying call: %q, %v", ex.Text, ex.Err)
	}
	reply = f.chat(ctx, "count")
	want(t, "after a new session", results(reply), []string{"count: 1"})
	if !strings.Contains(logs.String(), `msg="mcptools: the MCP session ended during a call; the next call opens a new one" server=lore tool=die`) {
		t.Fatalf("the end of the session is not logged:\n%s", logs)
	}
}

// TestCallTimeout: a call past CallTimeout is cancelled and told to the
// model as a failure; the turn goes on.
func TestCallTimeout(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	src := connect(t, &mcptools.Options{Name: "lore", Transport: h.transport(), CallTimeout: 50 * time.Millisecond})
	f := newFixture(t, llmtest.Sequence(calls(call("slow", `{}`)), say("Too slow.")), src)
	reply := f.chat(begin(t), "slow")
	ex := reply.Executions[0]
	if reply.Content != "Too slow." || !errors.Is(ex.Err, context.DeadlineExceeded) ||
		ex.Text != `error: MCP server "lore", tool "slow": no answer within 50ms: context deadline exceeded` {
		t.Fatalf("%q: %q, %v", reply.Content, ex.Text, ex.Err)
	}
}

// TestBadSchema: a server lists a tool whose input schema is broken and
// one whose name models reject: both are left out, logged with the
// reason, and the other tools are usable; allowing one explicitly fails.
func TestBadSchema(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "bad")
	logs := &logBuffer{}
	src := connect(t, &mcptools.Options{Name: "lore", Transport: h.transport(), Logger: logs.logger()})
	want(t, "tools", names(src.ListTools()), []string{"count", "legend", "slow"})
	for _, msg := range []string{
		`MCP server \"lore\": unusable MCP tool \"broken\": its input schema {\"properties\":{\"x\":{\"type\":7}},\"type\":\"object\"}`,
		`MCP server \"lore\": unusable MCP tool \"read.scroll\": models accept tool names of 1 to 64 letters, digits, '_' and '-', starting with a letter or '_'`,
		`MCP server \"lore\": unusable MCP tool \"3d_scroll\": models accept tool names of 1 to 64 letters, digits, '_' and '-', starting with a letter or '_'`,
	} {
		if !strings.Contains(logs.String(), msg) {
			t.Errorf("the log does not say %s:\n%s", msg, logs)
		}
	}
	f := newFixture(t, llmtest.Sequence(calls(call("legend", `{"topic":"runes"}`)), say("ok")), src)
	want(t, "results", results(f.chat(begin(t), "runes")), []string{"legend: The legend of runes: forged in starfire."})

	_, err := mcptools.Connect(context.Background(), &mcptools.Options{Name: "lore", Transport: h.transport(), Allow: []string{"legend", "broken"}})
	if !errors.Is(err, mcptools.ErrUnusableTool) || !strings.Contains(err.Error(), `unusable MCP tool "broken": its input schema`) {
		t.Fatalf("allowing a broken tool: %v", err)
	}
	if h.waitSessions(1) != 1 {
		t.Fatalf("the failed Connect left its session open: %d on the server", h.sessions())
	}
}

// TestFilters: Allow, Deny and Prefix.
func TestFilters(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	opts := func(o mcptools.Options) *mcptools.Options {
		o.Name, o.Transport = "lore", h.transport()
		return &o
	}
	src := connect(t, opts(mcptools.Options{Allow: []string{"legend"}}))
	want(t, "allowed", names(src.ListTools()), []string{"legend"})
	src = connect(t, opts(mcptools.Options{Deny: []string{"slow", "count"}}))
	want(t, "denied", names(src.ListTools()), []string{"legend"})

	_, err := mcptools.Connect(context.Background(), opts(mcptools.Options{Allow: []string{"legend", "oracle"}}))
	if !errors.Is(err, mcptools.ErrUnusableTool) || !strings.Contains(err.Error(), `MCP server "lore": unusable MCP tool: it has no tool "oracle" (it has "count", "legend", "slow")`) {
		t.Fatalf("allowing a missing tool: %v", err)
	}
	if _, err := mcptools.Connect(context.Background(), opts(mcptools.Options{Allow: []string{"legend"}, Deny: []string{"legend"}})); err == nil || !strings.Contains(err.Error(), `tool "legend" is both allowed and denied`) {
		t.Fatalf("allowed and denied: %v", err)
	}

	// A prefix renames the tools for the model, not for the server.
	src = connect(t, opts(mcptools.Options{Prefix: "lore_", Allow: []string{"legend"}}))
	f := newFixture(t, llmtest.Sequence(calls(call("lore_legend", `{"topic":"ash"}`)), say("ok")), src)
	want(t, "prefixed", results(f.chat(begin(t), "ash")), []string{"lore_legend: The legend of ash: forged in starfire."})
}

// TestClash: a server's tool named like a generated one fails the check
// that chat.NewRouter runs, naming both; a prefix resolves it.
func TestClash(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	src := connect(t, &mcptools.Options{Name: "lore", Transport: h.transport()})
	legend := ai.Method{Name: "Tell", Tools: []ai.Tool{{Name: "legend"}}}
	svc := ai.NewService("example.com/lore.Bard", &ai.Config{Model: llmtest.NewModel(nil, nil), ToolSources: []ai.ToolSource{src}})
	svc.AddMethods(&legend)
	pkg := chatimpl.NewPackage("example.com/lore")
	pkg.AddCheck(svc.Check)
	_, err := chat.NewRouter(nil, pkg)
	if !errors.Is(err, ai.ErrToolClash) || !strings.Contains(err.Error(), `tool "legend" of MCP server "lore" clashes with the generated tool "legend" of method Tell`) {
		t.Fatalf("NewRouter: %v", err)
	}

	src = connect(t, &mcptools.Options{Name: "lore", Transport: h.transport(), Prefix: "lore_"})
	svc = ai.NewService("example.com/lore.Bard", &ai.Config{Model: llmtest.NewModel(nil, nil), ToolSources: []ai.ToolSource{src}})
	svc.AddMethods(&legend)
	if err := svc.Check(); err != nil {
		t.Fatal(err)
	}
}

// TestUnavailable: a server that cannot be reached fails Connect; a
// per-scope one leaves the turn without its tools, or fails it when
// Required.
func TestUnavailable(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	url := h.URL
	h.Close()
	gone := mcptools.StreamableHTTP(url, h.client)
	_, err := mcptools.Connect(context.Background(), &mcptools.Options{Name: "lore", Transport: gone})
	if !errors.Is(err, mcptools.ErrUnavailable) {
		t.Fatalf("Connect: %v", err)
	}
	_, err = mcptools.Connect(context.Background(), &mcptools.Options{Name: "lore", Transport: mcptools.Command("/nonexistent/lore-server")})
	if !errors.Is(err, mcptools.ErrUnavailable) || !strings.Contains(err.Error(), "/nonexistent/lore-server") {
		t.Fatalf("Connect to a missing command: %v", err)
	}

	logs := &logBuffer{}
	src, err := mcptools.PerScope(chat.KindPerChat, &mcptools.Options{Name: "lore", Transport: gone, Logger: logs.logger()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	f := newFixture(t, llmtest.Sequence(say("No lore today.")), src)
	ctx := begin(t)
	if got := f.chat(ctx, "lore?").Content; got != "No lore today." {
		t.Fatalf("answer %q", got)
	}
	want(t, "offered", f.llm.Requests()[0].ToolNames(), []string{"weather"})
	if !strings.Contains(logs.String(), `msg="mcptools: the MCP server is unavailable; the turn goes on without its tools" server=lore err="MCP server \"lore\": MCP server unavailable: connecting: `) {
		t.Fatalf("not logged:\n%s", logs)
	}

	required, err := mcptools.PerScope(chat.KindChat, &mcptools.Options{Name: "lore", Transport: gone, Required: true})
	if err != nil {
		t.Fatal(err)
	}
	defer required.Close()
	f = newFixture(t, llmtest.Sequence(say("unused")), required)
	_, err = f.svc.Chat(ctx, &ai.Request{Method: &ask, User: "lore?"})
	if !errors.Is(err, mcptools.ErrUnavailable) || !strings.Contains(err.Error(), `the tools of MCP server "lore"`) {
		t.Fatalf("required: %v", err)
	}
	if f.llm.Calls() != 0 {
		t.Fatal("the model was called")
	}

	// A closed source fails the turns.
	src.Close()
	if _, err := src.Tools(ctx); !errors.Is(err, mcptools.ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}

// TestToolListChanged: a tool the server adds is offered from the next
// turn on.
func TestToolListChanged(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	src := connect(t, &mcptools.Options{Name: "lore", Transport: h.transport()})
	h.mcp.AddTool(&mcp.Tool{Name: "oracle", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	// The notification travels on its own stream: wait for it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		tools, err := src.Tools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(names(tools), "oracle") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new tool never came: %v", names(tools))
		}
		time.Sleep(10 * time.Millisecond)
	}
	want(t, "listed", names(src.ListTools()), []string{"count", "legend", "oracle", "slow"})
}

func TestOptions(t *testing.T) {
	for _, c := range []struct {
		opts *mcptools.Options
		want string
	}{
		{nil, "mcptools: the Options need a Name"},
		{&mcptools.Options{Name: "lore"}, `mcptools: MCP server "lore": the Options need a Transport`},
	} {
		if _, err := mcptools.Connect(context.Background(), c.opts); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v", c.opts, err)
		}
	}
	if _, err := mcptools.PerScope(chat.Kind(9), &mcptools.Options{Name: "lore", Transport: stdio("lore")}); err == nil {
		t.Error("a bad kind")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// logBuffer captures logs.
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
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestPerInvocation: a session per invocation closes when the invocation
// ends.
func TestPerInvocation(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	src, err := mcptools.PerScope(chat.KindInvocation, &mcptools.Options{Name: "lore", Transport: h.transport()})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	ctx, end := chat.BeginInvocation(context.Background())
	tools, err := src.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	again, err := src.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 3 || &tools[0] != &again[0] || src.Sessions() != 1 || h.waitSessions(1) != 1 {
		t.Fatalf("%d tools, %d sessions, %d on the server", len(tools), src.Sessions(), h.sessions())
	}
	end()
	if src.Sessions() != 0 || h.waitSessions(0) != 0 {
		t.Fatalf("after the invocation: %d sessions, %d on the server", src.Sessions(), h.sessions())
	}
}

// TestParallelCalls: the calls of one model reply run concurrently on
// the shared session.
func TestParallelCalls(t *testing.T) {
	leaktest.Check(t)
	src := connect(t, &mcptools.Options{Name: "lore", Transport: stdio("lore")})
	f := newFixture(t, llmtest.Sequence(
		calls(call("legend", `{"topic":"a"}`), call("count", `{}`), call("legend", `{"topic":"b"}`), call("count", `{}`)),
		say("done"),
	), src)
	client := must(f.llm.Client())
	svc := ai.NewService("example.com/lore.Parallel", &ai.Config{Model: client, ToolSources: []ai.ToolSource{src}, ParallelTools: true})
	reply, err := svc.Chat(begin(t), &ai.Request{Method: &ask, User: "all at once"})
	if err != nil {
		t.Fatal(err)
	}
	got := results(reply)
	if got[0] != "legend: The legend of a: forged in starfire." || got[2] != "legend: The legend of b: forged in starfire." ||
		!slices.Contains([]string{"count: 1", "count: 2"}, got[1]) || !slices.Contains([]string{"count: 1", "count: 2"}, got[3]) || got[1] == got[3] {
		t.Fatalf("results %q", got)
	}
}
