package ai_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

func TestTwoTurnsRemember(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: "Hello Ann."},
		llmtest.Reply{Text: "Your name is Ann."},
	), &ai.Config{})
	ctx := begin(t)

	r1 := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Hi, I am Ann.")))
	if r1.Content != "Hello Ann." || r1.ModelCalls != 1 || r1.FinishReason != "stop" {
		t.Fatalf("first reply %+v", r1)
	}
	r2 := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("What is my name?")))
	if r2.Content != "Your name is Ann." {
		t.Fatalf("second reply %+v", r2)
	}
	reqs := f.requests()
	wantStrings(t, "first request", describe(reqs[0].Messages),
		"system: You are terse.",
		"human: Hi, I am Ann.")
	wantStrings(t, "second request", describe(reqs[1].Messages),
		"system: You are terse.",
		"human: Hi, I am Ann.",
		"ai: Hello Ann.",
		"human: What is my name?")
	wantStrings(t, "tools offered", reqs[1].ToolNames(), "weather", "add", "fail", "boom", "show", "note")
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)),
		"system: You are terse.",
		"human: Hi, I am Ann.",
		"ai: Hello Ann.",
		"human: What is my name?",
		"ai: Your name is Ann.")
	// Usage is what the server reported.
	if r2.Usage.PromptTokens != reqs[1].PromptTokens || r2.Usage.TotalTokens != r2.Usage.PromptTokens+r2.Usage.CompletionTokens || r2.Usage.CompletionTokens == 0 {
		t.Fatalf("usage %+v, prompt tokens %d", r2.Usage, reqs[1].PromptTokens)
	}
}

func TestSystemMessageReplaced(t *testing.T) {
	f := newModelFixture(t, llmtest.Sequence(llmtest.Reply{Text: "a"}, llmtest.Reply{Text: "b"}, llmtest.Reply{Text: "c"}), &ai.Config{})
	ctx := begin(t)
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("one")))
	r := f.req("two")
	r.Method.System = "You are verbose."
	must[*ai.Reply](t)(f.svc.Chat(ctx, r))
	r = f.req("three")
	r.Method.System = "" // no system message: the stored one is kept and sent
	must[*ai.Reply](t)(f.svc.Chat(ctx, r))
	reqs := f.requests()
	wantStrings(t, "second request", describe(reqs[1].Messages),
		"system: You are verbose.", "human: one", "ai: a", "human: two")
	wantStrings(t, "third request", describe(reqs[2].Messages),
		"system: You are verbose.", "human: one", "ai: a", "human: two", "ai: b", "human: three")
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)),
		"system: You are verbose.", "human: one", "ai: a", "human: two", "ai: b", "human: three", "ai: c")
}

func TestToolLoopThreeSteps(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(
		calls(call("weather", `{"city":"Paris"}`)),
		llmtest.Reply{Text: "Adding.", ToolCalls: []llmtest.ToolCall{call("add", `{"a":2,"b":3}`), call("weather", `{"city":"Rome"}`)}},
		llmtest.Reply{Text: "Sunny in Paris and Rome; 2+3=5."},
	), &ai.Config{})
	ctx := begin(t)
	before := f.memory(ctx, memID(t, ctx))

	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Weather in Paris and Rome, and 2+3?")))
	if r.Content != "Sunny in Paris and Rome; 2+3=5." || r.ModelCalls != 3 || r.Immediate {
		t.Fatalf("reply %+v", r)
	}
	wantStrings(t, "tool calls", f.box.called(), "weather Paris", "add 2 3", "weather Rome")
	if len(r.Executions) != 3 {
		t.Fatalf("executions %+v", r.Executions)
	}
	ex := r.Executions[0]
	if ex.Name != "weather" || ex.ID != "call_1" || ex.Arguments != `{"city":"Paris"}` || ex.Result != (Forecast{City: "Paris", Sky: "sunny"}) ||
		ex.Text != `{"city":"Paris","sky":"sunny"}` || ex.Err != nil || ex.Immediate {
		t.Fatalf("execution 0: %+v", ex)
	}
	if r.Executions[1].Result != 5 || r.Executions[1].Text != "5" {
		t.Fatalf("execution 1: %+v", r.Executions[1])
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	wantStrings(t, "third request", describe(reqs[2].Messages),
		"system: You are terse.",
		"human: Weather in Paris and Rome, and 2+3?",
		`ai: call weather {"city":"Paris"}`,
		`tool: result weather {"city":"Paris","sky":"sunny"}`,
		`ai: Adding. | call add {"a":2,"b":3} | call weather {"city":"Rome"}`,
		"tool: result add 5",
		`tool: result weather {"city":"Rome","sky":"sunny"}`)
	wantStrings(t, "memory before", before)
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)),
		"system: You are terse.",
		"human: Weather in Paris and Rome, and 2+3?",
		`ai: call weather {"city":"Paris"}`,
		`tool: result weather {"city":"Paris","sky":"sunny"}`,
		`ai: Adding. | call add {"a":2,"b":3} | call weather {"city":"Rome"}`,
		"tool: result add 5",
		`tool: result weather {"city":"Rome","sky":"sunny"}`,
		"ai: Sunny in Paris and Rome; 2+3=5.")
	// Usage sums the three calls.
	var prompt int
	for _, q := range reqs {
		prompt += q.PromptTokens
	}
	if r.Usage.PromptTokens != prompt || r.Usage.TotalTokens != prompt+r.Usage.CompletionTokens {
		t.Fatalf("usage %+v, want prompt %d", r.Usage, prompt)
	}
	// The next turn sends the whole exchange back: the server accepts it.
	f.srv.Reset()
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Thanks")))
}

