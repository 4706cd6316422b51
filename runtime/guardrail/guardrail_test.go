package guardrail_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/guardrail"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

const svcName = "example.com/app.Assistant"

// rig is an AI service behind langchaingo's real OpenAI client talking to
// llmtest's strict server.
type rig struct {
	t   *testing.T
	srv *llmtest.Server
	mem *memory.Manager
	svc *ai.Service
	m   *ai.Method
}

func newRig(t *testing.T, cfg ai.Config, replies ...llmtest.Reply) *rig {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Sequence(replies...), nil)
	t.Cleanup(srv.Close)
	model, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, srv: srv, mem: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(50, nil)})}
	cfg.Model = model
	cfg.Memory = r.mem
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	r.svc = ai.NewService(svcName, &cfg)
	r.m = &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}
	return r
}

func (r *rig) req(user string) *ai.Request { return &ai.Request{Method: r.m, User: user} }

// memory returns the conversation's memory, one "role: text" per message.
func (r *rig) memory(ctx context.Context) []string {
	r.t.Helper()
	id, err := chat.ID(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	m, err := r.mem.Memory(ctx, id+"#"+svcName+".Ask")
	if err != nil {
		r.t.Fatal(err)
	}
	msgs, err := m.Messages(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return describe(msgs)
}

// sent returns what the model was sent in call i (from 0), described.
func (r *rig) sent(i int) []string {
	r.t.Helper()
	reqs := r.srv.Requests()
	if i >= len(reqs) {
		r.t.Fatalf("the model had %d calls, not %d", len(reqs), i+1)
	}
	return describe(reqs[i].Messages)
}

func describe(msgs []llms.MessageContent) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		var parts []string
		for _, p := range m.Parts {
			if tc, ok := p.(llms.TextContent); ok {
				parts = append(parts, tc.Text)
			} else {
				parts = append(parts, fmt.Sprintf("%T", p))
			}
		}
		out = append(out, string(m.Role)+": "+strings.Join(parts, " | "))
	}
	return out
}

func want(t *testing.T, what string, got []string, w ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(w, "\n") {
		t.Fatalf("%s:\n got %q\nwant %q", what, got, w)
	}
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

func input(f func(in *guardrail.Input) guardrail.Result) guardrail.InputGuardrail {
	return guardrail.InputFunc(func(_ context.Context, in *guardrail.Input) guardrail.Result { return f(in) })
}

func output(f func(out *guardrail.Output) guardrail.Result) guardrail.OutputGuardrail {
	return guardrail.OutputFunc(func(_ context.Context, out *guardrail.Output) guardrail.Result { return f(out) })
}

// named is a guardrail with a name.
type named struct {
	name string
	guardrail.OutputGuardrail
}

func (n named) GuardrailName() string { return n.name }

func TestInputRewriteReachesModelAndMemory(t *testing.T) {
	var seen []string
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Input: []guardrail.InputGuardrail{
		input(func(in *guardrail.Input) guardrail.Result {
			seen = append(seen, in.Text)
			return guardrail.Rewrite(strings.ReplaceAll(in.Text, "secret", "[redacted]"))
		}),
		input(func(in *guardrail.Input) guardrail.Result {
			seen = append(seen, in.Text, fmt.Sprint(len(in.Memory)))
			return guardrail.Pass()
		}),
	}}}, llmtest.Reply{Text: "Noted."}, llmtest.Reply{Text: "Again."})
	ctx := begin(t)
	reply, err := r.svc.Chat(ctx, r.req("my secret is 42"))
	if err != nil || reply.Content != "Noted." {
		t.Fatalf("reply %+v, err %v", reply, err)
	}
	want(t, "sent", r.sent(0), "system: You are terse.", "human: my [redacted] is 42")
	want(t, "memory", r.memory(ctx), "system: You are terse.", "human: my [redacted] is 42", "ai: Noted.")
	if _, err := r.svc.Chat(ctx, r.req("hi")); err != nil {
		t.Fatal(err)
	}
	// The second guardrail sees the first's rewrite, and the memory.
	want(t, "seen", seen, "my secret is 42", "my [redacted] is 42", "0", "hi", "hi", "3")
}

