// Package modeltest is a conformance suite for the langchaingo clients an
// AI service talks to. A client passes if
//
//	func TestMyClient(t *testing.T) {
//		modeltest.Run(t, modeltest.Client{
//			Name:  "myclient",
//			Tools: true,
//			New: func(t *testing.T, script llmtest.Script) (llms.Model, modeltest.Recorder) {
//				srv := llmtest.NewServer(script, nil) // a server that speaks the client's wire
//				t.Cleanup(srv.Close)
//				llm, err := myclient.New(myclient.WithBaseURL(srv.URL))
//				if err != nil {
//					t.Fatal(err)
//				}
//				return llm, srv
//			},
//		})
//	}
//
// passes, under -race. Each check runs a generated-style AI service (a
// runtime/ai Service with tools, behind a chat route where the check needs
// one) against the client, pointed at a scripted server: a tool call and
// its result delivered in the provider's shape, text before a tool call,
// two parallel calls, streaming with and without tools, thinking forwarded,
// usage recorded, the memory replayed on the next turn, a confirmed tool
// resumed, a durable conversation resumed mid-tool-loop on a new
// service (a restart), and long conversations that run far past the
// memory's window with each of the package memory's policies (every
// request must still start with a user message, as providers want). The scripted server checks the conversation as the
// provider would, so a check fails where the provider would refuse the
// request.
//
// A check the client cannot pass is declared in [Client.Limitations], with
// the reason (the client's file:line): the suite then expects it to fail,
// and fails when it passes, so the table of limitations stays true. A
// client without tool support ([Client.Tools] false) must be refused by
// chat.NewRouter for a service with tools (ai.ErrToolsUnsupported).
package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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

// A Recorder returns the requests a scripted server received, converted
// back to langchaingo's form. *llmtest.Server and *llmtest.Model are
// Recorders.
type Recorder interface {
	Requests() []llmtest.Request
}

// Client is a langchaingo client under test.
type Client struct {
	// Name names the client in reports, such as "anthropic".
	Name string
	// New returns a model of the client, answering from script through a
	// server that speaks its provider's wire, and the server's record of
	// what it received. The suite calls it once per service it builds.
	New func(t *testing.T, script llmtest.Script) (llms.Model, Recorder)
	// Tools reports that the client can carry tool calls. Without them, the
	// tool checks are not run and a service with tools must be refused.
	Tools bool
	// Thinking reports that the client passes the model's reasoning on
	// (ContentChoice.ReasoningContent or the streaming reasoning function).
	Thinking bool
	// Options are added to every model call of the suite's services
	// (ai.Config.Options).
	Options []llms.CallOption
	// ThinkingOptions are added to the model calls of the Thinking check,
	// after Options: what makes the model think.
	ThinkingOptions []llms.CallOption
	// Client is the ai.Config.Client of the suite's services: the zero
	// value detects it from the model, as applications do.
	Client ai.Client
	// Limitations are the checks the client cannot pass (by [Check] name),
	// each with why: the client's file:line and what it does.
	Limitations map[string]string
}

// Check is one check of the suite.
type Check struct {
	// Name names the check, such as "ToolCall".
	Name string
	// Tools reports that the check needs tool calls.
	Tools bool
	// Thinking reports that the check needs reasoning.
	Thinking bool
	run      func(t *testing.T, c Client) error
}

// Checks returns the suite's checks, in the order Run runs them.
func Checks() []Check {
	return []Check{
		{Name: "Text", run: checkText},
		{Name: "Usage", run: checkUsage},
		{Name: "Stream", run: checkStream},
		{Name: "CutStream", run: checkCutStream},
		{Name: "MemoryReplay", run: checkMemoryReplay},
		{Name: "ToolCall", Tools: true, run: checkToolCall},
		{Name: "ToolWithoutParameters", Tools: true, run: checkToolWithoutParameters},
		{Name: "TextBeforeToolCall", Tools: true, run: checkTextBeforeToolCall},
		{Name: "ParallelToolCalls", Tools: true, run: checkParallelToolCalls},
		{Name: "StreamWithTools", Tools: true, run: checkStreamWithTools},
		{Name: "ToolMemoryReplay", Tools: true, run: checkToolMemoryReplay},
		{Name: "ConfirmResume", Tools: true, run: checkConfirmResume},
		{Name: "DurableResume", Tools: true, run: checkDurableResume},
		{Name: "Thinking", Thinking: true, run: checkThinking},
		{Name: "ThinkingWithTools", Tools: true, Thinking: true, run: checkThinkingWithTools},
		{Name: "LongConversation", run: checkLongConversation},
	}
}

