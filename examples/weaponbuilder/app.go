package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/knowledge"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/recall"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/otelchat"
)

// realModelName is the model asked for when OPENAI_API_KEY is set:
// CHATGEN_MODEL, else gpt-4o-mini.
func realModelName() string {
	if name := os.Getenv("CHATGEN_MODEL"); name != "" {
		return name
	}
	return "gpt-4o-mini"
}

// modelName names model in the telemetry (langchaingo's clients do not
// tell).
func modelName(model llms.Model) string {
	if _, offline := model.(*llmtest.Model); offline {
		return llmtest.DefaultModelName
	}
	return realModelName()
}

// app is the armorer: its router, its armory and the memory of its AI
// services.
type app struct {
	router *chat.Router
	armory *Armory
	memory *memory.Manager
	// players is what the Main Menu remembers of each player (a
	// principal) across conversations: their name, their favourite
	// weapon kind.
	players *recall.Memory
}

// newApp wires the generated registration to a model. The Main Menu
// answers lore questions from the lore corpus (loreKnowledge) and also
// offers the tools of menuTools (the lore MCP server's, with -mcp-lore);
// the nested conversations offer only their own. Conversations and chat
// memories are kept in store (the zero storage: in the process only).
// The Main Menu also remembers players across their conversations
// (players): it recalls what it knows of a player before each turn and
// learns from each turn, in store's facts (in the process when it has
// none). A player is the request's principal: the web page's player
// cookie (playerAuth); an anonymous request has no long-term memory.
func newApp(ctx context.Context, model llms.Model, logger *slog.Logger, store storage, menuTools ...ai.ToolSource) (*app, error) {
	lore, err := loreKnowledge(ctx)
	if err != nil {
		return nil, err
	}
	facts := store.facts
	if facts == nil {
		facts = longterm.NewMemStore(nil)
	}
	a := &app{
		armory:  &Armory{},
		memory:  memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(40, nil), Store: store.memories}),
		players: recall.New(facts, &recall.Options{Logger: logger}),
	}
	cfg := &ai.Config{Model: model, Memory: a.memory, Logger: logger}
	// Spans and metrics go to the global OpenTelemetry providers: no-op
	// (and free) unless main installs an SDK (-otel).
	cfg.Telemetry.ModelName = modelName(model)
	menu := *cfg
	menu.ToolSources = menuTools
	menu.Knowledge = lore
	menu.LongTerm = a.players
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: logger, Store: store.conversations, LeaseTTL: store.leaseTTL, RouteHooks: []chat.RouteHook{otelchat.RouteHook(nil)}},
		Register(Deps{
			Armory:        a.armory,
			MainMenu:      &menu,
			WeaponBuilder: cfg,
			Enchanter:     cfg,
			ArmorBuilder:  cfg,
		}),
	)
	if err != nil {
		return nil, err
	}
	a.router = router
	return a, nil
}

// loreLoad splits the lore corpus as runtime/knowledge's evaluation does:
// passages of at most 300 characters, of which BM25 puts one that answers
// among the first three for 93% of its questions (docs/numbers.md).
var loreLoad = knowledge.LoadOptions{ChunkSize: 300}

// lorePassages is how many passages one lore search gives the model.
const lorePassages = 3

// loreKnowledge is the Main Menu's knowledge: the lore corpus shipped in
// the program (loreCorpus), indexed in memory with BM25 when the program
// starts — a few milliseconds, no model, no server — and searched by the
// model with the search_knowledge tool when a question needs it (agentic
// mode: most of the menu's turns only pick a hand-off tool, and need no
// passages). Each search sends the page a Sources event.
func loreKnowledge(ctx context.Context) (*ai.Knowledge, error) {
	corpus, err := loreCorpus()
	if err != nil {
		return nil, fmt.Errorf("the lore corpus: %w", err)
	}
	ix, err := knowledge.IndexDir(ctx, corpus, &knowledge.IndexDirOptions{Load: loreLoad})
	if err != nil {
		return nil, fmt.Errorf("indexing the lore corpus: %w", err)
	}
	return &ai.Knowledge{
		Name:        "lore",
		Retriever:   ix.Retriever(lorePassages, nil),
		Mode:        ai.RetrievalAgentic,
		MaxPassages: lorePassages,
		ToolDescription: "Searches the lore of the realm — its metals, runes, weapons, armour, places and legends — " +
			"and returns the passages most relevant to the query, best first, as JSON: [{id, title, source, score, content}]. " +
			"Answer lore questions from these passages only, and name the title you answer from.",
	}, nil
}
