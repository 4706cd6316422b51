package ai

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// benchSource is a tool source of n tools, returning the same slice every
// turn, as an application-wide MCP source does.
type benchSource struct{ tools []Tool }

func (s *benchSource) Name() string                          { return `MCP server "bench"` }
func (s *benchSource) Tools(context.Context) ([]Tool, error) { return s.tools, nil }
func newBenchSource(n int) *benchSource {
	s := &benchSource{tools: make([]Tool, n)}
	for i := range s.tools {
		s.tools[i] = Tool{
			Definition: llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
				Name:       fmt.Sprintf("lore_%d", i),
				Parameters: json.RawMessage(`{"type":"object","properties":{"topic":{"type":"string"}}}`),
			}},
			Invoke: func(context.Context, string) (any, error) { return "a legend", nil },
		}
	}
	return s
}

// BenchmarkAITurnToolSource is BenchmarkAITurn's bare-model turn on a
// service with a tool source of 0, 8 and 32 tools (offered, not called):
// what merging a source's tools with the method's costs per turn.
func BenchmarkAITurnToolSource(b *testing.B) {
	for _, n := range []int{0, 8, 32} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			var cfg Config
			if n > 0 {
				cfg.ToolSources = []ToolSource{newBenchSource(n)}
			}
			benchBareTurn(b, &cfg, nil)
		})
	}
}

// benchBareTurn runs BenchmarkAITurn's turn (a tool call, then the
// answer) on a service configured by cfg, with a window memory; a nil
// cfg.Model means a fast bare model. reset, when set, runs every 1,000
// turns (llmtest.Model records every request).
func benchBareTurn(b *testing.B, opts *Config, reset func()) {
	cfg := *opts
	if cfg.Model == nil {
		cfg.Model = newFastModel()
	}
	cfg.Memory = memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(memory.DefaultMaxMessages, nil)})
	s := NewService("example.com/app.Assistant", &cfg)
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer chat.End(ctx)
	req := &Request{Method: &Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse.", Tools: benchTools}, User: "Weather in Paris?"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r, err := s.Chat(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if r.ModelCalls != 2 || len(r.Executions) != 1 {
			b.Fatalf("reply %+v", r)
		}
		if i++; reset != nil && i%1000 == 0 {
			reset()
		}
	}
}
