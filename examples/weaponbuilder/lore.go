package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/mcptools"
)

// The lore server: a small MCP server that knows the legends of the
// armorer's materials, elements and weapons. With -mcp-lore the armorer
// starts it — this very program, run as `weaponbuilder lore-server` — and
// talks to it over stdio, and the Main Menu may call its tool. The nested
// conversations do not offer it: their services have no MCP source.

// loreCommand is the first argument that runs the program as the lore
// server.
const loreCommand = "lore-server"

// legends are what the lore server knows.
var legends = map[string]string{
	"iron":      "Iron was the first gift of the mountain: the dwarves say every blade remembers the ore it came from.",
	"steel":     "Steel is iron that walked through fire twice; the smiths of Varn quench it in snowmelt for luck.",
	"mithril":   "Mithril was forged in starfire, light as a feather and harder than dragon scale; no living smith has found a new vein.",
	"leather":   "Leather armour was worn by the rangers of the Greenwood, who valued silence over steel.",
	"fire":      "Fire runes were first carved by the salamander priests; a fire-bound blade never rusts.",
	"frost":     "Frost runes come from the ice witches of the north; their cold bites deeper than the edge.",
	"lightning": "Lightning runes were stolen from the storm giants, who still roar for them on summer nights.",
	"sword":     "The first sword, Dawnbreaker's ancestor, was made to cut the night from the day.",
	"axe":       "Axes were tools before they were weapons; the woodcutters' guild still claims every axe of the realm.",
	"bow":       "The elven bow is strung with a hair of the moon, they say, and never misses twice.",
	"dagger":    "Daggers are the weapons of secrets; every thieves' guild keeps a ledger of its blades.",
	"staff":     "A staff is a wizard's memory: each notch marks a spell the wizard will never cast again.",
}

// legendArgs are the arguments of the legend tool.
type legendArgs struct {
	Topic string `json:"topic" jsonschema:"a material (iron, steel, mithril, leather), an element (fire, frost, lightning) or a kind of weapon"`
}

// loreServer returns the lore MCP server.
func loreServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "lore", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "legend", Description: "Legend tells the legend of a material, an element or a kind of weapon."},
		func(_ context.Context, _ *mcp.CallToolRequest, args legendArgs) (*mcp.CallToolResult, any, error) {
			text, ok := legends[strings.ToLower(strings.TrimSpace(args.Topic))]
			if !ok {
				topics := make([]string, 0, len(legends))
				for t := range legends {
					topics = append(topics, t)
				}
				slices.Sort(topics)
				// An error result: the model is told, and may ask again.
				return nil, nil, fmt.Errorf("no legend tells of %q; I know of %s", args.Topic, strings.Join(topics, ", "))
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	return srv
}

// serveLore runs the lore server over stdin and stdout until stdin
// closes.
func serveLore(ctx context.Context) error {
	return loreServer().Run(ctx, &mcp.StdioTransport{})
}

// connectLore starts the lore server (this program, as a child process)
// and opens the application-wide session whose tools the Main Menu
// offers. Close the source to stop the server.
func connectLore(ctx context.Context, logger *slog.Logger) (*mcptools.Source, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding this program to run the lore server: %w", err)
	}
	return mcptools.Connect(ctx, &mcptools.Options{
		Name:        "lore",
		Transport:   mcptools.Command(exe, loreCommand),
		CallTimeout: 5 * time.Second,
		Logger:      logger,
	})
}