func TestInputFailTellsUserAndForgetsTurn(t *testing.T) {
	later := 0
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Input: []guardrail.InputGuardrail{
		input(func(in *guardrail.Input) guardrail.Result {
			if strings.Contains(in.Text, "forbidden") {
				return guardrail.Fail("I cannot talk about that.")
			}
			return guardrail.Pass()
		}),
		input(func(*guardrail.Input) guardrail.Result { later++; return guardrail.Pass() }),
	}}}, llmtest.Reply{Text: "Fine."})
	ctx := begin(t)
	_, err := r.svc.Chat(ctx, r.req("the forbidden topic"))
	var ge *guardrail.Error
	if !errors.As(err, &ge) || ge.Outcome != guardrail.OutcomeFail || ge.Message != "I cannot talk about that." || ge.Stage != guardrail.StageInput {
		t.Fatalf("err %v", err)
	}
	if !errors.Is(err, guardrail.ErrGuardrailFailed) {
		t.Fatalf("%v does not match ErrGuardrailFailed", err)
	}
	var f *chat.Failure
	if !errors.As(err, &f) || f.Reason != "GuardrailFailed" {
		t.Fatalf("failure %v", f)
	}
	if n := len(r.srv.Requests()); n != 0 || later != 0 {
		t.Fatalf("%d model calls, %d later guardrails after a failed input", n, later)
	}
	want(t, "memory", r.memory(ctx))
	if reply, err := r.svc.Chat(ctx, r.req("hello")); err != nil || reply.Content != "Fine." {
		t.Fatalf("after the failure: %+v %v", reply, err)
	}
	want(t, "memory", r.memory(ctx), "system: You are terse.", "human: hello", "ai: Fine.")
}

func TestInputFatalAndBadOutcomes(t *testing.T) {
	cause := errors.New("the policy service is down")
	for _, tc := range []struct {
		name string
		res  guardrail.Result
		is   error
	}{
		{"fatal", guardrail.Fatal(cause), cause},
		{"reprompt", guardrail.Reprompt("again"), guardrail.ErrBadOutcome},
		{"unknown", guardrail.Result{Outcome: 99}, guardrail.ErrBadOutcome},
		{"too large", guardrail.Rewrite(strings.Repeat("x", 11)), guardrail.ErrTextTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, ai.Config{Guardrails: &guardrail.Set{MaxText: 10, Input: []guardrail.InputGuardrail{
				input(func(*guardrail.Input) guardrail.Result { return tc.res }),
			}}})
			ctx := begin(t)
			_, err := r.svc.Chat(ctx, r.req("hi"))
			var ge *guardrail.Error
			if !errors.Is(err, tc.is) || !errors.As(err, &ge) || ge.Outcome != guardrail.OutcomeFatal || !errors.Is(err, guardrail.ErrGuardrailFailed) {
				t.Fatalf("err %v", err)
			}
			if len(r.srv.Requests()) != 0 {
				t.Fatal("the model was called")
			}
			want(t, "memory", r.memory(ctx))
		})
	}
}

func TestOutputRewriteIsRemembered(t *testing.T) {
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Output: []guardrail.OutputGuardrail{
		output(func(out *guardrail.Output) guardrail.Result {
			if out.User != "who?" || out.Streamed {
				return guardrail.Fatal(fmt.Errorf("unexpected output %+v", out))
			}
			return guardrail.Rewrite(strings.ToUpper(out.Text))
		}),
		output(func(out *guardrail.Output) guardrail.Result { return guardrail.Rewrite(out.Text + "!") }),
	}}}, llmtest.Reply{Text: "a smith"})
	ctx := begin(t)
	reply, err := r.svc.Chat(ctx, r.req("who?"))
	if err != nil || reply.Content != "A SMITH!" {
		t.Fatalf("reply %+v, err %v", reply, err)
	}
	want(t, "memory", r.memory(ctx), "system: You are terse.", "human: who?", "ai: A SMITH!")
}

