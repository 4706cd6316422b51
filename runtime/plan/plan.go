// Package plan is a ready tool box with which the model of an AI service
// keeps a plan of subtasks across the turns of a conversation (AgentScope's
// PlanNotebook): it creates a plan, marks its subtasks in progress,
// finishes them with their outcome, revises the plan, views it and
// finishes it.
//
//	plans := plan.New(nil)
//	cfg := &ai.Config{Model: model, ToolSources: []ai.ToolSource{plans}}
//
// The plan lives in a durable chat-scoped bean ([Notebook]): saved with a
// durable conversation after each request and restored, on any node, when
// the conversation is resumed; nested scopes see their parent's plan. The
// tool box is an [ai.ContextSource]: the current plan is put in every
// request of the service, in the per-request context slot after the
// knowledge passages and the recalled long-term facts — never in the chat
// memory, so the default window cannot evict it, and never before the
// cache-stable prefix (its tools are the same slice every turn, so the
// tools block stays byte-identical). Every change is sent to the client
// as a [protocol.EventPlan] event whose data is the [Plan]. With
// [Options.ScopePerSubtask] each subtask in progress runs in a nested
// scope of its own, popped when the subtask ends.
//
// A plan has at most [Options.MaxSubtasks] subtasks ([DefaultMaxSubtasks]
// unless set); names are at most [MaxName] bytes, descriptions and
// outcomes at most [MaxText]. A tool call that breaks a rule (an unknown
// subtask, an invalid state transition, a second plan while one is in
// progress) fails with a message that tells the model what to do instead,
// and changes nothing.
package plan

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// State is the state of a plan or of a subtask.
type State string

// The states. A subtask starts [Todo]; it goes [InProgress] (one subtask
// at a time), back to Todo, to [Done] (finish_subtask, with its outcome)
// or to [Abandoned]; Done and Abandoned are final. A plan is InProgress
// until finish_plan makes it Done (every subtask Done or Abandoned) or
// Abandoned.
const (
	Todo       State = "todo"
	InProgress State = "in_progress"
	Done       State = "done"
	Abandoned  State = "abandoned"
)

// final reports whether s is a final state.
func (s State) final() bool { return s == Done || s == Abandoned }

// Caps of a plan's texts, in bytes.
const (
	// MaxName caps the name of a plan or of a subtask.
	MaxName = 200
	// MaxText caps a description, an expected outcome or an outcome.
	MaxText = 2000
)

// DefaultMaxSubtasks is the cap of a plan's subtasks when
// [Options.MaxSubtasks] is 0.
const DefaultMaxSubtasks = 20

// A Plan is a task broken into subtasks. It is the data of the Plan
// event, and what [Toolbox.Current] returns.
type Plan struct {
	Name            string `json:"name"`
	Description     string `json:"description"`
	ExpectedOutcome string `json:"expected_outcome,omitempty"`
	// State is InProgress, or Done or Abandoned once finished.
	State State `json:"state"`
	// Outcome is what finish_plan reported.
	Outcome string `json:"outcome,omitempty"`
	// Revision counts the plan's changes: 1 when it is created, one more
	// with each change, so a client can tell the latest of two events.
	Revision int       `json:"revision"`
	Subtasks []Subtask `json:"subtasks"`
}

// A Subtask is one step of a plan.
type Subtask struct {
	Name            string `json:"name"`
	Description     string `json:"description,omitempty"`
	ExpectedOutcome string `json:"expected_outcome,omitempty"`
	State           State  `json:"state"`
	// Outcome is what finish_subtask reported.
	Outcome string `json:"outcome,omitempty"`
}

// clone returns a deep copy of p.
func (p *Plan) clone() *Plan {
	if p == nil {
		return nil
	}
	c := *p
	c.Subtasks = append([]Subtask(nil), p.Subtasks...)
	return &c
}

// A Notebook is the durable chat-scoped bean that holds a conversation's
// plan (see [Toolbox.Bean]). Its methods are safe for concurrent use; it
// is saved as JSON {"plan": …}, the current plan or null (and "scope",
// the nested scope of the subtask in progress, with
// [Options.ScopePerSubtask]).
type Notebook struct {
	mu   sync.Mutex
	plan *Plan // nil: no plan in progress
	// text is the plan as the slot shows it, made on first use after a
	// change ("" until then).
	text string
	// scope is the id of the nested scope of the subtask in progress
	// ([Options.ScopePerSubtask]), "" for none.
	scope string
}

// Current returns a copy of the plan in progress, or nil.
func (n *Notebook) Current() *Plan {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.plan.clone()
}

type notebookJSON struct {
	Plan  *Plan  `json:"plan"`
	Scope string `json:"scope,omitempty"`
}

// MarshalJSON encodes the notebook for a durable conversation's state.
func (n *Notebook) MarshalJSON() ([]byte, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return json.Marshal(notebookJSON{Plan: n.plan, Scope: n.scope})
}

// UnmarshalJSON restores the notebook from a durable conversation's state.
func (n *Notebook) UnmarshalJSON(data []byte) error {
	var v notebookJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.plan, n.text, n.scope = v.Plan, "", v.Scope
	return nil
}

// render writes p for the model: its name, state and revision, its
// description, then its subtasks by index, one a line.
func render(p *Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Plan %s (revision %d, %s)\n", strconv.Quote(p.Name), p.Revision, p.State)
	line(&b, "Description: ", p.Description)
	line(&b, "Expected outcome: ", p.ExpectedOutcome)
	line(&b, "Outcome: ", p.Outcome)
	b.WriteString("Subtasks:\n")
	for i, s := range p.Subtasks {
		fmt.Fprintf(&b, "[%d] %s: %s", i, s.State, oneLine(s.Name))
		if s.Description != "" {
			b.WriteString(" — ")
			b.WriteString(oneLine(s.Description))
		}
		b.WriteString("\n")
		line(&b, "    Expected outcome: ", s.ExpectedOutcome)
		line(&b, "    Outcome: ", s.Outcome)
	}
	return b.String()
}

// line writes label and text on a line, when text is not empty.
func line(b *strings.Builder, label, text string) {
	if text == "" {
		return
	}
	b.WriteString(label)
	b.WriteString(oneLine(text))
	b.WriteString("\n")
}

// oneLine folds text on one line, so that no text of the plan passes for
// a line of its structure.
func oneLine(text string) string {
	return strings.Join(strings.Fields(text), " ")
}
