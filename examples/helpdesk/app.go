package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/agent"
	"github.com/chatscopes/chatgen/runtime/agent/subagent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/plan"
)

// The names of the planner's sub-agent tools.
const (
	toolResearch = "research"
	toolPolicy   = "check_policy"
)

// app is the help desk: its router and the planner's plan tool box.
type app struct {
	router *chat.Router
	plans  *plan.Toolbox
}

// newApp wires the generated registration to model: one agent.Handoffs for
// the three agents that hand off, and for the planner a plan tool box and
// the two sub-agents as tools (their calls of one reply run at once).
func newApp(model llms.Model, logger *slog.Logger) (*app, error) {
	handoffs := agent.New(nil)
	hooks := []ai.ModelHook{handoffs.ModelHook()}
	plans := plan.New(&plan.Options{MaxSubtasks: 8, Logger: logger})
	research := subagent.New(toolResearch, func(ctx context.Context, task string) (string, error) {
		r, err := chatBeanResearcher.Lookup(ctx)
		if err != nil {
			return "", err
		}
		return r.Research(ctx, task)
	}, &subagent.Options{Description: "Gives a research task to the researcher sub-agent, which answers with the facts.", Timeout: time.Minute})
	policy := subagent.New(toolPolicy, func(ctx context.Context, task string) (string, error) {
		p, err := chatBeanPolicyChecker.Lookup(ctx)
		if err != nil {
			return "", err
		}
		return p.Check(ctx, task)
	}, &subagent.Options{Description: "Gives a task to the policy sub-agent, which answers with the company policy that applies.", Timeout: time.Minute})
	agentCfg := &ai.Config{Model: model, Logger: logger, ModelHooks: hooks}
	planner := *agentCfg
	planner.ToolSources = []ai.ToolSource{plans, research, policy}
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