// toolFailure runs a turn where the model calls one tool that goes wrong
// and then answers; it returns the reply and what the model was told.
func toolFailure(t *testing.T, tc llmtest.ToolCall) (*fixture, *ai.Reply, string) {
	t.Helper()
	f := newServerFixture(t, llmtest.Sequence(calls(tc), llmtest.Reply{Text: "Sorry."}), &ai.Config{})
	ctx := begin(t)
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Do it.")))
	if r.Content != "Sorry." || len(r.Executions) != 1 {
		t.Fatalf("reply %+v", r)
	}
	res := f.requests()[1].LastToolResults()
	if len(res) != 1 || res[0].Name != tc.Name || res[0].ToolCallID != "call_1" {
		t.Fatalf("tool results %+v", res)
	}
	if r.Executions[0].Text != res[0].Content || r.Executions[0].Result != nil || r.Executions[0].Err == nil {
		t.Fatalf("execution %+v, told %q", r.Executions[0], res[0].Content)
	}
	// The memory has the exchange, error included.
	got := f.memory(ctx, memID(t, ctx))
	if len(got) != 5 || got[3] != "tool: result "+tc.Name+" "+res[0].Content {
		t.Fatalf("memory %q", got)
	}
	return f, r, res[0].Content
}

func TestUnknownTool(t *testing.T) {
	_, r, told := toolFailure(t, call("teleport", `{"to":"Mars"}`))
	if want := `error: unknown tool "teleport"; the tools are weather, add, fail, boom, show, note`; told != want {
		t.Fatalf("told %q, want %q", told, want)
	}
	if !errors.Is(r.Executions[0].Err, ai.ErrUnknownTool) {
		t.Fatalf("err %v", r.Executions[0].Err)
	}
}

func TestToolError(t *testing.T) {
	_, r, told := toolFailure(t, call("fail", `{}`))
	if told != "error: the forge is cold" || r.Executions[0].Err.Error() != "the forge is cold" {
		t.Fatalf("told %q, err %v", told, r.Executions[0].Err)
	}
}

func TestBadToolArguments(t *testing.T) {
	for _, args := range []string{`{"city":42}`, `{"town":"Paris"}`, `{"city":`} {
		t.Run(args, func(t *testing.T) {
			f, r, told := toolFailure(t, call("weather", args))
			if !strings.HasPrefix(told, `error: invalid arguments for tool "weather": `) {
				t.Fatalf("told %q", told)
			}
			var ae *ai.ArgumentsError
			if !errors.As(r.Executions[0].Err, &ae) || len(f.box.called()) != 0 {
				t.Fatalf("err %v, calls %v", r.Executions[0].Err, f.box.called())
			}
		})
	}
}

func TestToolPanic(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		t.Run(map[bool]string{false: "sequential", true: "parallel"}[parallel], func(t *testing.T) {
			f := newServerFixture(t, llmtest.Sequence(
				calls(call("boom", `{}`), call("add", `{"a":1,"b":1}`)),
				llmtest.Reply{Text: "Done."},
			), &ai.Config{ParallelTools: parallel})
			ctx := begin(t)
			r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Go.")))
			res := f.requests()[1].LastToolResults()
			if len(res) != 2 || res[0].Content != `error: tool "boom" failed` || res[1].Content != "2" {
				t.Fatalf("tool results %+v", res)
			}
			var pe *chat.PanicError
			if !errors.As(r.Executions[0].Err, &pe) || pe.Value != "kaboom" || r.Executions[1].Result != 2 {
				t.Fatalf("executions %+v", r.Executions)
			}
			if logs := f.logs.String(); !strings.Contains(logs, "ai: tool panicked") || !strings.Contains(logs, "goroutine") {
				t.Fatalf("the panic is not logged with its stack:\n%s", logs)
			}
		})
	}
}

