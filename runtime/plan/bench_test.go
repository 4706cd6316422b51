package plan_test

import (
	"context"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/plan"
)

// BenchmarkTurn is one turn of a chat method on the in-process model:
// without the plan tool box (bare), with it and no plan (tools: what its
// six tools cost), and with a plan of 8 subtasks in progress (plan: the
// plan placed in the turn's slot too).
func BenchmarkTurn(b *testing.B) {
	for _, name := range []string{"bare", "tools", "plan"} {
		withBox, withPlan := name != "bare", name == "plan"
		b.Run(name, func(b *testing.B) {
			cfg := &ai.Config{
				Model:  llmtest.NewModel(llmtest.ScriptFunc(func(*llmtest.Request) (llmtest.Reply, error) { return llmtest.Reply{Text: "ok"}, nil }), nil),
				Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(10, nil)}),
			}
			plans := plan.New(nil)
			if withBox {
				cfg.ToolSources = []ai.ToolSource{plans}
			}
			svc := ai.NewService("example.com/app.Smith", cfg)
			method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are a weaponsmith."}
			ctx, err := chat.Begin(context.Background(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer chat.End(ctx)
			if withPlan {
				create := plans.ListTools()[0]
				if _, err := create.Invoke(ctx, `{"name":"Crossbow","description":"Build a crossbow","subtasks":[`+
					`{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"},{"name":"e"},{"name":"f"},{"name":"g"},{"name":"h"}]}`); err != nil {
					b.Fatal(err)
				}
			}
			req := &ai.Request{Method: method, User: "what next?"}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := svc.Chat(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
