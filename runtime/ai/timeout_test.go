package ai_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// TestToolTimeout: a tool past its timeout is told to the model as timed
// out and the turn goes on, whether the tool gives up when its context
// ends or ignores it (it is left running; its result is discarded). The
// tool's own Timeout wins over the service's ToolTimeout.
func TestToolTimeout(t *testing.T) {
	leaktest.Check(t)
	release := make(chan struct{})
	f := newServerFixture(t, llmtest.Sequence(
		calls(call("weather", `{"city":"Paris"}`), call("add", `{"a":1,"b":2}`), call("note", `{"text":"quick"}`)),
		llmtest.Reply{Text: "Partly done."},
	), &ai.Config{ToolTimeout: 20 * time.Millisecond})
	f.box.hooks["weather"] = func(ctx context.Context) error {
		<-ctx.Done() // gives up when its time is up
		return ctx.Err()
	}
	ignored := make(chan struct{})
	f.box.hooks["add"] = func(ctx context.Context) error {
		<-release // ignores its context
		close(ignored)
		return nil
	}
	// note has a timeout of its own, long enough never to expire.
	f.tools[5].Timeout = time.Hour
	f.box.hooks["note"] = func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no deadline")
		}
		return nil
	}
	ctx := begin(t)
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Go.")))
	if r.Content != "Partly done." {
		t.Fatalf("reply %+v", r)
	}
	var told []string
	for _, res := range f.requests()[1].LastToolResults() {
		told = append(told, res.Content)
	}
	wantStrings(t, "the model is told", told,
		`error: tool "weather" timed out after 20ms`, `error: tool "add" timed out after 20ms`, "done")
	for i, ex := range r.Executions[:2] {
		if !errors.Is(ex.Err, ai.ErrToolTimeout) || !errors.Is(ex.Err, context.DeadlineExceeded) || ex.Result != nil {
			t.Fatalf("execution %d: %+v", i, ex)
		}
	}
	if r.Executions[2].Err != nil {
		t.Fatalf("note: %v", r.Executions[2].Err)
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx))[3:5],
		`tool: result weather error: tool "weather" timed out after 20ms`, `tool: result add error: tool "add" timed out after 20ms`)
	if !strings.Contains(f.logs.String(), "ai: tool timed out") {
		t.Fatalf("not logged:\n%s", f.logs.String())
	}
	close(release)
	<-ignored
}

// TestToolTimeoutCallerCancels: when the request's context ends while a
// tool that ignores it runs, the turn fails at once with the context's
// error and remembers nothing.
func TestToolTimeoutCallerCancels(t *testing.T) {
	leaktest.Check(t)
	release := make(chan struct{})
	f := newServerFixture(t, llmtest.Sequence(calls(call("add", `{"a":1,"b":2}`))), &ai.Config{ToolTimeout: time.Hour})
	ctx := begin(t)
	rctx, cancel := context.WithCancel(ctx)
	started := make(chan struct{})
	f.box.hooks["add"] = func(context.Context) error {
		close(started)
		<-release
		return nil
	}
	go func() {
		<-started
		cancel()
	}()
	_, err := f.svc.Chat(rctx, f.req("Go."))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)))
	close(release)
}

// TestModelTimeout: a model call past ModelTimeout fails the request with
// an error matching ErrModelTimeout and DeadlineExceeded, through the real
// OpenAI client, and leaves the memory as it was.
func TestModelTimeout(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: "First."},
		llmtest.Reply{Text: "late", Delay: time.Hour},
		llmtest.Reply{Text: "Second."},
	), &ai.Config{
		// Every call is bounded, the ones that must succeed too: long
		// enough for a real call on a loaded machine.
		ModelTimeout: 2 * time.Second,
	})
	ctx := begin(t)
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("one")))
	before := f.memory(ctx, memID(t, ctx))
	_, err := f.svc.Chat(ctx, f.req("two"))
	if !errors.Is(err, ai.ErrModelTimeout) || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "model call 1: timed out after 2s") {
		t.Fatalf("err %v", err)
	}
	wantStrings(t, "memory after the timeout", f.memory(ctx, memID(t, ctx)), before...)
	if r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("two"))); r.Content != "Second." {
		t.Fatalf("next turn %+v", r)
	}
}