// Run runs the check against c and returns why it failed, nil when it
// passed. It fails t only for what is not the client's doing (a router
// that cannot be built).
func (ch Check) Run(t *testing.T, c Client) error {
	t.Helper()
	return ch.run(t, c)
}

// Status is the outcome of a check for a client.
type Status string

// The outcomes of a check.
const (
	// Passed: the check passed.
	Passed Status = "yes"
	// Limited: the check failed as a declared limitation says.
	Limited Status = "limitation"
	// NotSupported: the client does not carry the capability (Tools or
	// Thinking false), so the check was not run.
	NotSupported Status = "no"
)

// Result is the outcome of one check.
type Result struct {
	Check  string
	Status Status
	// Why is the declared limitation, for Limited.
	Why string
}

// Run runs every check against c and returns the outcomes; a check that
// fails (or a limitation that passes) fails t.
func Run(t *testing.T, c Client) []Result {
	t.Helper()
	var results []Result
	for _, ch := range Checks() {
		switch {
		case ch.Tools && !c.Tools, ch.Thinking && !c.Thinking:
			results = append(results, Result{Check: ch.Name, Status: NotSupported})
			continue
		}
		why, limited := c.Limitations[ch.Name]
		var err error
		t.Run(ch.Name, func(t *testing.T) {
			err = ch.run(t, c)
			switch {
			case err != nil && !limited:
				t.Error(err)
			case err == nil && limited:
				t.Errorf("passes, but is declared a limitation of %s (%s): remove it from Limitations", c.Name, why)
			case err != nil:
				t.Logf("a known limitation of %s (%s): %v", c.Name, why, err)
			}
		})
		st := Passed
		if limited {
			st = Limited
		}
		results = append(results, Result{Check: ch.Name, Status: st, Why: why})
	}
	if !c.Tools {
		t.Run("ToolsRefused", func(t *testing.T) { checkToolsRefused(t, c) })
	}
	for name := range c.Limitations {
		if !slices.ContainsFunc(Checks(), func(ch Check) bool { return ch.Name == name }) {
			t.Errorf("Limitations names no check: %q", name)
		}
	}
	return results
}

// quiet is the logger of the suite's services and routers: the checks
// report what matters.
func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func (c Client) options() []llms.CallOption { return slices.Clip(c.Options) }

// app is a service with a tool table behind a chat route.
type app struct {
	svc    *ai.Service
	rec    Recorder
	router *chat.Router
	client *chat.LocalClient
	method *ai.Method

	mu       sync.Mutex
	ran      []string // the tool calls made: "name args"
	thinking []string
	asks     []ai.Confirmation
	answers  []string
	routeErr error // the last error a route returned
}

// failed records err, the error of a route, and returns it.
func (a *app) failed(err error) error {
	a.mu.Lock()
	a.routeErr = err
	a.mu.Unlock()
	return err
}