func TestOutputRepromptIsBounded(t *testing.T) {
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Output: []guardrail.OutputGuardrail{
		output(func(out *guardrail.Output) guardrail.Result {
			if strings.Contains(out.Text, "sword") {
				return guardrail.Pass()
			}
			return guardrail.Reprompt("Answer with a weapon.")
		}),
	}}},
		llmtest.Reply{Text: "a flower"}, llmtest.Reply{Text: "a sword"},
		llmtest.Reply{Text: "a"}, llmtest.Reply{Text: "b"}, llmtest.Reply{Text: "c"},
	)
	ctx := begin(t)
	reply, err := r.svc.Chat(ctx, r.req("give me something"))
	if err != nil || reply.Content != "a sword" || reply.ModelCalls != 2 {
		t.Fatalf("reply %+v, err %v", reply, err)
	}
	want(t, "second call", r.sent(1), "system: You are terse.", "human: give me something", "ai: a flower", "human: Answer with a weapon.")
	want(t, "memory", r.memory(ctx), "system: You are terse.", "human: give me something", "ai: a sword")

	// The next turn reprompts twice (the default limit), then fails.
	_, err = r.svc.Chat(ctx, r.req("again"))
	if !errors.Is(err, guardrail.ErrTooManyReprompts) || !errors.Is(err, guardrail.ErrGuardrailFailed) {
		t.Fatalf("err %v", err)
	}
	if n := len(r.srv.Requests()); n != 5 {
		t.Fatalf("%d model calls, want 5", n)
	}
	want(t, "memory", r.memory(ctx), "system: You are terse.", "human: give me something", "ai: a sword")
}

func TestOutputRetryWithoutMessageAndNoReprompts(t *testing.T) {
	calls := 0
	g := output(func(out *guardrail.Output) guardrail.Result {
		calls++
		if out.Reprompts == 0 {
			return guardrail.Reprompt("")
		}
		return guardrail.Pass()
	})
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Output: []guardrail.OutputGuardrail{g}}},
		llmtest.Reply{Text: "one"}, llmtest.Reply{Text: "two"})
	ctx := begin(t)
	reply, err := r.svc.Chat(ctx, r.req("count"))
	if err != nil || reply.Content != "two" || calls != 2 {
		t.Fatalf("reply %+v, err %v, %d checks", reply, err, calls)
	}
	// A retry without a message sends the same prompt again.
	want(t, "retry", r.sent(1), r.sent(0)...)

	r = newRig(t, ai.Config{Guardrails: &guardrail.Set{MaxReprompts: -1, Output: []guardrail.OutputGuardrail{g}}},
		llmtest.Reply{Text: "one"})
	calls = 0
	if _, err := r.svc.Chat(begin(t), r.req("count")); !errors.Is(err, guardrail.ErrTooManyReprompts) {
		t.Fatalf("err %v", err)
	}
}

func TestOutputFailForgetsTurn(t *testing.T) {
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Output: []guardrail.OutputGuardrail{
		named{"tone", output(func(out *guardrail.Output) guardrail.Result {
			if strings.Contains(out.Text, "rude") {
				return guardrail.Fail("The answer was withheld.")
			}
			return guardrail.Pass()
		})},
	}}}, llmtest.Reply{Text: "a rude answer"}, llmtest.Reply{Text: "polite"})
	ctx := begin(t)
	_, err := r.svc.Chat(ctx, r.req("hi"))
	var ge *guardrail.Error
	if !errors.As(err, &ge) || ge.Guardrail != "tone" || ge.Stage != guardrail.StageOutput || ge.Outcome != guardrail.OutcomeFail {
		t.Fatalf("err %v", err)
	}
	if strings.Contains(err.Error(), "rude") {
		t.Fatalf("the error repeats the answer: %v", err)
	}
	want(t, "memory", r.memory(ctx))
	if reply, err := r.svc.Chat(ctx, r.req("hi")); err != nil || reply.Content != "polite" {
		t.Fatalf("%+v %v", reply, err)
	}
	want(t, "memory", r.memory(ctx), "system: You are terse.", "human: hi", "ai: polite")
}

