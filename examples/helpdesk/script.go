package main

import (
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/plan"
)

// The names the //chat:agent directives give the planner's sub-agent
// tools.
const (
	toolResearch = "research"
	toolPolicy   = "check_policy"
)

// offlineModel is the scripted model the help desk runs on without a key.
func offlineModel() *llmtest.Model { return llmtest.NewModel(script(), nil) }

// script answers each agent as its system message names it: triage hands
// off by what the customer asks, billing answers or hands back, the
// planner creates a plan, fans out to both sub-agents in one reply,
// finishes the subtasks and the plan, and answers with the sub-agents'
// findings.
func script() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		system := systemText(req)
		typed := strings.ToLower(req.UserTyped())
		switch {
		case strings.Contains(system, "triage agent"):
			switch {
			case strings.Contains(typed, "invoice") || strings.Contains(typed, "refund") || strings.Contains(typed, "bill"):
				return calls(llmtest.ToolCall{Name: "transferToBilling", Arguments: `{}`}), nil
			case strings.Contains(typed, "plan") || strings.Contains(typed, "move") || strings.Contains(typed, "office"):
				return calls(llmtest.ToolCall{Name: "transferToPlanner", Arguments: `{}`}), nil
			}
			return llmtest.Reply{Text: "Hello, this is the help desk. I can put you through to billing, or to our planner for a move or an office set-up."}, nil
		case strings.Contains(system, "billing specialist"):
			if strings.Contains(typed, "thanks") || strings.Contains(typed, "something else") {
				return calls(llmtest.ToolCall{Name: "transferBack", Arguments: `{}`}), nil
			}
			return llmtest.Reply{Text: "Billing here: your refund of 42 EUR was issued today and reaches your account within 5 days."}, nil
		case strings.Contains(system, "researcher sub-agent"):
			return llmtest.Reply{Text: "Research: the new office has 12 desks and fibre internet."}, nil
		case strings.Contains(system, "policy sub-agent"):
			return llmtest.Reply{Text: "Policy: moves need a manager's approval 2 weeks ahead."}, nil
		case strings.Contains(system, "planner"):
			return plannerStep(req), nil
		}
		return llmtest.Reply{Text: "How can I help?"}, nil
	})
}

// plannerStep is the planner's next step, by the tools whose results end
// the request.
func plannerStep(req *llmtest.Request) llmtest.Reply {
	results := req.LastToolResults()
	if len(results) == 0 {
		return calls(llmtest.ToolCall{Name: plan.ToolCreate, Arguments: `{"name":"Office move","description":"Move the team to the new office","expected_outcome":"a move the team can start","subtasks":[{"name":"Research the new office","expected_outcome":"its desks and network"},{"name":"Check the moving policy","expected_outcome":"the approvals needed"}]}`})
	}
	switch results[0].Name {
	case plan.ToolCreate:
		return calls(
			llmtest.ToolCall{Name: toolResearch, Arguments: `{"task":"What does the new office offer?"}`},
			llmtest.ToolCall{Name: toolPolicy, Arguments: `{"task":"What does a team move need?"}`},
		)
	case toolResearch:
		return calls(
			llmtest.ToolCall{Name: plan.ToolFinishTask, Arguments: `{"subtask_idx":0,"subtask_outcome":"12 desks, fibre internet"}`},
			llmtest.ToolCall{Name: plan.ToolFinishTask, Arguments: `{"subtask_idx":1,"subtask_outcome":"manager approval 2 weeks ahead"}`},
		)
	case plan.ToolFinishTask:
		return calls(llmtest.ToolCall{Name: plan.ToolFinishPlan, Arguments: `{"state":"done","outcome":"ready to move once approved"}`})
	}
	return llmtest.Reply{Text: "Your move is planned: the new office has 12 desks and fibre internet, and the move needs a manager's approval 2 weeks ahead."}
}

// calls is a reply calling tools.
func calls(c ...llmtest.ToolCall) llmtest.Reply { return llmtest.Reply{ToolCalls: c} }

// systemText is the text of the request's system message, lower-cased.
func systemText(req *llmtest.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role != llms.ChatMessageTypeSystem {
			continue
		}
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok {
				b.WriteString(t.Text)
			}
		}
	}
	return strings.ToLower(b.String())
}