// requestError wraps err, the error of a request, with the route's.
func (a *app) requestError(what string, err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.routeErr != nil && !errors.Is(err, a.routeErr) {
		return fmt.Errorf("%s: %w (the route failed: %v)", what, err, a.routeErr)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// appOptions configure an app.
type appOptions struct {
	tools    bool
	confirm  bool // the tool "drop" needs the user's confirmation
	thinking bool
	store    *chat.InMemoryConversationStore // durable when set
	stream   bool                            // the route streams its answer
	// policy, when set and store is not, is the memory's policy, given
	// the model (a compressing memory summarises with it); nil is the
	// service's default memory.
	policy func(llms.Model) memory.Policy
}

// weatherParams is the schema of the tools' arguments.
const weatherParams = `{"type":"object","properties":{"city":{"type":"string","description":"The city."}},"required":["city"],"additionalProperties":false}`

func newApp(t *testing.T, c Client, script llmtest.Script, o appOptions) (*app, error) {
	t.Helper()
	model, rec := c.New(t, script)
	a := &app{rec: rec}
	cfg := &ai.Config{Model: model, Client: c.Client, ForwardThinking: o.thinking, Options: c.options(), Logger: quiet()}
	if o.thinking {
		cfg.Options = append(cfg.Options, c.ThinkingOptions...)
	}
	switch {
	case o.store != nil:
		cfg.Memory = memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(o.store), Policy: memory.Window(40, nil)})
	case o.policy != nil:
		cfg.Memory = memory.NewManager(&memory.ManagerOptions{Policy: o.policy(model)})
	}
	a.svc = ai.NewService("example.com/modeltest.Assistant", cfg)
	a.method = &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}
	if o.tools {
		a.method.Tools = []ai.Tool{
			{Name: "weather", Description: "Weather tells the weather in a city.", Parameters: json.RawMessage(weatherParams), Invoke: a.tool("weather")},
			{Name: "drop", Description: "Drop drops an item.", Parameters: json.RawMessage(`{"type":"object","properties":{"item":{"type":"string"}},"required":["item"]}`),
				Confirm: o.confirm, Invoke: a.tool("drop")},
			{Name: "look", Description: "Look looks around.", Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
				Invoke: a.tool("look")},
		}
	}
	a.svc.AddMethods(a.method)
	p := chatimpl.NewPackage("example.com/modeltest")
	p.AddCheck(a.svc.Check)
	p.AddRoute(chatimpl.RouteSpec{Name: "menu", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		areq := &ai.Request{Method: a.method, User: req.UserMessage()}
		if o.stream {
			var b strings.Builder
			for chunk, err := range a.svc.Stream(ctx, areq) {
				if err != nil {
					return a.failed(err)
				}
				b.WriteString(chunk)
			}
			return chat.SendValue(ctx, b.String())
		}
		r, err := a.svc.Chat(ctx, areq)
		if err != nil {
			return a.failed(err)
		}
		return chat.SendValue(ctx, r.Content)
	}})
	opts := &chat.RouterOptions{Logger: quiet()}
	if o.store != nil {
		opts.Store = o.store
	}
	r, err := chat.NewRouter(opts, p)
	if err != nil {
		return nil, err
	}
	a.router = r
	a.client = chat.NewLocalClient(r)
	t.Cleanup(func() { _ = a.client.Close() })
	return a, nil
}

// mustApp is newApp failing t on an error.
func mustApp(t *testing.T, c Client, script llmtest.Script, o appOptions) *app {
	t.Helper()
	a, err := newApp(t, c, script, o)
	if err != nil {
		t.Fatalf("chat.NewRouter: %v", err)
	}
	return a
}

// tool returns the Invoke of a tool that records its call and answers
// "<name> of <argument>".
func (a *app) tool(name string) func(context.Context, string) (any, error) {
	return func(_ context.Context, args string) (any, error) {
		var v map[string]string
		if err := json.Unmarshal([]byte(args), &v); err != nil {
			return nil, &ai.ArgumentsError{Err: err}
		}
		a.mu.Lock()
		a.ran = append(a.ran, name+" "+v["city"]+v["item"])
		a.mu.Unlock()
		switch name {
		case "weather":
			return "sunny in " + v["city"], nil
		case "look":
			return "an anvil", nil
		default:
			return "dropped " + v["item"], nil
		}
	}
}

func (a *app) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ran)
}

// session opens a session whose answers, thoughts and confirmations a
// records.
func (a *app) session(ctx context.Context) (chat.Session, error) {
	return a.builder().Connect(ctx, "")
}

func (a *app) builder() *chat.SessionBuilder {
	return a.client.Builder().
		OnMessage(func(text string) {
			a.mu.Lock()
			a.answers = append(a.answers, text)
			a.mu.Unlock()
		}).
		OnThinking(func(text string) {
			a.mu.Lock()
			a.thinking = append(a.thinking, text)
			a.mu.Unlock()
		}).
		On(protocol.EventConfirm, func(ev chat.Event) {
			var c ai.Confirmation
			if ev.Decode(&c) == nil {
				a.mu.Lock()
				a.asks = append(a.asks, c)
				a.mu.Unlock()
			}
		})
}

