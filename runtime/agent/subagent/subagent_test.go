package subagent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/leaktest"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatscopes/chatgen/runtime/agent/subagent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// The model continues a sub-conversation with its session_id and starts a
// new one without it: each session has its own memory, the child's steps
// reach the websocket client tagged with the agent and the session, and
// the child's usage adds up into the parent turn's.
func TestSessions(t *testing.T) {
	leaktest.Check(t)
	r := newRig(t, nil)
	c := r.dial()

	got := c.chat(t, `call {"task":"lookup rivers"}`)
	if want := `{"session_id":"research-1","answer":"answer to lookup rivers (user messages seen: 1)"}`; got != want {
		t.Fatalf("first answer %s, want %s", got, want)
	}
	reply, _ := r.lastReply()
	// Parent: 2 calls of 10+1; child: 2 calls of 100+7.
	if u := reply.Usage; u.PromptTokens != 220 || u.CompletionTokens != 16 || u.TotalTokens != 236 || u.CacheReadTokens != 80 {
		t.Errorf("parent usage %+v, want the child's rolled up: 220 prompt (80 read from the cache), 16 completion", u)
	}
	if reply.ModelCalls != 2 {
		t.Errorf("parent ModelCalls %d, want its own 2", reply.ModelCalls)
	}
	// The reasoning and the text stream in chunks: consecutive Thinking
	// and Stream events are joined.
	var evs []ai.AgentEvent
	var kinds []string
	for _, ev := range c.takeAgentEvents() {
		if ev.Agent != "research" || ev.Session != "research-1" {
			t.Errorf("event %+v not tagged research/research-1", ev)
		}
		if n := len(evs); n > 0 && (ev.Type == "Thinking" || ev.Type == "Stream") && evs[n-1].Type == ev.Type {
			evs[n-1].Text += ev.Text
			continue
		}
		evs = append(evs, ev)
		kinds = append(kinds, ev.Type)
	}
	if want := []string{"Stream", "ToolCall", "ToolResult", "Thinking", "Stream"}; !slices.Equal(kinds, want) {
		t.Fatalf("sub-agent events %q, want %q (%+v)", kinds, want, evs)
	}
	if evs[0].Text != "let me look" || evs[3].Text != "thinking about lookup rivers" || evs[4].Text != "answer to lookup rivers (user messages seen: 1)" {
		t.Errorf("text events %+v %+v %+v", evs[0], evs[3], evs[4])
	}
	if evs[1].Tool != "lookup" || evs[1].Arguments != `{"q":"lookup rivers"}` || evs[2].Tool != "lookup" || evs[2].ID != evs[1].ID || evs[2].Failed {
		t.Errorf("tool events %+v %+v", evs[1], evs[2])
	}

	got = c.chat(t, `call {"task":"and lakes?","session_id":"research-1"}`)
	if want := `{"session_id":"research-1","answer":"answer to and lakes? (user messages seen: 2)"}`; got != want {
		t.Errorf("continued answer %s, want %s", got, want)
	}
	got = c.chat(t, `call {"task":"mountains"}`)
	if want := `{"session_id":"research-2","answer":"answer to mountains (user messages seen: 1)"}`; got != want {
		t.Errorf("new session's answer %s, want %s", got, want)
	}
	// The memories: the parent's, and one per session.
	if n := len(ids(t, r.childStore)); n != 2 {
		t.Errorf("child memories %q, want one per session", ids(t, r.childStore))
	}
	for _, id := range ids(t, r.childStore) {
		if !strings.Contains(id, "/research-") || !strings.HasSuffix(id, "#example.com/app.Researcher.Research") {
			t.Errorf("child memory id %q", id)
		}
	}

	// Closing the conversation ends the scope, and every session with it.
	if err := c.client.Close(); err != nil {
		t.Fatal(err)
	}
	waitEmpty(t, r)
}

