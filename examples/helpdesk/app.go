package main

import (
	"log/slog"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/agent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/plan"
)

// app is the help desk: its router and the planner's plan tool box.
type app struct {
	router *chat.Router
	plans  *plan.Toolbox
}

// newApp wires the generated registration to model: one agent.Handoffs for
// the three agents that hand off, and for the planner a plan tool box (its
// two sub-agents, offered by //chat:agent, are the generated code's).
func newApp(model llms.Model, logger *slog.Logger) (*app, error) {
	handoffs := agent.New(nil)
	hooks := []ai.ModelHook{handoffs.ModelHook()}
	plans := plan.New(&plan.Options{MaxSubtasks: 8, Logger: logger})
	agentCfg := &ai.Config{Model: model, Logger: logger, ModelHooks: hooks}
	planner := *agentCfg
	planner.ToolSources = []ai.ToolSource{plans}
	sub := &ai.Config{Model: model, Logger: logger}
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: logger}, Register(Deps{
		Handoffs:      handoffs,
		Triage:        agentCfg,
		Billing:       agentCfg,
		Planner:       &planner,
		Researcher:    sub,
		PolicyChecker: sub,
	}))
	if err != nil {
		return nil, err
	}
	return &app{router: router, plans: plans}, nil
}
