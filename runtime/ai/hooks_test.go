package ai_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// modelTracer is a model hook recording, in a journal, its entry and exit.
func modelTracer(name string, j *journal) ai.ModelHook {
	return func(next ai.ModelHandler) ai.ModelHandler {
		return func(ctx context.Context, call *ai.ModelCall) (*llms.ContentResponse, error) {
			j.add(fmt.Sprintf("%s> %s.%s #%d (%d messages)", name, call.Service[strings.LastIndex(call.Service, ".")+1:], call.Method, call.N, len(call.Messages)))
			resp, err := next(ctx, call)
			j.add(fmt.Sprintf("%s< %v", name, err == nil))
			return resp, err
		}
	}
}

// toolTracer is a tool hook recording, in a journal, its entry and exit.
func toolTracer(name string, j *journal) ai.ToolHook {
	return func(next ai.ToolHandler) ai.ToolHandler {
		return func(ctx context.Context, call *ai.ToolCall) (any, error) {
			j.add(fmt.Sprintf("%s> %s %s %s", name, call.Name, call.ID, call.Arguments))
			res, err := next(ctx, call)
			j.add(fmt.Sprintf("%s< %v %v", name, res, err))
			return res, err
		}
	}
}

// journal records hook steps, in order, from any goroutine.
type journal struct {
	mu      sync.Mutex
	entries []string
}

func (j *journal) add(s string) {
	j.mu.Lock()
	j.entries = append(j.entries, s)
	j.mu.Unlock()
}

func (j *journal) take() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := j.entries
	j.entries = nil
	return out
}

// TestModelHooks: hooks nest in order, the first outermost, around each
// model call; one changes the messages and options the model is sent
// (the memory keeps the turn as it happened), one answers without the
// model.
func TestModelHooks(t *testing.T) {
	j := &journal{}
	steer := func(next ai.ModelHandler) ai.ModelHandler {
		return func(ctx context.Context, call *ai.ModelCall) (*llms.ContentResponse, error) {
			if call.N == 1 {
				call.Messages = append(call.Messages, llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."))
				call.Options = append(call.Options, llms.WithMaxTokens(77))
			}
			return next(ctx, call)
		}
	}
	canned := func(next ai.ModelHandler) ai.ModelHandler {
		return func(ctx context.Context, call *ai.ModelCall) (*llms.ContentResponse, error) {
			if call.Messages[len(call.Messages)-1].Parts[0] == (llms.TextContent{Text: "ping"}) {
				return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "pong", StopReason: "stop"}}}, nil
			}
			return next(ctx, call)
		}
	}
	f := newServerFixture(t, llmtest.Sequence(
		calls(call("add", `{"a":1,"b":2}`)),
		llmtest.Reply{Text: "3."},
	), &ai.Config{ModelHooks: []ai.ModelHook{modelTracer("outer", j), modelTracer("inner", j), canned, steer}})
	ctx := begin(t)
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Add 1 and 2.")))
	if r.Content != "3." || r.ModelCalls != 2 {
		t.Fatalf("reply %+v", r)
	}
	wantStrings(t, "hook order", j.take(),
		"outer> Assistant.Ask #1 (2 messages)", "inner> Assistant.Ask #1 (2 messages)", "inner< true", "outer< true",
		"outer> Assistant.Ask #2 (4 messages)", "inner> Assistant.Ask #2 (4 messages)", "inner< true", "outer< true")
	reqs := f.requests()
	wantStrings(t, "first call, steered", describe(reqs[0].Messages), "system: You are terse.", "human: Add 1 and 2.", "system: Be brief.")
	if reqs[0].MaxTokens != 77 || reqs[1].MaxTokens != 0 {
		t.Fatalf("max tokens %d, %d", reqs[0].MaxTokens, reqs[1].MaxTokens)
	}
	wantStrings(t, "memory: the turn as it happened", f.memory(ctx, memID(t, ctx)),
		"system: You are terse.", "human: Add 1 and 2.", "ai: call add {\"a\":1,\"b\":2}", "tool: result add 3", "ai: 3.")

	// Answered by a hook: the model is not called, the turn is remembered.
	r = must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("ping")))
	if r.Content != "pong" || f.srv.Calls() != 2 {
		t.Fatalf("reply %+v, %d model calls", r, f.srv.Calls())
	}
	mem := f.memory(ctx, memID(t, ctx))
	wantStrings(t, "last exchange", mem[len(mem)-2:], "human: ping", "ai: pong")
}