// Of runs the service of a bean, looked up in the session's scope, as
// generated code for //chat:agent does: its sessions, memories and events
// are New's; a service that cannot be had fails the call only.
func TestOf(t *testing.T) {
	leaktest.Check(t)
	errNoService := errors.New("no researcher today")
	var fail atomic.Bool
	r := newRig(t, &rigOptions{of: true, provide: func(def func(context.Context) (researcher, error)) func(context.Context) (researcher, error) {
		return func(ctx context.Context) (researcher, error) {
			if fail.Load() {
				return nil, errNoService
			}
			return def(ctx)
		}
	}})
	c := r.dial()
	// The service cannot be had: the call fails, and the service is
	// looked up again on the next one.
	fail.Store(true)
	got := c.chat(t, `call {"task":"seas"}`)
	if !strings.Contains(got, errNoService.Error()) {
		t.Errorf("without its service: the model was told %s, want %q", got, errNoService)
	}
	if _, err := r.lastReply(); err != nil {
		t.Errorf("the parent turn failed: %v", err)
	}
	fail.Store(false)
	c.takeAgentEvents()
	got = c.chat(t, `call {"task":"lookup rivers"}`)
	if want := `{"session_id":"research-2","answer":"answer to lookup rivers (user messages seen: 1)"}`; got != want {
		t.Fatalf("answer %s, want %s", got, want)
	}
	evs := c.takeAgentEvents()
	if len(evs) == 0 {
		t.Error("no SubAgent events")
	}
	for _, ev := range evs {
		if ev.Agent != "research" || ev.Session != "research-2" {
			t.Errorf("event %+v not tagged research/research-2", ev)
		}
	}
	got = c.chat(t, `call {"task":"and lakes?","session_id":"research-2"}`)
	if want := `{"session_id":"research-2","answer":"answer to and lakes? (user messages seen: 2)"}`; got != want {
		t.Errorf("continued answer %s, want %s", got, want)
	}
	for _, id := range ids(t, r.childStore) {
		if !strings.Contains(id, "/research-") || !strings.HasSuffix(id, "#example.com/app.Researcher.Research") {
			t.Errorf("child memory id %q", id)
		}
	}
	if err := c.client.Close(); err != nil {
		t.Fatal(err)
	}
	waitEmpty(t, r)
}