func TestParallelTools(t *testing.T) {
	f := newModelFixture(t, llmtest.Sequence(
		calls(call("weather", `{"city":"Paris"}`), call("add", `{"a":1,"b":2}`), call("weather", `{"city":"Oslo"}`)),
		llmtest.Reply{Text: "ok"},
	), &ai.Config{ParallelTools: true})
	// Each tool waits until all three have started: they must run
	// concurrently.
	var started sync.WaitGroup
	started.Add(3)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	wait := func(context.Context) error {
		started.Done()
		select {
		case <-all:
			return nil
		case <-time.After(5 * time.Second):
			return errors.New("the tools did not run concurrently")
		}
	}
	f.box.hooks["weather"], f.box.hooks["add"] = wait, wait
	ctx := begin(t)
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Go.")))
	var texts []string
	for _, ex := range r.Executions {
		if ex.Err != nil {
			t.Fatal(ex.Err)
		}
		texts = append(texts, ex.Text)
	}
	wantStrings(t, "results in call order", texts, `{"city":"Paris","sky":"sunny"}`, "3", `{"city":"Oslo","sky":"sunny"}`)
	wantStrings(t, "sent in call order", describe(f.requests()[1].Messages)[3:],
		`tool: result weather {"city":"Paris","sky":"sunny"}`, "tool: result add 3", `tool: result weather {"city":"Oslo","sky":"sunny"}`)
}

func TestMaxModelCalls(t *testing.T) {
	loop := llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if req.LastUserText() == "hi" {
			return llmtest.Reply{Text: "hello"}, nil
		}
		return calls(call("add", `{"a":1,"b":1}`)), nil
	})
	for _, tc := range []struct{ max, want int }{{0, 10}, {3, 3}} {
		f := newServerFixture(t, loop, &ai.Config{MaxModelCalls: tc.max})
		ctx := begin(t)
		must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("hi")))
		before := f.memory(ctx, memID(t, ctx))
		f.srv.Reset()
		_, err := f.svc.Chat(ctx, f.req("Loop forever."))
		if !errors.Is(err, ai.ErrTooManyModelCalls) || !strings.Contains(err.Error(), svcName+".Ask") {
			t.Fatalf("max %d: err %v", tc.max, err)
		}
		if n := f.srv.Calls(); n != tc.want {
			t.Fatalf("max %d: %d model calls, want %d", tc.max, n, tc.want)
		}
		wantStrings(t, "memory after the failed turn", f.memory(ctx, memID(t, ctx)), before...)
	}
}

func TestImmediateTools(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(
		calls(call("show", `{"card":"Ace"}`), call("show", `{"card":"King"}`)),
		llmtest.Reply{Text: "You saw two cards."},
	), &ai.Config{})
	ctx := begin(t)
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Show me cards.")))
	if n := f.srv.Calls(); n != 1 {
		t.Fatalf("%d model calls, want 1", n)
	}
	if !r.Immediate || r.Content != "" || r.ModelCalls != 1 || len(r.Executions) != 2 ||
		r.Executions[0].Result != (Card{Title: "Ace"}) || r.Executions[1].Result != (Card{Title: "King"}) || !r.Executions[0].Immediate {
		t.Fatalf("reply %+v", r)
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)),
		"system: You are terse.",
		"human: Show me cards.",
		`ai: call show {"card":"Ace"} | call show {"card":"King"}`,
		`tool: result show {"title":"Ace"}`,
		`tool: result show {"title":"King"}`)
	// The memory is a valid conversation for the next turn.
	r = must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("What did I see?")))
	if r.Content != "You saw two cards." || r.Immediate {
		t.Fatalf("reply %+v", r)
	}
}

func TestImmediateMixedOrFailedContinues(t *testing.T) {
	for name, first := range map[string]llmtest.Reply{
		"mixed":  calls(call("show", `{"card":"Ace"}`), call("add", `{"a":1,"b":2}`)),
		"failed": calls(call("show", `{"card":7}`)),
	} {
		t.Run(name, func(t *testing.T) {
			f := newServerFixture(t, llmtest.Sequence(first, llmtest.Reply{Text: "Fine."}), &ai.Config{})
			ctx := begin(t)
			r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Go.")))
			if r.Immediate || r.Content != "Fine." || f.srv.Calls() != 2 {
				t.Fatalf("reply %+v after %d calls", r, f.srv.Calls())
			}
		})
	}
}