func TestOutputGuardrailsSkipToolCallText(t *testing.T) {
	var seen []string
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Output: []guardrail.OutputGuardrail{
		output(func(out *guardrail.Output) guardrail.Result { seen = append(seen, out.Text); return guardrail.Pass() }),
	}}}, llmtest.Reply{Text: "Checking.", ToolCalls: []llmtest.ToolCall{{Name: "look"}}}, llmtest.Reply{Text: "Done."})
	r.m.Tools = []ai.Tool{{Name: "look", Parameters: []byte(`{"type":"object"}`), Invoke: func(context.Context, string) (any, error) { return "seen", nil }}}
	if _, err := r.svc.Chat(begin(t), r.req("look")); err != nil {
		t.Fatal(err)
	}
	want(t, "checked", seen, "Done.")
}

func TestMethodGuardrailsReplaceService(t *testing.T) {
	svcSet := &guardrail.Set{Output: []guardrail.OutputGuardrail{
		output(func(out *guardrail.Output) guardrail.Result { return guardrail.Rewrite("service") }),
	}}
	methodSet := &guardrail.Set{Output: []guardrail.OutputGuardrail{
		output(func(out *guardrail.Output) guardrail.Result { return guardrail.Rewrite("method") }),
	}}
	r := newRig(t, ai.Config{Guardrails: svcSet, MethodGuardrails: map[string]*guardrail.Set{"Ask": methodSet, "Free": nil}},
		llmtest.Reply{Text: "a"}, llmtest.Reply{Text: "b"}, llmtest.Reply{Text: "c"})
	ctx := begin(t)
	for _, tc := range []struct{ method, want string }{{"Ask", "method"}, {"Free", "b"}, {"Other", "service"}} {
		reply, err := r.svc.Chat(ctx, &ai.Request{Method: &ai.Method{Name: tc.method, Kind: chat.KindChat}, User: "x"})
		if err != nil || reply.Content != tc.want {
			t.Fatalf("%s: %+v %v", tc.method, reply, err)
		}
	}
	r.svc.AddMethods(&ai.Method{Name: "Ask"}, &ai.Method{Name: "Other"})
	if err := r.svc.Check(); !errors.Is(err, ai.ErrUnknownMethod) || !strings.Contains(err.Error(), `"Free"`) {
		t.Fatalf("Check: %v", err)
	}
}

// Faults: a guardrail that panics, hangs or rewrites without end.

func TestGuardrailPanicFailsCleanly(t *testing.T) {
	for _, stage := range []string{"input", "output"} {
		t.Run(stage, func(t *testing.T) {
			var boom atomic.Bool
			boom.Store(true)
			set := &guardrail.Set{}
			if stage == "input" {
				set.Input = []guardrail.InputGuardrail{input(func(*guardrail.Input) guardrail.Result {
					if boom.Load() {
						panic("the guardrail broke")
					}
					return guardrail.Pass()
				})}
			} else {
				set.Output = []guardrail.OutputGuardrail{output(func(*guardrail.Output) guardrail.Result {
					if boom.Load() {
						panic("the guardrail broke")
					}
					return guardrail.Pass()
				})}
			}
			r := newRig(t, ai.Config{Guardrails: set}, llmtest.Reply{Text: "first"}, llmtest.Reply{Text: "second"})
			ctx := begin(t)
			_, err := r.svc.Chat(ctx, r.req("hi"))
			var pe *chat.PanicError
			if !errors.As(err, &pe) || !errors.Is(err, guardrail.ErrGuardrailFailed) {
				t.Fatalf("err %v", err)
			}
			want(t, "memory", r.memory(ctx))
			boom.Store(false)
			reply, err := r.svc.Chat(ctx, r.req("hi again"))
			if err != nil {
				t.Fatal(err)
			}
			want(t, "memory", r.memory(ctx), "system: You are terse.", "human: hi again", "ai: "+reply.Content)
		})
	}
}

