package main

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// TestMain lets the test binary be the lore server: connectLore runs the
// program it is in, which in tests is this binary.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == loreCommand {
		if err := serveLore(context.Background()); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestLore plays the offline script with -mcp-lore: the Main Menu calls
// the lore server's tool over stdio (an unknown topic is an error result
// the armorer reads), beside the search of its lore corpus, and the
// nested weapon builder offers neither.
func TestLore(t *testing.T) {
	ctx := context.Background()
	src, err := connectLore(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewModel(llmtest.ScriptFunc(playArmorer), nil)
	a, err := newApp(ctx, model, slog.New(slog.DiscardHandler), storage{}, src)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	in := strings.NewReader("tell me the legend of mithril\nany tale of adamantium?\nbuild a sword\nwhat is the legend of fire?\n")
	if err := runTerminal(ctx, a.router, in, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	showsInOrder(t, got,
		"armorer: Mithril was forged in starfire",
		`armorer: The old books are silent: MCP server "lore", tool "legend": no legend tells of "adamantium"; I know of axe, bow,`,
		"── » Weapon builder ──",
		"armorer: A fine sword! What shall we call it?",
		// The legend question, in the weapon builder: no lore tool there.
		"armorer: A fine sword! What shall we call it?",
	)
	for _, req := range model.Requests() {
		offered := req.ToolNames()
		if slices.Contains(offered, "setKind") == slices.Contains(offered, "legend") {
			t.Fatalf("a request offered %v: the lore belongs to the Main Menu only", offered)
		}
		if slices.Contains(offered, "legend") != slices.Contains(offered, ai.DefaultSearchTool) {
			t.Fatalf("a request offered %v: the Main Menu searches its lore corpus beside the MCP server", offered)
		}
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if n := src.Sessions(); n != 0 {
		t.Fatalf("%d sessions after Close", n)
	}
}