// waitEmpty waits until the stores are empty: the server ends a closed
// connection's conversation after the client returns.
func waitEmpty(t *testing.T, r *rig) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(ids(t, r.childStore))+len(ids(t, r.parentStore)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("memories left after the conversation ended: child %q, parent %q", ids(t, r.childStore), ids(t, r.parentStore))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Sessions are capped per scope (the one unused longest is evicted, its
// memory deleted) and end when idle; an unknown session_id is told to
// the model with the live ones.
func TestSessionCapAndIdle(t *testing.T) {
	ctx := context.Background()
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	r := newRig(t, &rigOptions{agent: &subagent.Options{MaxSessions: 2, IdleTimeout: time.Hour,
		Now: func() time.Time { return time.Unix(0, now.Load()) }}})
	conv, err := r.router.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close(ctx)
	run := func(text string) string {
		t.Helper()
		var out []string
		if _, f := conv.Handle(ctx, conv.ScopeID(), chat.NewTextRequest(text), func(ev chat.Event) error {
			if ev.Type == protocol.EventMessage {
				out = append(out, ev.Text())
			}
			return nil
		}); f != nil {
			t.Fatal(f)
		}
		return strings.Join(out, "")
	}
	run(`call {"task":"a"}`)
	run(`call {"task":"b"}`)
	run(`call {"task":"a2","session_id":"research-1"}`) // research-2 is now the one unused longest
	run(`call {"task":"c"}`)
	if n := len(ids(t, r.childStore)); n != 2 {
		t.Errorf("child memories %q, want 2 (the cap)", ids(t, r.childStore))
	}
	got := run(`call {"task":"b2","session_id":"research-2"}`)
	if want := `error: unknown session_id "research-2" of sub-agent "research": the sessions are research-1, research-3; leave session_id out to start a new one`; got != want {
		t.Errorf("evicted session: the model was told %q, want %q", got, want)
	}
	reply, _ := r.lastReply()
	if ex := reply.Executions[0]; !errors.Is(ex.Err, subagent.ErrUnknownSession) {
		t.Errorf("execution error %v, want ErrUnknownSession", ex.Err)
	}

	now.Add(int64(2 * time.Hour))
	got = run(`call {"task":"d"}`)
	if want := `{"session_id":"research-4","answer":"answer to d (user messages seen: 1)"}`; got != want {
		t.Errorf("after the idle timeout: %s, want %s", got, want)
	}
	if n := len(ids(t, r.childStore)); n != 1 {
		t.Errorf("child memories %q after the idle sessions ended, want 1", ids(t, r.childStore))
	}
	if err := conv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if left := ids(t, r.childStore); len(left) > 0 {
		t.Errorf("child memories left after the conversation ended: %q", left)
	}
}

// A sub-agent that panics, loops past its model calls, times out or calls
// a tool it does not have fails its tool call with a clear message to the
// parent's model; the parent's turn completes, and neither memory keeps a
// partial turn.
func TestFaults(t *testing.T) {
	leaktest.Check(t)
	for _, tc := range []struct {
		name, task string
		want       string // what the parent model is told, a prefix
		is         error
	}{
		{"panic", "boom", `error: sub-agent "research" (session research-1) failed: sub-agent panicked: kaboom`, subagent.ErrPanicked},
		{"model-call-limit", "loop", `error: sub-agent "research" (session research-1) failed: ai: example.com/app.Researcher.Research: too many model calls: the model still asked for tools at the limit of 3 model calls`, ai.ErrTooManyModelCalls},
		{"timeout", "slow", `error: sub-agent timed out after 50ms (session research-1)`, subagent.ErrTimeout},
		{"unknown-tool", "unknown", `error: sub-agent "research" (session research-1) failed: ai: example.com/app.Researcher.Research: sub-agent "research": unknown tool "nope": the tools are lookup`, ai.ErrUnknownTool},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, &rigOptions{
				child: &ai.Config{MaxModelCalls: 3},
				agent: &subagent.Options{Timeout: 50 * time.Millisecond},
				run: func(def subagent.Func) subagent.Func {
					return func(ctx context.Context, task string) (string, error) {
						if task == "boom" {
							panic("kaboom")
						}
						return def(ctx, task)
					}
				},
			})
			c := r.dial()
			got := c.chat(t, `call {"task":"`+tc.task+`"}`)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("the parent model was told\n%s\nwant it to begin with\n%s", got, tc.want)
			}
			reply, err := r.lastReply()
			if err != nil {
				t.Fatalf("the parent turn failed: %v", err)
			}
			if ex := reply.Executions[0]; !errors.Is(ex.Err, tc.is) {
				t.Errorf("execution error %v, want %v", ex.Err, tc.is)
			}
			// The child remembers nothing of the failed turn; the parent
			// has its whole turn, tool call and result included.
			for _, id := range ids(t, r.childStore) {
				if msgs, _ := r.childStore.Get(context.Background(), id); len(msgs) > 0 {
					t.Errorf("child memory %s kept %d messages of a failed turn", id, len(msgs))
				}
			}
			pids := ids(t, r.parentStore)
			if len(pids) != 1 {
				t.Fatalf("parent memories %q", pids)
			}
			if msgs, _ := r.parentStore.Get(context.Background(), pids[0]); len(msgs) != 5 {
				t.Errorf("parent memory has %d messages, want system, user, tool call, result, answer", len(msgs))
			}
			// The session survives the failure: the next call works.
			got = c.chat(t, `call {"task":"fine","session_id":"research-1"}`)
			if want := `{"session_id":"research-1","answer":"answer to fine (user messages seen: 1)"}`; got != want {
				t.Errorf("after the failure: %s, want %s", got, want)
			}
		})
	}
}