// ask sends text and returns the answer the request got.
func (a *app) ask(ctx context.Context, s chat.Session, text string) (string, error) {
	a.mu.Lock()
	n := len(a.answers)
	a.mu.Unlock()
	if err := s.Chat(ctx, text); err != nil {
		return "", a.requestError(fmt.Sprintf("%q", text), err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.answers) != n+1 {
		return "", fmt.Errorf("%q: %d answers, want 1", text, len(a.answers)-n)
	}
	return a.answers[n], nil
}

// lastRequest returns the last request the server received.
func (a *app) lastRequest() (llmtest.Request, error) {
	reqs := a.rec.Requests()
	if len(reqs) == 0 {
		return llmtest.Request{}, errors.New("the server received no request")
	}
	return reqs[len(reqs)-1], nil
}

// weatherScript calls weather for "weather <city>" (with text before the
// call when text is set) and, after tool results, answers with them.
func weatherScript(text string, cities ...string) llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 {
			parts := make([]string, len(res))
			for i, r := range res {
				parts[i] = r.Content
			}
			return llmtest.Reply{Text: "So: " + strings.Join(parts, "; ") + "."}, nil
		}
		if strings.HasPrefix(req.LastUserText(), "weather") {
			r := llmtest.Reply{Text: text}
			for _, c := range cities {
				r.ToolCalls = append(r.ToolCalls, llmtest.ToolCall{Name: "weather", Arguments: `{"city":"` + c + `"}`})
			}
			return r, nil
		}
		return llmtest.Reply{Text: "You said: " + req.LastUserText()}, nil
	})
}

// describe renders the parts of messages, one line each, whatever
// messages they came in (providers split and merge them differently):
// "<role>: <text>" for text, "call <name> <arguments>" for a tool call and
// "result <content>" for a tool result.
func describe(msgs []llms.MessageContent) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		for _, p := range m.Parts {
			if c, ok := p.(llms.CachedContent); ok {
				// A prompt-cache breakpoint changes nothing the model reads.
				p = c.ContentPart
			}
			switch p := p.(type) {
			case llms.TextContent:
				if p.Text != "" {
					out = append(out, string(m.Role)+": "+p.Text)
				}
			case llms.ToolCall:
				if p.FunctionCall != nil {
					out = append(out, "call "+p.FunctionCall.Name+" "+compactJSON(p.FunctionCall.Arguments))
				}
			case llms.ToolCallResponse:
				out = append(out, "result "+p.Content)
			default:
				out = append(out, fmt.Sprintf("%s: %T", m.Role, p))
			}
		}
	}
	return out
}

func compactJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// contains reports an error unless every line of want is among got, in
// order.
func contains(what string, got []string, want ...string) error {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	if i < len(want) {
		return fmt.Errorf("%s: %q missing from\n\t%s", what, want[i], strings.Join(got, "\n\t"))
	}
	return nil
}

// Table is the outcomes of the suite for several clients, in the order
// they were run.
type Table struct {
	Clients []string
	Results [][]Result // Results[i] are those of Clients[i]
}

// Add adds the results of client name.
func (tb *Table) Add(name string, results []Result) {
	tb.Clients = append(tb.Clients, name)
	tb.Results = append(tb.Results, results)
}

// Markdown renders the table: a row per check, a column per client, with
// "yes", "no" (the client does not carry the capability) or a note number
// for a known limitation, and the notes below.
func (tb *Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| check |")
	for _, c := range tb.Clients {
		b.WriteString(" `" + c + "` |")
	}
	b.WriteString("\n|---|")
	for range tb.Clients {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	var notes []string
	for _, ch := range Checks() {
		b.WriteString("| " + ch.Name + " |")
		for i := range tb.Clients {
			cell := "–"
			for _, r := range tb.Results[i] {
				if r.Check != ch.Name {
					continue
				}
				switch r.Status {
				case Limited:
					notes = append(notes, fmt.Sprintf("%d. `%s`, %s: %s.", len(notes)+1, tb.Clients[i], r.Check, r.Why))
					cell = fmt.Sprintf("limited (%d)", len(notes))
				default:
					cell = string(r.Status)
				}
			}
			b.WriteString(" " + cell + " |")
		}
		b.WriteString("\n")
	}
	if len(notes) > 0 {
		b.WriteString("\n" + strings.Join(notes, "\n") + "\n")
	}
	return b.String()
}
