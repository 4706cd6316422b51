package main

import (
	"context"

	"github.com/chatscopes/chatgen/runtime/agent"
	"github.com/chatscopes/chatgen/runtime/ai"
)

// Triage greets customers and hands them to the agent that can help.
//
//chat:ai
//chat:system You are the help desk's triage agent. Hand billing questions to billing with transferToBilling, and requests that need a plan (a move, an office set-up) to the planner with transferToPlanner.
//chat:tools Desk
type Triage interface {
	//chat:route triage default
	Chat(ctx context.Context, userMessage string) (ai.Result[string], error)
}

// Billing is the specialist for invoices and refunds.
//
//chat:ai
//chat:system You are the billing specialist: you answer questions on invoices and refunds. Hand anything else back with transferBack.
//chat:tools Desk
type Billing interface {
	//chat:route billing
	Chat(ctx context.Context, userMessage string) (ai.Result[string], error)
}

// Planner is the orchestrator: it keeps a plan and fans the work out to the
// researcher and the policy checker, its sub-agents.
//
//chat:ai
//chat:system You are the help desk's planner: write a plan, give the research and policy subtasks to your sub-agents (call both at once), keep the plan up to date and answer with the outcome.
//chat:tools Desk Researcher PolicyChecker
type Planner interface {
	//chat:route planner
	Chat(ctx context.Context, userMessage string) (ai.Result[string], error)
}

// Researcher is a sub-agent: it finds the facts a task needs.
//
//chat:ai
//chat:system You are the researcher sub-agent: find the facts the task needs and answer with them.
type Researcher interface {
	// Research gives a research task to the researcher sub-agent, which
	// answers with the facts.
	//
	//chat:agent name=research timeout=1m
	Research(ctx context.Context, userMessage string) (string, error)
}

// PolicyChecker is a sub-agent: it checks a task against company policy.
//
//chat:ai
//chat:system You are the policy sub-agent: check the task against company policy and answer with what applies.
type PolicyChecker interface {
	// Check gives a task to the policy sub-agent, which answers with the
	// company policy that applies.
	//
	//chat:agent name=check_policy timeout=1m
	Check(ctx context.Context, userMessage string) (string, error)
}

// Desk holds the hand-off tools of the agents.
type Desk struct{ handoffs *agent.Handoffs }

// NewDesk is the tool box's constructor: the Handoffs is a dependency.
func NewDesk(h *agent.Handoffs) *Desk { return &Desk{handoffs: h} }

// TransferToBilling hands the conversation to billing, which answers the
// customer's message seeing the last two turns.
//
//chat:tool immediate name=transferToBilling
func (d *Desk) TransferToBilling(ctx context.Context) error {
	return d.handoffs.HandOff(ctx, RouteBilling, &agent.HandOffOptions{Input: agent.LastTurns(2)})
}

// TransferToPlanner hands the conversation to the planner, which answers
// the customer's message seeing none of the conversation before it.
//
//chat:tool immediate name=transferToPlanner
func (d *Desk) TransferToPlanner(ctx context.Context) error {
	return d.handoffs.HandOff(ctx, RoutePlanner, &agent.HandOffOptions{Input: agent.Nothing()})
}

// TransferBack hands the conversation back to the agent that handed it
// over.
//
//chat:tool immediate name=transferBack
func (d *Desk) TransferBack(ctx context.Context) error {
	return d.handoffs.HandBack(ctx, nil)
}