func TestGuardrailHangingIgnoringContextIsBoundedByTimeout(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() { waitGoroutines(t, before) }) // after the server closed
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var hang atomic.Bool
	hang.Store(true)
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Timeout: 50 * time.Millisecond, Output: []guardrail.OutputGuardrail{
		guardrail.OutputFunc(func(ctx context.Context, out *guardrail.Output) guardrail.Result {
			if hang.Load() {
				started <- struct{}{}
				<-release                   // ignores ctx
				out.Text = "scribbled late" // a late guardrail writes into its own copy only
				return guardrail.Rewrite("too late")
			}
			return guardrail.Pass()
		}),
	}}}, llmtest.Reply{Text: "slow"}, llmtest.Reply{Text: "quick"})
	ctx := begin(t)
	_, err := r.svc.Chat(ctx, r.req("hi"))
	if !errors.Is(err, guardrail.ErrTimeout) || !errors.Is(err, guardrail.ErrGuardrailFailed) {
		t.Fatalf("err %v", err)
	}
	<-started
	hang.Store(false)
	want(t, "memory", r.memory(ctx))
	reply, err := r.svc.Chat(ctx, r.req("hi"))
	if err != nil || reply.Content != "quick" {
		t.Fatalf("%+v %v", reply, err)
	}
	close(release)
}

func TestGuardrailHangingOnContextEndsWithRequest(t *testing.T) {
	started := make(chan struct{})
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Input: []guardrail.InputGuardrail{
		guardrail.InputFunc(func(ctx context.Context, in *guardrail.Input) guardrail.Result {
			close(started)
			<-ctx.Done()
			return guardrail.Fatal(ctx.Err())
		}),
	}}})
	ctx, cancel := context.WithCancel(begin(t))
	errc := make(chan error, 1)
	go func() {
		_, err := r.svc.Chat(ctx, r.req("hi"))
		errc <- err
	}()
	<-started
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	// With a Timeout too, the request's own end wins over the timeout.
	r = newRig(t, ai.Config{Guardrails: &guardrail.Set{Timeout: time.Hour, Input: []guardrail.InputGuardrail{
		guardrail.InputFunc(func(ctx context.Context, in *guardrail.Input) guardrail.Result {
			<-ctx.Done()
			return guardrail.Pass()
		}),
	}}})
	ctx, cancel = context.WithCancel(begin(t))
	cancel()
	if _, err := r.svc.Chat(ctx, r.req("hi")); !errors.Is(err, context.Canceled) || errors.Is(err, guardrail.ErrTimeout) {
		t.Fatalf("err %v", err)
	}
}

