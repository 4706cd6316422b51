package subagent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/agent/subagent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// fastModel is runtime/ai's bare model of BenchmarkAITurn: it answers a
// tool call and then a text, alternately, from prebuilt responses.
type fastModel struct {
	n           int
	call, final *llms.ContentResponse
}

func newFastModel() *fastModel {
	info := map[string]any{"PromptTokens": 100, "CompletionTokens": 10, "TotalTokens": 110}
	return &fastModel{
		call: &llms.ContentResponse{Choices: []*llms.ContentChoice{{StopReason: "tool_calls", GenerationInfo: info,
			ToolCalls: []llms.ToolCall{{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}}}},
		final: &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "It is sunny in Paris.", StopReason: "stop", GenerationInfo: info}}},
	}
}

func (m *fastModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	m.n++
	if m.n%2 == 1 {
		c := *m.call.Choices[0]
		c.ToolCalls = append([]llms.ToolCall(nil), c.ToolCalls...)
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{&c}}, nil
	}
	return m.final, nil
}

func (m *fastModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// BenchmarkSubAgentCall compares a chat-scoped //chat:ai method (the
// bare-model turn of runtime/ai's BenchmarkAITurn: two model calls, one
// tool, one commit) called directly from a tool of another turn with the
// same method called as a sub-agent tool, continuing its session (child
// scope, memory owner, budget, roll-up and events included). The goal: the
// sub-agent call costs at most 1.1× the direct one, in time and
// allocations.
func BenchmarkSubAgentCall(b *testing.B) {
	for _, mode := range []string{"direct", "subagent"} {
		b.Run(mode, func(b *testing.B) {
			child := ai.NewService("example.com/app.Researcher", &ai.Config{Model: newFastModel(),
				Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(memory.DefaultMaxMessages, nil)})})
			method := &ai.Method{Name: "Research", Kind: chat.KindChat, System: "You are terse.", Tools: []ai.Tool{{
				Name: "weather", Description: "The weather of a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":"string"}}`),
				Invoke: func(_ context.Context, args string) (any, error) { return "sunny", nil },
			}}}
			req := &ai.Request{Method: method, User: "Weather in Paris?"}
			tool := subagent.New("research", func(ctx context.Context, task string) (string, error) {
				r, err := child.Chat(ctx, req)
				if err != nil {
					return "", err
				}
				return r.Content, nil
			}, nil).Tool()
			once := func(ctx context.Context, args string) error {
				if mode == "direct" {
					_, err := child.Chat(ctx, req)
					return err
				}
				_, err := tool.Invoke(ctx, args)
				return err
			}
			parent := ai.NewService("example.com/app.Orchestrator", &ai.Config{Model: llmtest.NewModel(llmtest.Sequence(
				llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "bench", Arguments: `{}`}}},
				llmtest.Reply{Text: "done"},
			), nil), TurnBudget: 1 << 30}) // the loop's calls are all the one turn's
			pm := &ai.Method{Name: "Ask", Kind: chat.KindChat, Tools: []ai.Tool{{
				Name: "bench", Parameters: json.RawMessage(`{"type":"object"}`),
				Invoke: func(ctx context.Context, _ string) (any, error) {
					if err := once(ctx, `{"task":"Weather in Paris?"}`); err != nil { // starts research-1
						return nil, err
					}
					b.ReportAllocs()
					for b.Loop() {
						if err := once(ctx, `{"task":"Weather in Paris?","session_id":"research-1"}`); err != nil {
							b.Fatal(err)
						}
					}
					return "done", nil
				},
			}}}
			ctx, err := chat.Begin(context.Background(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer chat.End(ctx)
			r, err := parent.Chat(ctx, &ai.Request{Method: pm, User: "go"})
			if err != nil {
				b.Fatal(err)
			}
			if r.Executions[0].Err != nil {
				b.Fatal(r.Executions[0].Err)
			}
		})
	}
}

// BenchmarkFanOut is an orchestrator's turn that fans out to 4 sub-agents
// whose model each takes 200ms: the goal is ≤250ms a turn, not 800.
func BenchmarkFanOut(b *testing.B) {
	r := newRig(b, &rigOptions{inProcess: true})
	ctx := context.Background()
	conv, err := r.router.Connect(ctx, "")
	if err != nil {
		b.Fatal(err)
	}
	defer conv.Close(ctx)
	for b.Loop() {
		var got string
		if _, f := conv.Handle(ctx, conv.ScopeID(), chat.NewTextRequest("fan 4 slow1 slow2 slow3 slow4"), func(ev chat.Event) error {
			if ev.Type == protocol.EventMessage {
				got = ev.Text()
			}
			return nil
		}); f != nil {
			b.Fatal(f)
		}
		if strings.Count(got, "answer to slow") != 4 {
			b.Fatalf("answer %q", got)
		}
	}
}