// Several sub-agent calls of one reply run concurrently without
// ParallelTools, at most AgentConcurrency at once; one failing fails only
// its call.
func TestFanOut(t *testing.T) {
	leaktest.Check(t)
	var running, most atomic.Int32
	arrived := make(chan struct{})
	var once sync.Once
	var n atomic.Int32
	r := newRig(t, &rigOptions{run: func(def subagent.Func) subagent.Func {
		return func(ctx context.Context, task string) (string, error) {
			cur := running.Add(1)
			defer running.Add(-1)
			for {
				m := most.Load()
				if cur <= m || most.CompareAndSwap(m, cur) {
					break
				}
			}
			// The first 4 wait for each other: sequential calls would
			// never get past this.
			if n.Add(1) == 4 {
				once.Do(func() { close(arrived) })
			}
			if n.Load() <= 4 {
				select {
				case <-arrived:
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
			if task == "bad" {
				return "", errors.New("no luck")
			}
			return def(ctx, task)
		}
	}})
	c := r.dial()
	got := c.chat(t, "fan 6 a bad c d e f")
	parts := strings.Split(got, " | ")
	if len(parts) != 6 {
		t.Fatalf("answer %q", got)
	}
	for i, task := range []string{"a", "bad", "c", "d", "e", "f"} {
		want := `{"session_id":"research-` // sessions are numbered in start order
		if task == "bad" {
			want = `error: sub-agent "research" (session research-`
		}
		if !strings.HasPrefix(parts[i], want) || (task != "bad" && !strings.Contains(parts[i], "answer to "+task+" ")) {
			t.Errorf("result %d %q, want %s… for task %s", i, parts[i], want, task)
		}
	}
	if m := most.Load(); m != ai.DefaultAgentConcurrency {
		t.Errorf("at most %d sub-agents ran at once, want %d", m, ai.DefaultAgentConcurrency)
	}
	reply, _ := r.lastReply()
	// Parent 2 calls (22 tokens), 5 children 1 call each (107).
	if u := reply.Usage; u.TotalTokens != 2*11+5*107 {
		t.Errorf("usage %+v, want %d total", u, 2*11+5*107)
	}
}

// Cancelling the turn's context cancels every sub-agent of a fan-out.
func TestFanOutCancel(t *testing.T) {
	leaktest.Check(t)
	started := make(chan struct{}, 4)
	r := newRig(t, &rigOptions{run: func(subagent.Func) subagent.Func {
		return func(ctx context.Context, task string) (string, error) {
			started <- struct{}{}
			<-ctx.Done()
			return "", ctx.Err()
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	conv, err := r.router.Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		conv.Handle(ctx, conv.ScopeID(), chat.NewTextRequest("fan 4"), func(chat.Event) error { return nil })
	}()
	for range 4 {
		<-started
	}
	cancel()
	<-done
	_, err = r.lastReply()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("turn error %v, want context.Canceled", err)
	}
}

// The model calls of the turn and its sub-agents count against one
// budget: the top-level service's TurnBudget.
func TestTurnBudget(t *testing.T) {
	r := newRig(t, &rigOptions{parent: &ai.Config{TurnBudget: 4, AgentConcurrency: 1}})
	c := r.dial()
	if err := c.sess.Chat(context.Background(), "fan 3 lookup1 lookup2 lookup3"); err == nil {
		t.Error("the request did not fail")
	}
	reply, err := r.lastReply()
	// 1 (parent) + 2 + 1 (the second child's first call) = 4: the
	// second child's second call and the third child fail; so does the
	// parent's next call.
	if !errors.Is(err, ai.ErrTurnBudget) {
		t.Fatalf("turn error %v (reply %+v), want ErrTurnBudget", err, reply)
	}
	if n := r.childSrv.Requests(); len(n) != 3 {
		t.Errorf("%d child model calls, want 3", len(n))
	}
}

// An agent calling itself through its tool is bounded by the nesting
// limit, with a clear message.
func TestRecursionBounded(t *testing.T) {
	var self *subagent.Tool
	var svc *ai.Service
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat}
	self = subagent.New("self", func(ctx context.Context, task string) (string, error) {
		reply, err := svc.Chat(ctx, &ai.Request{Method: method, User: task})
		if err != nil {
			return "", err
		}
		return reply.Content, nil
	}, &subagent.Options{MaxDepth: 2})
	svc = ai.NewService("example.com/app.Self", &ai.Config{Model: llmtest.NewModel(parentScript("self"), nil), ToolSources: []ai.ToolSource{self}})
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer chat.End(ctx)
	// The parent script calls "self" on every "call" message, and the
	// task is "call ..." again: only the depth limit stops it.
	reply, err := svc.Chat(ctx, &ai.Request{Method: method, User: `call {"task":"call {\"task\":\"call {\\\"task\\\":\\\"x\\\"}\"}"}`})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply.Content, "sub-agents nested too deeply: 3 levels, the limit is 2") {
		t.Errorf("answer %q, want the depth error told", reply.Content)
	}
}

// The load test: 100 concurrent conversations fanning out (run with
// -race).
func TestManyConversationsFanOut(t *testing.T) {
	leaktest.Check(t)
	r := newRig(t, &rigOptions{inProcess: true})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			ctx := context.Background()
			conv, err := r.router.Connect(ctx, "")
			if err != nil {
				errs <- err
				return
			}
			defer conv.Close(ctx)
			var got string
			if _, f := conv.Handle(ctx, conv.ScopeID(), chat.NewTextRequest(fmt.Sprintf("fan 4 a%d b%d c%d d%d", i, i, i, i)), func(ev chat.Event) error {
				if ev.Type == protocol.EventMessage {
					got = ev.Text()
				}
				return nil
			}); f != nil {
				errs <- fmt.Errorf("conversation %d: %v", i, f)
				return
			}
			if strings.Count(got, "answer to ") != 4 {
				errs <- fmt.Errorf("conversation %d: %q", i, got)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if left := ids(t, r.childStore); len(left) > 0 {
		t.Errorf("%d child memories left", len(left))
	}
}

// The sub-agent's spans nest under the span of the tool call that runs
// it, and the parent turn's span reports the usage with the child's.
func TestSpans(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	tel := ai.Telemetry{TracerProvider: tp}
	r := newRig(t, &rigOptions{parent: &ai.Config{Telemetry: tel}, child: &ai.Config{Telemetry: tel}})
	c := r.dial()
	c.chat(t, `call {"task":"lookup x"}`)
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans.Ended() {
		byID[s.SpanContext().SpanID()] = s
	}
	var child sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.Name() == "invoke_agent Researcher.Research" {
			child = s
		}
	}
	if child == nil {
		t.Fatal("no span of the sub-agent's turn")
	}
	tool := byID[child.Parent().SpanID()]
	if tool == nil || tool.Name() != "execute_tool research" {
		t.Fatalf("the sub-agent's turn span's parent is %v, want the execute_tool research span", tool)
	}
	parent := byID[tool.Parent().SpanID()]
	if parent == nil || parent.Name() != "invoke_agent Orchestrator.Orchestrate" {
		t.Fatalf("the tool span's parent is %v, want the orchestrator's turn", parent)
	}
	var input int64 = -1
	for _, kv := range parent.Attributes() {
		if kv.Key == "gen_ai.usage.input_tokens" {
			input = kv.Value.AsInt64()
		}
	}
	if input != 220 {
		t.Errorf("the parent turn's span reports %d input tokens, want 220 (the child's included)", input)
	}
}

// The tool needs a chat scope, and a turn whose tool call it is; bad
// arguments are the model's to fix.
func TestBadCalls(t *testing.T) {
	tool := subagent.New("research", func(context.Context, string) (string, error) { return "x", nil }, nil).Tool()
	if _, err := tool.Invoke(context.Background(), `{"task":"a"}`); !errors.Is(err, subagent.ErrNoScope) {
		t.Errorf("outside a scope: %v, want ErrNoScope", err)
	}
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer chat.End(ctx)
	if _, err := tool.Invoke(ctx, `{"task":"a"}`); !errors.Is(err, chat.ErrNotActive) {
		t.Errorf("outside a turn: %v, want ErrNotActive", err)
	}
	for _, args := range []string{`{}`, `{"task":"  "}`, `{"task":1}`, `not json`} {
		var ae *ai.ArgumentsError
		if _, err := tool.Invoke(ctx, args); !errors.As(err, &ae) {
			t.Errorf("arguments %s: %v, want an *ai.ArgumentsError", args, err)
		}
	}
}