func TestGuardrailRewritingEndlesslyIsBounded(t *testing.T) {
	// A guardrail that rewrites every text it sees (growing it) and asks
	// for the answer again each time is called once per answer, its
	// reprompts are bounded and its rewrites are bounded in size.
	var checks atomic.Int32
	grow := output(func(out *guardrail.Output) guardrail.Result {
		checks.Add(1)
		return guardrail.Rewrite(out.Text + out.Text)
	})
	again := output(func(out *guardrail.Output) guardrail.Result { return guardrail.Reprompt("Once more: " + out.Text) })
	r := newRig(t, ai.Config{MaxModelCalls: 100, Guardrails: &guardrail.Set{MaxReprompts: 3, Output: []guardrail.OutputGuardrail{grow, again}}},
		llmtest.Reply{Text: "ab"}, llmtest.Reply{Text: "ab"}, llmtest.Reply{Text: "ab"}, llmtest.Reply{Text: "ab"}, llmtest.Reply{Text: "never"})
	ctx := begin(t)
	if _, err := r.svc.Chat(ctx, r.req("hi")); !errors.Is(err, guardrail.ErrTooManyReprompts) {
		t.Fatalf("err %v", err)
	}
	if n, c := len(r.srv.Requests()), checks.Load(); n != 4 || c != 4 {
		t.Fatalf("%d model calls, %d checks; want 4 and 4", n, c)
	}
	want(t, "memory", r.memory(ctx))

	r = newRig(t, ai.Config{Guardrails: &guardrail.Set{MaxText: 1 << 10, Input: []guardrail.InputGuardrail{
		input(func(in *guardrail.Input) guardrail.Result { return guardrail.Rewrite(in.Text + in.Text) }),
		input(func(in *guardrail.Input) guardrail.Result { return guardrail.Rewrite(in.Text + in.Text) }),
	}}}, llmtest.Reply{Text: "ok"})
	if _, err := r.svc.Chat(ctx, r.req(strings.Repeat("x", 300))); !errors.Is(err, guardrail.ErrTextTooLarge) {
		t.Fatalf("err %v", err)
	}
}

func TestGuardrailsRunConcurrently(t *testing.T) {
	var mu sync.Mutex
	users := map[string]bool{}
	set := &guardrail.Set{Input: []guardrail.InputGuardrail{input(func(in *guardrail.Input) guardrail.Result {
		return guardrail.Rewrite("[" + in.Text + "]")
	})}, Output: []guardrail.OutputGuardrail{output(func(out *guardrail.Output) guardrail.Result {
		mu.Lock()
		users[out.User] = true
		mu.Unlock()
		return guardrail.Pass()
	})}}
	replies := make([]llmtest.Reply, 8)
	for i := range replies {
		replies[i] = llmtest.Reply{Text: "ok"}
	}
	r := newRig(t, ai.Config{Guardrails: set}, replies...)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, err := chat.Begin(context.Background(), nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer func() { _ = chat.End(ctx) }()
			if _, err := r.svc.Chat(ctx, r.req(fmt.Sprint(i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if len(users) != 8 || !users["[3]"] {
		t.Fatalf("users %v", users)
	}
}

func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	for range 500 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

// Outside a request no Retract event can withdraw streamed text: a
// stream with output guardrails holds its chunks until they accept the
// answer.
func TestStreamOutsideRequestHoldsChunks(t *testing.T) {
	g := output(func(out *guardrail.Output) guardrail.Result {
		if out.Streamed {
			return guardrail.Fatal(errors.New("held chunks reported as streamed"))
		}
		switch {
		case strings.HasPrefix(out.Text, "bad"):
			return guardrail.Rewrite("good")
		case strings.HasPrefix(out.Text, "rude"):
			return guardrail.Reprompt("Be kind.")
		case strings.HasPrefix(out.Text, "awful"):
			return guardrail.Fail("Withheld.")
		}
		return guardrail.Pass()
	})
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Output: []guardrail.OutputGuardrail{g}}},
		llmtest.Reply{Chunks: []string{"fine ", "words"}},
		llmtest.Reply{Chunks: []string{"bad ", "words"}},
		llmtest.Reply{Chunks: []string{"rude ", "words"}}, llmtest.Reply{Chunks: []string{"kind ", "words"}},
		llmtest.Reply{Chunks: []string{"awful ", "words"}},
		llmtest.Reply{Text: "Looking.", ToolCalls: []llmtest.ToolCall{{Name: "look"}}}, llmtest.Reply{Chunks: []string{"bad"}},
	)
	r.m.Tools = []ai.Tool{{Name: "look", Parameters: []byte(`{"type":"object"}`), Invoke: func(context.Context, string) (any, error) { return "seen", nil }}}
	ctx := begin(t)
	for _, tc := range []struct {
		want []string
		err  error
	}{
		{want: []string{"fine ", "words"}},
		{want: []string{"good"}},
		{want: []string{"kind ", "words"}},
		{err: guardrail.ErrGuardrailFailed},
		// The text before a tool call is not guarded: it goes out when
		// the model call that wrote it ends.
		{want: []string{"Looking.", "good"}},
	} {
		var chunks []string
		var err error
		for c, e := range r.svc.Stream(ctx, r.req("hi")) {
			if e != nil {
				err = e
				break
			}
			chunks = append(chunks, c)
		}
		if !errors.Is(err, tc.err) || strings.Join(chunks, "|") != strings.Join(tc.want, "|") {
			t.Fatalf("chunks %q, err %v; want %q, %v", chunks, err, tc.want, tc.err)
		}
	}
	got := r.memory(ctx)
	want(t, "memory", got[:7], "system: You are terse.", "human: hi", "ai: fine words", "human: hi", "ai: good", "human: hi", "ai: kind words")
}

// The local client gets Retract like the websocket client: OnRetract.
func TestRetractLocalClient(t *testing.T) {
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Output: []guardrail.OutputGuardrail{
		output(func(out *guardrail.Output) guardrail.Result {
			if !out.Streamed {
				return guardrail.Fatal(errors.New("not streamed"))
			}
			return guardrail.Rewrite(strings.ToUpper(out.Text))
		}),
	}}}, llmtest.Reply{Chunks: []string{"a ", "sword"}})
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "stream", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.Response(ctx).StreamWithErrors(r.svc.Stream(ctx, r.req(req.UserMessage())))
	}})
	router, err := chat.NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	client := chat.NewLocalClient(router)
	defer client.Close()
	var log []string
	s, err := client.Builder().
		OnStream(func(c string) { log = append(log, "stream "+c) }).
		OnRetract(func(rt protocol.Retraction) { log = append(log, "retract "+rt.Reason) }).
		Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(context.Background(), "which?"); err != nil {
		t.Fatal(err)
	}
	want(t, "events", log, "stream a ", "stream sword", "retract rewrite", "stream A SWORD")
}