// TestToolHooks: hooks nest in order around each tool call; they veto a
// call (the model is told the message, the tool does not run, the turn
// goes on), change its arguments, and replace its result.
func TestToolHooks(t *testing.T) {
	j := &journal{}
	policy := func(next ai.ToolHandler) ai.ToolHandler {
		return func(ctx context.Context, call *ai.ToolCall) (any, error) {
			switch call.Name {
			case "fail":
				return nil, ai.Veto("You may not use fail here.")
			case "weather":
				call.Arguments = `{"city":"Lyon"}` // only Lyon's weather is known
			case "add":
				res, err := next(ctx, call)
				if err != nil {
					return nil, err
				}
				return fmt.Sprintf("%d (checked)", res), nil
			}
			return next(ctx, call)
		}
	}
	f := newServerFixture(t, llmtest.Sequence(
		calls(call("fail", `{}`), call("weather", `{"city":"Paris"}`), call("add", `{"a":2,"b":2}`)),
		llmtest.Reply{Text: "Done."},
	), &ai.Config{ToolHooks: []ai.ToolHook{toolTracer("outer", j), toolTracer("inner", j), policy}})
	ctx := begin(t)
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Go.")))
	wantStrings(t, "hook order", j.take(),
		"outer> fail call_1 {}", "inner> fail call_1 {}",
		"inner< <nil> tool call vetoed: You may not use fail here.", "outer< <nil> tool call vetoed: You may not use fail here.",
		`outer> weather call_2 {"city":"Paris"}`, `inner> weather call_2 {"city":"Paris"}`,
		"inner< {Lyon sunny} <nil>", "outer< {Lyon sunny} <nil>",
		`outer> add call_3 {"a":2,"b":2}`, `inner> add call_3 {"a":2,"b":2}`,
		"inner< 4 (checked) <nil>", "outer< 4 (checked) <nil>")
	wantStrings(t, "tools run", f.box.called(), "weather Lyon", "add 2 2")
	var told []string
	for _, res := range f.requests()[1].LastToolResults() {
		told = append(told, res.Content)
	}
	wantStrings(t, "the model is told", told, "You may not use fail here.", `{"city":"Lyon","sky":"sunny"}`, "4 (checked)")
	var veto *ai.VetoError
	ex := r.Executions
	if !errors.As(ex[0].Err, &veto) || ex[0].Result != nil || ex[1].Arguments != `{"city":"Paris"}` || ex[2].Result != "4 (checked)" {
		t.Fatalf("executions %+v", ex)
	}
	if r.Content != "Done." {
		t.Fatalf("the turn did not go on: %+v", r)
	}
}

// TestHookPanics: a panicking model or tool hook fails the request and
// leaves the memory as it was; the next request works.
func TestHookPanics(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parallel bool
		cfg      func(armed *bool) ai.Config
	}{
		{"model", false, func(armed *bool) ai.Config {
			return ai.Config{ModelHooks: []ai.ModelHook{func(next ai.ModelHandler) ai.ModelHandler {
				return func(ctx context.Context, call *ai.ModelCall) (*llms.ContentResponse, error) {
					resp, err := next(ctx, call)
					if *armed && call.N == 2 {
						panic("model hook broke")
					}
					return resp, err
				}
			}}}
		}},
		{"tool", false, toolPanicConfig},
		{"tool-parallel", true, toolPanicConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			armed := true
			cfg := tc.cfg(&armed)
			cfg.ParallelTools = tc.parallel
			f := newServerFixture(t, llmtest.Sequence(
				llmtest.Reply{Text: "Hello."},
				calls(call("add", `{"a":1,"b":1}`), call("note", `{"text":"x"}`)),
				llmtest.Reply{Text: "2."},
				calls(call("add", `{"a":1,"b":1}`), call("note", `{"text":"x"}`)),
				llmtest.Reply{Text: "2."},
			), &cfg)
			ctx := begin(t)
			armed = false
			must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("hi")))
			before := f.memory(ctx, memID(t, ctx))
			armed = true
			_, err := f.svc.Chat(ctx, f.req("Add."))
			var pe *chat.PanicError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), "hook panicked") {
				t.Fatalf("err %v", err)
			}
			if !strings.Contains(f.logs.String(), "hook panicked") {
				t.Fatalf("not logged:\n%s", f.logs.String())
			}
			wantStrings(t, "memory after the panic", f.memory(ctx, memID(t, ctx)), before...)
			armed = false
			if r := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Add."))); r.Content != "2." {
				t.Fatalf("next request: %+v", r)
			}
		})
	}
}

func toolPanicConfig(armed *bool) ai.Config {
	return ai.Config{ToolHooks: []ai.ToolHook{func(next ai.ToolHandler) ai.ToolHandler {
		return func(ctx context.Context, call *ai.ToolCall) (any, error) {
			if *armed && call.Name == "note" {
				panic("tool hook broke")
			}
			return next(ctx, call)
		}
	}}}
}
