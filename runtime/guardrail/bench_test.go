package guardrail_test

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/guardrail"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// fastModel answers every call with one prebuilt text: it leaves the
// service's own cost.
type fastModel struct{ resp *llms.ContentResponse }

func newFastModel() *fastModel {
	info := map[string]any{"PromptTokens": 100, "CompletionTokens": 10, "TotalTokens": 110}
	return &fastModel{resp: &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: "It is sunny.", StopReason: "stop", GenerationInfo: info}}}}
}

func (m *fastModel) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return m.resp, nil
}

func (m *fastModel) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// passInput and passOutput are guardrails that let everything through,
// as a real check that finds nothing does.
type passInput struct{}

func (passInput) CheckInput(context.Context, *guardrail.Input) guardrail.Result {
	return guardrail.Pass()
}

type passOutput struct{}

func (passOutput) CheckOutput(context.Context, *guardrail.Output) guardrail.Result {
	return guardrail.Pass()
}

var benchAsk = ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}

// turnCost returns a function running one turn of a service with set.
func turnCost(tb testing.TB, set *guardrail.Set) func() {
	s := ai.NewService("example.com/app.Assistant", &ai.Config{
		Model:      newFastModel(),
		Memory:     memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(10, nil)}),
		Guardrails: set,
	})
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = chat.End(ctx) })
	req := &ai.Request{Method: &benchAsk, User: "Weather?"}
	return func() {
		reply, err := s.Chat(ctx, req)
		if err != nil || reply.Content != "It is sunny." {
			tb.Fatalf("%+v %v", reply, err)
		}
	}
}

// passing is one input and one output guardrail that pass.
func passing() *guardrail.Set {
	return &guardrail.Set{Input: []guardrail.InputGuardrail{passInput{}}, Output: []guardrail.OutputGuardrail{passOutput{}}}
}

// BenchmarkAITurnGuardrails measures a one-model-call turn without
// guardrails (none), with an empty set (empty), and with an input and an
// output guardrail that pass (pass).
func BenchmarkAITurnGuardrails(b *testing.B) {
	for _, bc := range []struct {
		name string
		set  *guardrail.Set
	}{{"none", nil}, {"empty", &guardrail.Set{}}, {"pass", passing()}} {
		b.Run(bc.name, func(b *testing.B) {
			turn := turnCost(b, bc.set)
			b.ReportAllocs()
			for b.Loop() {
				turn()
			}
		})
	}
}

// TestPassingGuardrailsAllocateAtMostTwo holds the goal: guardrails that
// pass cost at most 2 allocations per turn (1: the turn's guardrail
// state), an empty set costs none.
func TestPassingGuardrailsAllocateAtMostTwo(t *testing.T) {
	none := testing.AllocsPerRun(200, turnCost(t, nil))
	empty := testing.AllocsPerRun(200, turnCost(t, &guardrail.Set{}))
	pass := testing.AllocsPerRun(200, turnCost(t, passing()))
	t.Logf("allocations per turn: none %.1f, empty %.1f, pass %.1f", none, empty, pass)
	if empty > none {
		t.Errorf("an empty set costs %.1f allocations", empty-none)
	}
	if pass-none > 2 {
		t.Errorf("passing guardrails cost %.1f allocations per turn, more than 2", pass-none)
	}
}
