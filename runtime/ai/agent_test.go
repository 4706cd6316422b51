package ai_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// Without ParallelTools, the calls of Concurrent tools of one reply run
// at once while the others run in order; the results go to the model in
// call order.
func TestConcurrentTools(t *testing.T) {
	var wg sync.WaitGroup
	wg.Add(2) // the two concurrent calls wait for each other
	var mu sync.Mutex
	var order []string
	tool := func(name string, concurrent bool) ai.Tool {
		return ai.Tool{Name: name, Parameters: json.RawMessage(`{"type":"object"}`), Concurrent: concurrent,
			Invoke: func(ctx context.Context, _ string) (any, error) {
				if concurrent {
					wg.Done()
					wg.Wait()
				}
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				return name + " done", nil
			}}
	}
	f := newModelFixture(t, llmtest.Sequence(
		calls(call("a", `{}`), call("b", `{}`), call("c", `{}`)),
		llmtest.Reply{Text: "ok"},
	), &ai.Config{})
	req := f.req("go")
	req.Method.Tools = []ai.Tool{tool("a", true), tool("b", false), tool("c", true)}
	r, err := f.svc.Chat(begin(t), req)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ex := range r.Executions {
		got = append(got, ex.Text)
	}
	if want := []string{"a done", "b done", "c done"}; !slices.Equal(got, want) {
		t.Errorf("results %q, want %q", got, want)
	}
	if len(order) != 3 {
		t.Errorf("ran %q", order)
	}
}
