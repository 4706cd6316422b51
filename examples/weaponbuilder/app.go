package main

import (
	"log/slog"
	"os"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
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
}

// newApp wires the generated registration to a model. The Main Menu also
// offers the tools of menuTools (the lore MCP server's, with -mcp-lore);
// the nested conversations offer only their own. Conversations and chat
// memories are kept in store (the zero storage: in the process only).
func newApp(model llms.Model, logger *slog.Logger, store storage, menuTools ...ai.ToolSource) (*app, error) {
	a := &app{
		armory: &Armory{},
		memory: memory.NewManager(memory.Config{Policy: memory.Window(40), Store: store.memories}),
	}
	cfg := ai.Config{Model: model, Memory: a.memory, Logger: logger}
	// Spans and metrics go to the global OpenTelemetry providers: no-op
	// (and free) unless main installs an SDK (-otel).
	cfg.Telemetry.ModelName = modelName(model)
	menu := cfg
	menu.ToolSources = menuTools
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: logger, Store: store.conversations, LeaseTTL: store.leaseTTL, RouteHooks: []chat.RouteHook{otelchat.RouteHook(nil)}},
		Register(Deps{
			Armory:        a.armory,
			MainMenu:      menu,
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
