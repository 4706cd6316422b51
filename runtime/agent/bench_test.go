package agent_test

import (
	"context"
	"testing"

	"github.com/chatscopes/chatgen/runtime/agent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// BenchmarkAgentTurn measures one turn of a routed AI service through the
// local client, without the Handoffs hook, with it, and with it giving the
// agent the input of a hand-off (All, after five turns).
func BenchmarkAgentTurn(b *testing.B) {
	run := func(b *testing.B, hooked, handedOff bool) {
		h := agent.New(nil)
		cfg := &ai.Config{
			Model:  llmtest.NewModel(llmtest.Rules(llmtest.When(nil, llmtest.Reply{Text: "fine"})), nil),
			Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(10, nil)}),
		}
		if hooked {
			cfg.ModelHooks = []ai.ModelHook{h.ModelHook()}
		}
		svc := ai.NewService("example.com/bench.Agent", cfg)
		method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}
		ask := func(ctx context.Context) error {
			r, err := svc.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
			if err != nil {
				return err
			}
			return chat.SendValue(ctx, r.Content)
		}
		p := chatimpl.NewPackage("example.com/bench")
		p.AddRoute(chatimpl.RouteSpec{Name: "front", Default: true, Handle: func(ctx context.Context) error {
			if chat.Request(ctx).UserMessage() == "hand off" {
				return h.HandOff(ctx, "agent", nil)
			}
			return ask(ctx)
		}})
		p.AddRoute(chatimpl.RouteSpec{Name: "agent", Handle: ask})
		router, err := chat.NewRouter(nil, p)
		if err != nil {
			b.Fatal(err)
		}
		client := chat.NewLocalClient(router)
		defer client.Close()
		ctx := context.Background()
		route := "agent"
		if handedOff {
			route = "front"
		}
		s, err := client.Builder().Connect(ctx, route)
		if err != nil {
			b.Fatal(err)
		}
		if handedOff {
			for _, text := range []string{"one", "two", "three", "four", "five", "hand off"} {
				if err := s.Chat(ctx, text); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := s.Chat(ctx, "how are you?"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("no-hook", func(b *testing.B) { run(b, false, false) })
	b.Run("hook", func(b *testing.B) { run(b, true, false) })
	b.Run("hook-handed-off", func(b *testing.B) { run(b, true, true) })
}