func TestModelFailureLeavesMemory(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: "First."},
		calls(call("note", `{"text":"x"}`)),              // the tool runs…
		llmtest.Reply{Status: 500, ErrorMessage: "boom"}, // …and the follow-up fails
		llmtest.Reply{Delay: time.Minute, Text: "too late"},
		llmtest.Reply{Text: "Second."},
	), &ai.Config{})
	ctx := begin(t)
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("one")))
	before := f.memory(ctx, memID(t, ctx))

	_, err := f.svc.Chat(ctx, f.req("two"))
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "model call 2") {
		t.Fatalf("err %v", err)
	}
	wantStrings(t, "memory after HTTP 500", f.memory(ctx, memID(t, ctx)), before...)

	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = f.svc.Chat(tctx, f.req("two"))
	// The call is cut at the deadline: long before the reply's minute,
	// however loaded the machine.
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 20*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	wantStrings(t, "memory after the timeout", f.memory(ctx, memID(t, ctx)), before...)

	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("two")))
	if r.Content != "Second." {
		t.Fatalf("reply %+v", r)
	}
	wantStrings(t, "next turn's request", describe(f.requests()[len(f.requests())-1].Messages),
		"system: You are terse.", "human: one", "ai: First.", "human: two")
}

func TestCancelledBeforeCommit(t *testing.T) {
	// The model answers, but the context ends during the tool call: the
	// loop stops and nothing is committed.
	f := newModelFixture(t, llmtest.Sequence(calls(call("note", `{"text":"x"}`)), llmtest.Reply{Text: "never"}), &ai.Config{})
	ctx := begin(t)
	cctx, cancel := context.WithCancel(ctx)
	f.box.hooks["note"] = func(context.Context) error { cancel(); return nil }
	_, err := f.svc.Chat(cctx, f.req("hi"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)))
	if f.model.Calls() != 1 {
		t.Fatalf("%d model calls", f.model.Calls())
	}
}

func TestNoScopeNoModel(t *testing.T) {
	f := newModelFixture(t, llmtest.Sequence(), &ai.Config{})
	_, err := f.svc.Chat(context.Background(), f.req("hi"))
	if !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("no scope: %v", err)
	}
	r := f.req("hi")
	r.Method.Kind = chat.KindInvocation
	if _, err := f.svc.Chat(context.Background(), r); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("no invocation: %v", err)
	}
	svc := ai.NewService(svcName, &ai.Config{})
	if _, err := svc.Chat(begin(t), f.req("hi")); !errors.Is(err, ai.ErrNoModel) {
		t.Fatalf("no model: %v", err)
	}
	for _, err := range svc.Stream(begin(t), f.req("hi")) {
		if !errors.Is(err, ai.ErrNoModel) {
			t.Fatalf("no model (stream): %v", err)
		}
	}
	bad := f.req("hi")
	bad.Method = nil
	if _, err := f.svc.Chat(begin(t), bad); !errors.Is(err, ai.ErrInvalidRequest) {
		t.Fatalf("no method: %v", err)
	}
	if _, err := f.svc.Chat(begin(t), nil); !errors.Is(err, ai.ErrInvalidRequest) {
		t.Fatalf("nil request: %v", err)
	}
}

func TestExplicitMemoryID(t *testing.T) {
	f := newModelFixture(t, llmtest.Sequence(llmtest.Reply{Text: "a"}, llmtest.Reply{Text: "b"}), &ai.Config{})
	r := f.req("one")
	r.MemoryID = "user-42"
	must[*ai.Reply](t)(f.svc.Chat(context.Background(), r)) // no scope needed
	ctx := begin(t)
	r = f.req("two")
	r.MemoryID = "user-42"
	must[*ai.Reply](t)(f.svc.Chat(ctx, r))
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
	// Explicit memory belongs to the application: the scope's end leaves it.
	wantStrings(t, "ids", f.ids(), "user-42")
	wantStrings(t, "memory", f.memory(context.Background(), "user-42"),
		"system: You are terse.", "human: one", "ai: a", "human: two", "ai: b")
}