// Output guardrails run before a structured answer is decoded: the
// decoded value is the rewritten answer's.
func TestOutputRewriteOfStructuredAnswer(t *testing.T) {
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Output: []guardrail.OutputGuardrail{
		output(func(out *guardrail.Output) guardrail.Result {
			return guardrail.Rewrite(strings.ReplaceAll(out.Text, "bob@example.org", "[EMAIL]"))
		}),
	}}}, llmtest.Reply{Text: `{"name":"Bob","mail":"bob@example.org"}`})
	r.m.Output = ai.OutputJSON
	r.m.Schema = []byte(`{"type":"object"}`)
	type contact struct{ Name, Mail string }
	ctx := begin(t)
	v, _, err := ai.Structured[contact](ctx, r.svc, r.req("who?"))
	if err != nil || v.Mail != "[EMAIL]" || v.Name != "Bob" {
		t.Fatalf("%+v %v", v, err)
	}
	if got := r.memory(ctx); !strings.Contains(got[len(got)-1], "[EMAIL]") {
		t.Fatalf("memory %q", got)
	}
}

// A nil guardrail in a set fails the request cleanly, like a panic.
func TestNilGuardrail(t *testing.T) {
	r := newRig(t, ai.Config{Guardrails: &guardrail.Set{Input: []guardrail.InputGuardrail{nil}}}, llmtest.Reply{Text: "never"})
	ctx := begin(t)
	_, err := r.svc.Chat(ctx, r.req("hi"))
	var ge *guardrail.Error
	if !errors.As(err, &ge) || ge.Guardrail != "<nil>" || ge.Outcome != guardrail.OutcomeFatal || len(r.srv.Requests()) != 0 {
		t.Fatalf("err %v", err)
	}
	want(t, "memory", r.memory(ctx))
}
