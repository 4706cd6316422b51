package mcptools_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/mcptools"
)

// BenchmarkCall measures one tool call through a source's ai.Tool, over
// stdio (a child process) and streamable HTTP on loopback: what an MCP
// tool adds to a turn beyond the tool's own work.
func BenchmarkCall(b *testing.B) {
	run := func(b *testing.B, transport func(context.Context) (mcp.Transport, error)) {
		src, err := mcptools.Connect(context.Background(), &mcptools.Options{Name: "lore", Transport: transport, Allow: []string{"legend"}})
		if err != nil {
			b.Fatal(err)
		}
		defer src.Close()
		var legend ai.Tool = src.ListTools()[0]
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := legend.Invoke(ctx, `{"topic":"mithril"}`); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("stdio", func(b *testing.B) { run(b, stdio("lore")) })
	b.Run("http", func(b *testing.B) {
		run(b, newHTTPServer(b, "lore").transport())
	})
}