func TestConcurrentTurnsSameMemory(t *testing.T) {
	// Each answer takes a while; two turns on one memory must not
	// interleave: the second sees the first's whole exchange.
	f := newModelFixture(t, llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: "re: " + req.LastUserText(), Delay: 30 * time.Millisecond}, nil
	}), &ai.Config{})
	ctx := begin(t)
	var wg sync.WaitGroup
	for _, msg := range []string{"A", "B", "C"} {
		wg.Go(func() {
			if _, err := f.svc.Chat(ctx, f.req(msg)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := f.memory(ctx, memID(t, ctx))
	if len(got) != 7 {
		t.Fatalf("memory %q", got)
	}
	for i := 1; i < 7; i += 2 {
		user := strings.TrimPrefix(got[i], "human: ")
		if got[i+1] != "ai: re: "+user {
			t.Fatalf("interleaved turns: %q", got)
		}
	}
	for i, req := range f.requests() {
		if n := len(req.Messages); n != 2+2*i {
			t.Fatalf("request %d has %d messages: turns overlapped", i, n)
		}
	}
}

func TestReentrantCallIsToldToTheModel(t *testing.T) {
	f := newModelFixture(t, llmtest.Sequence(calls(call("note", `{"text":"x"}`)), llmtest.Reply{Text: "ok"}), &ai.Config{})
	f.box.hooks["note"] = func(ctx context.Context) error {
		_, err := f.svc.Chat(ctx, f.req("again"))
		return err
	}
	ctx := begin(t)
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("hi")))
	if !errors.Is(r.Executions[0].Err, ai.ErrReentrant) {
		t.Fatalf("execution %+v", r.Executions[0])
	}
}

func TestUsageAndChoices(t *testing.T) {
	// Anthropic's provider reports InputTokens/OutputTokens (int) and
	// splits an answer into one choice per content block; others use
	// int32 values.
	m := &fakeModel{replies: []*llms.ContentResponse{
		{Choices: []*llms.ContentChoice{
			{Content: "Let me look. ", StopReason: "tool_use", GenerationInfo: map[string]any{"InputTokens": 10, "OutputTokens": 5}},
			{ToolCalls: []llms.ToolCall{{ID: "toolu_1", FunctionCall: &llms.FunctionCall{Name: "add", Arguments: `{"a":1,"b":2}`}}}, StopReason: "tool_use", GenerationInfo: map[string]any{"InputTokens": 10, "OutputTokens": 5}},
		}},
		{Choices: []*llms.ContentChoice{{Content: "3", StopReason: "end_turn", GenerationInfo: map[string]any{"PromptTokens": int32(20), "CompletionTokens": int32(1), "TotalTokens": int32(21)}}}},
	}}
	f := newFixture(t, m, &ai.Config{})
	ctx := begin(t)
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("1+2?")))
	if r.Usage != (ai.Usage{PromptTokens: 30, CompletionTokens: 6, TotalTokens: 36}) || r.FinishReason != "end_turn" || r.Content != "3" {
		t.Fatalf("reply %+v", r)
	}
	wantStrings(t, "second call", describe(m.got[1])[2:],
		`ai: Let me look.  | call add {"a":1,"b":2}`, "tool: result add 3")
	if tc := m.got[1][2].Parts[1].(llms.ToolCall); tc.Type != "function" || tc.ID != "toolu_1" {
		t.Fatalf("tool call %+v", tc)
	}
}

// fakeModel answers with canned responses and records the messages.
type fakeModel struct {
	mu      sync.Mutex
	replies []*llms.ContentResponse
	got     [][]llms.MessageContent
}

func (m *fakeModel) GenerateContent(_ context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, append([]llms.MessageContent(nil), msgs...))
	if len(m.replies) == 0 {
		return nil, errors.New("no more replies")
	}
	r := m.replies[0]
	m.replies = m.replies[1:]
	return r, nil
}

func (m *fakeModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

func TestDefaultMemory(t *testing.T) {
	// Without Config.Memory: a window of memory.DefaultMaxMessages.
	svc := ai.NewService(svcName, &ai.Config{Model: llmtest.NewModel(llmtest.ScriptFunc(func(*llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: "ok"}, nil
	}), nil)})
	ctx := begin(t)
	for range 8 {
		must[*ai.Reply](t)(svc.Chat(ctx, &ai.Request{Method: &ai.Method{Name: "Ask", System: "sys"}, User: "hi"}))
	}
	mem := must[memory.Memory](t)(svc.Memory().Memory(ctx, memID(t, ctx)))
	msgs := must[[]llms.MessageContent](t)(mem.Messages(ctx))
	// Whole turns of two messages: the system message and four turns.
	if len(msgs) != memory.DefaultMaxMessages-1 || msgs[0].Role != llms.ChatMessageTypeSystem || msgs[1].Role != llms.ChatMessageTypeHuman {
		t.Fatalf("memory %q", describe(msgs))
	}
}
