package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// DefaultBeanName is the name of the notebook bean when
// [Options.BeanName] is empty.
const DefaultBeanName = "github.com/chatscopes/chatgen/runtime/plan.Notebook"

// The names of the tools the tool box offers.
const (
	ToolCreate       = "create_plan"
	ToolUpdateState  = "update_subtask_state"
	ToolFinishTask   = "finish_subtask"
	ToolRevise       = "revise_current_plan"
	ToolView         = "view_plan"
	ToolFinishPlan   = "finish_plan"
	contextGuidance  = "Work through the plan: mark a subtask in_progress when you start it, finish it with its outcome when it is done, revise the plan when it no longer fits, and finish the plan at the end."
	noPlanToolResult = "There is no plan in progress: create one with " + ToolCreate + "."
)

// ErrRule is matched (errors.Is) by the error of a tool call that breaks
// a rule of the plan: an unknown subtask, an invalid state transition, a
// cap exceeded, a plan created while another is in progress. The service
// tells the model the error's message as the tool's result; nothing is
// changed.
var ErrRule = errors.New("plan")

// Options configure a [Toolbox]. The zero value (or nil) is ready to use.
type Options struct {
	// BeanName names the notebook bean: two tool boxes with the same name
	// share the conversation's plan. Empty means [DefaultBeanName].
	BeanName string
	// MaxSubtasks caps a plan's subtasks; 0 means [DefaultMaxSubtasks].
	MaxSubtasks int
	// NoEvents turns off the Plan events.
	NoEvents bool
	// ScopePerSubtask runs each subtask in a nested chat scope: setting a
	// subtask in_progress pushes a scope (chat.Push, keeping the route),
	// so the turns that work on it talk in a memory of their own, with
	// the plan (a bean of the enclosing scope) in each request; finishing
	// it, abandoning it, setting it back to todo, deleting it or finishing
	// the plan pops that scope — its memory and beans go — when it is
	// still the current one (a scope pushed inside it since is left
	// alone, and the subtask's scope with it).
	ScopePerSubtask bool
	// Logger logs the Plan events that could not be sent; nil means
	// slog.Default().
	Logger *slog.Logger
}

// A Toolbox offers an AI service the plan tools (an [ai.ToolSource] for
// [ai.Config.ToolSources]) and puts the current plan in each of its
// requests (an [ai.ContextSource]). Make one with [New]; it is safe for
// concurrent use by any number of services and conversations.
type Toolbox struct {
	bean   *chat.Bean[*Notebook]
	max    int
	quiet  bool
	scoped bool
	log    *slog.Logger
	tools  []ai.Tool
}

// New returns a plan tool box.
func New(opts *Options) *Toolbox {
	if opts == nil {
		opts = &Options{}
	}
	name := opts.BeanName
	if name == "" {
		name = DefaultBeanName
	}
	tb := &Toolbox{max: opts.MaxSubtasks, quiet: opts.NoEvents, scoped: opts.ScopePerSubtask, log: opts.Logger}
	if tb.max <= 0 {
		tb.max = DefaultMaxSubtasks
	}
	if tb.log == nil {
		tb.log = slog.Default()
	}
	tb.bean = chat.NewBean(name, &chat.BeanOptions{Durable: true}, func(context.Context) (*Notebook, error) {
		return &Notebook{}, nil
	})
	tb.tools = tb.makeTools()
	return tb
}

// Name returns "plan": the source's name in errors and in the context slot.
func (tb *Toolbox) Name() string { return "plan" }

// Tools returns the plan tools: the same slice on every call, so that the
// service's tools block does not change from turn to turn.
func (tb *Toolbox) Tools(context.Context) ([]ai.Tool, error) { return tb.tools, nil }

// ListTools returns the plan tools, for [ai.Service.Check].
func (tb *Toolbox) ListTools() []ai.Tool { return tb.tools }

// MaxSubtasks returns the cap of a plan's subtasks.
func (tb *Toolbox) MaxSubtasks() int { return tb.max }

// Bean returns the durable chat-scoped bean that holds the plan of the
// conversation in a context.
func (tb *Toolbox) Bean() *chat.Bean[*Notebook] { return tb.bean }

// Current returns a copy of the plan in progress in the conversation of
// ctx, or nil when there is none.
func (tb *Toolbox) Current(ctx context.Context) (*Plan, error) {
	n, err := tb.bean.Lookup(ctx)
	if err != nil {
		return nil, err
	}
	return n.Current(), nil
}

// RequestContext returns the plan in progress as the model reads it, with
// a line on how to keep it up to date; "" when there is none, or when ctx
// has no chat scope.
func (tb *Toolbox) RequestContext(ctx context.Context) (string, error) {
	n, err := tb.bean.Lookup(ctx)
	if errors.Is(err, chat.ErrNotActive) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.plan == nil {
		return "", nil
	}
	if n.text == "" {
		n.text = render(n.plan) + contextGuidance
	}
	return n.text, nil
}

// change runs fn on the notebook of ctx under its lock; when fn changes
// the plan (it returns the plan to report), the revision is counted, the
// Plan event sent, and the plan returned to the model as text.
func (tb *Toolbox) change(ctx context.Context, fn func(n *Notebook) (*Plan, error)) (any, error) {
	n, err := tb.bean.Lookup(ctx)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	p, err := fn(n)
	if err != nil {
		return nil, err
	}
	p.Revision++
	n.text = ""
	if !tb.quiet && chat.Request(ctx) != nil {
		// Sent under the lock: the client gets the changes in order.
		if err := chat.Response(ctx).Event(protocol.EventPlan, p.clone()); err != nil {
			tb.log.WarnContext(ctx, "plan: the Plan event was not sent", "err", err)
		}
	}
	return render(p), nil
}

// enter pushes the nested scope of a subtask set in progress, with
// ScopePerSubtask.
func (tb *Toolbox) enter(ctx context.Context, n *Notebook) error {
	if !tb.scoped {
		return nil
	}
	if err := chat.Push(ctx); err != nil {
		return fmt.Errorf("starting the subtask's scope: %w", err)
	}
	id, err := chat.ID(ctx)
	if err != nil {
		return fmt.Errorf("starting the subtask's scope: %w", err)
	}
	n.scope = id
	return nil
}

// leave pops the nested scope of the subtask in progress, when it is the
// current scope; the subtask's change stands either way.
func (tb *Toolbox) leave(ctx context.Context, n *Notebook) {
	id := n.scope
	if id == "" {
		return
	}
	n.scope = ""
	if cur, err := chat.ID(ctx); err != nil || cur != id {
		tb.log.WarnContext(ctx, "plan: the subtask's scope is not the current one: left as it is", "scope", id)
		return
	}
	if err := chat.Pop(ctx); err != nil {
		tb.log.WarnContext(ctx, "plan: ending the subtask's scope", "scope", id, "err", err)
	}
}

// ruleErr is an error of a tool call that breaks a rule.
func ruleErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrRule, fmt.Sprintf(format, a...))
}

// decode decodes a tool's arguments into v.
func decode(arguments string, v any) error {
	d := json.NewDecoder(strings.NewReader(arguments))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return &ai.ArgumentsError{Err: err}
	}
	return nil
}

// subtaskArgs describe a subtask in the tools' arguments.
type subtaskArgs struct {
	Name            string `json:"name"`
	Description     string `json:"description"`
	ExpectedOutcome string `json:"expected_outcome"`
}

func (a subtaskArgs) subtask(i int) (Subtask, error) {
	s := Subtask{Name: strings.TrimSpace(a.Name), Description: strings.TrimSpace(a.Description), ExpectedOutcome: strings.TrimSpace(a.ExpectedOutcome), State: Todo}
	what := fmt.Sprintf("subtask %d", i)
	if err := checkName(what, s.Name); err != nil {
		return s, err
	}
	if err := checkText(what+"'s description", s.Description); err != nil {
		return s, err
	}
	return s, checkText(what+"'s expected_outcome", s.ExpectedOutcome)
}

func checkName(what, name string) error {
	if name == "" {
		return &ai.ArgumentsError{Err: fmt.Errorf("%s has no name", what)}
	}
	if len(name) > MaxName {
		return &ai.ArgumentsError{Err: fmt.Errorf("%s's name is %d bytes long, more than %d", what, len(name), MaxName)}
	}
	return nil
}

func checkText(what, text string) error {
	if len(text) > MaxText {
		return &ai.ArgumentsError{Err: fmt.Errorf("%s is %d bytes long, more than %d", what, len(text), MaxText)}
	}
	return nil
}

// index checks the subtask index i of p.
func index(p *Plan, i *int) (int, error) {
	if i == nil {
		return 0, &ai.ArgumentsError{Err: errors.New("subtask_idx is missing")}
	}
	if *i < 0 || *i >= len(p.Subtasks) {
		return 0, ruleErr("there is no subtask %d: the plan has subtasks 0 to %d", *i, len(p.Subtasks)-1)
	}
	return *i, nil
}

// current returns the plan in progress of n.
func current(n *Notebook) (*Plan, error) {
	if n.plan == nil {
		return nil, ruleErr("%s", noPlanToolResult)
	}
	return n.plan, nil
}

func (tb *Toolbox) create(ctx context.Context, arguments string) (any, error) {
	var args struct {
		Name            string        `json:"name"`
		Description     string        `json:"description"`
		ExpectedOutcome string        `json:"expected_outcome"`
		Subtasks        []subtaskArgs `json:"subtasks"`
	}
	if err := decode(arguments, &args); err != nil {
		return nil, err
	}
	p := &Plan{Name: strings.TrimSpace(args.Name), Description: strings.TrimSpace(args.Description), ExpectedOutcome: strings.TrimSpace(args.ExpectedOutcome), State: InProgress}
	if err := checkName("the plan", p.Name); err != nil {
		return nil, err
	}
	if err := checkText("the plan's description", p.Description); err != nil {
		return nil, err
	}
	if err := checkText("the plan's expected_outcome", p.ExpectedOutcome); err != nil {
		return nil, err
	}
	if len(args.Subtasks) == 0 {
		return nil, &ai.ArgumentsError{Err: errors.New("a plan needs at least one subtask")}
	}
	if len(args.Subtasks) > tb.max {
		return nil, ruleErr("a plan has at most %d subtasks, not %d: group them", tb.max, len(args.Subtasks))
	}
	for i, a := range args.Subtasks {
		s, err := a.subtask(i)
		if err != nil {
			return nil, err
		}
		p.Subtasks = append(p.Subtasks, s)
	}
	return tb.change(ctx, func(n *Notebook) (*Plan, error) {
		if n.plan != nil {
			return nil, ruleErr("the plan %q is in progress: revise it with %s, or end it with %s before creating another", n.plan.Name, ToolRevise, ToolFinishPlan)
		}
		n.plan = p
		return p, nil
	})
}

func (tb *Toolbox) updateState(ctx context.Context, arguments string) (any, error) {
	var args struct {
		Index *int  `json:"subtask_idx"`
		State State `json:"state"`
	}
	if err := decode(arguments, &args); err != nil {
		return nil, err
	}
	switch args.State {
	case Todo, InProgress, Abandoned:
	case Done:
		return nil, ruleErr("a subtask is done with %s, which records its outcome", ToolFinishTask)
	default:
		return nil, &ai.ArgumentsError{Err: fmt.Errorf("state %q is not todo, in_progress or abandoned", args.State)}
	}
	return tb.change(ctx, func(n *Notebook) (*Plan, error) {
		p, err := current(n)
		if err != nil {
			return nil, err
		}
		i, err := index(p, args.Index)
		if err != nil {
			return nil, err
		}
		s := &p.Subtasks[i]
		switch {
		case s.State.final():
			return nil, ruleErr("subtask %d is %s already: that is final (add a new subtask with %s to do more)", i, s.State, ToolRevise)
		case s.State == args.State:
			return nil, ruleErr("subtask %d is %s already", i, s.State)
		}
		if args.State == InProgress {
			for k := range p.Subtasks {
				if p.Subtasks[k].State == InProgress {
					return nil, ruleErr("subtask %d is in progress: finish it, or set it back to todo, before starting subtask %d", k, i)
				}
			}
		}
		if args.State == InProgress {
			if err := tb.enter(ctx, n); err != nil {
				return nil, err
			}
		} else if s.State == InProgress {
			tb.leave(ctx, n)
		}
		s.State = args.State
		return p, nil
	})
}

func (tb *Toolbox) finishTask(ctx context.Context, arguments string) (any, error) {
	var args struct {
		Index   *int   `json:"subtask_idx"`
		Outcome string `json:"subtask_outcome"`
	}
	if err := decode(arguments, &args); err != nil {
		return nil, err
	}
	outcome := strings.TrimSpace(args.Outcome)
	if outcome == "" {
		return nil, &ai.ArgumentsError{Err: errors.New("subtask_outcome is empty: say what the subtask achieved")}
	}
	if err := checkText("subtask_outcome", outcome); err != nil {
		return nil, err
	}
	return tb.change(ctx, func(n *Notebook) (*Plan, error) {
		p, err := current(n)
		if err != nil {
			return nil, err
		}
		i, err := index(p, args.Index)
		if err != nil {
			return nil, err
		}
		s := &p.Subtasks[i]
		if s.State.final() {
			return nil, ruleErr("subtask %d is %s already", i, s.State)
		}
		if s.State == InProgress {
			tb.leave(ctx, n)
		}
		s.State, s.Outcome = Done, outcome
		return p, nil
	})
}

func (tb *Toolbox) revise(ctx context.Context, arguments string) (any, error) {
	var args struct {
		Index   *int         `json:"subtask_idx"`
		Action  string       `json:"action"`
		Subtask *subtaskArgs `json:"subtask"`
	}
	if err := decode(arguments, &args); err != nil {
		return nil, err
	}
	if args.Index == nil {
		return nil, &ai.ArgumentsError{Err: errors.New("subtask_idx is missing")}
	}
	var sub Subtask
	switch args.Action {
	case "add", "revise":
		if args.Subtask == nil {
			return nil, &ai.ArgumentsError{Err: fmt.Errorf("action %q needs the subtask", args.Action)}
		}
		var err error
		if sub, err = args.Subtask.subtask(*args.Index); err != nil {
			return nil, err
		}
	case "delete":
	default:
		return nil, &ai.ArgumentsError{Err: fmt.Errorf("action %q is not add, revise or delete", args.Action)}
	}
	return tb.change(ctx, func(n *Notebook) (*Plan, error) {
		p, err := current(n)
		if err != nil {
			return nil, err
		}
		if args.Action == "add" {
			i := *args.Index
			if i < 0 || i > len(p.Subtasks) {
				return nil, ruleErr("a subtask is added at 0 to %d, not %d", len(p.Subtasks), i)
			}
			if len(p.Subtasks) >= tb.max {
				return nil, ruleErr("the plan has %d subtasks, the most it may have: revise or delete one instead", tb.max)
			}
			p.Subtasks = append(p.Subtasks[:i], append([]Subtask{sub}, p.Subtasks[i:]...)...)
			return p, nil
		}
		i, err := index(p, args.Index)
		if err != nil {
			return nil, err
		}
		s := &p.Subtasks[i]
		if s.State.final() {
			return nil, ruleErr("subtask %d is %s: a finished subtask is kept as it is", i, s.State)
		}
		if args.Action == "revise" {
			s.Name, s.Description, s.ExpectedOutcome = sub.Name, sub.Description, sub.ExpectedOutcome
			return p, nil
		}
		if len(p.Subtasks) == 1 {
			return nil, ruleErr("subtask 0 is the plan's only one: end the plan with %s instead", ToolFinishPlan)
		}
		if s.State == InProgress {
			tb.leave(ctx, n)
		}
		p.Subtasks = append(p.Subtasks[:i], p.Subtasks[i+1:]...)
		return p, nil
	})
}

func (tb *Toolbox) view(ctx context.Context, arguments string) (any, error) {
	var args struct{}
	if err := decode(arguments, &args); err != nil {
		return nil, err
	}
	n, err := tb.bean.Lookup(ctx)
	if err != nil {
		return nil, err
	}
	p := n.Current()
	if p == nil {
		return noPlanToolResult, nil
	}
	return render(p), nil
}

func (tb *Toolbox) finishPlan(ctx context.Context, arguments string) (any, error) {
	var args struct {
		State   State  `json:"state"`
		Outcome string `json:"outcome"`
	}
	if err := decode(arguments, &args); err != nil {
		return nil, err
	}
	if args.State != Done && args.State != Abandoned {
		return nil, &ai.ArgumentsError{Err: fmt.Errorf("state %q is not done or abandoned", args.State)}
	}
	outcome := strings.TrimSpace(args.Outcome)
	if outcome == "" {
		return nil, &ai.ArgumentsError{Err: errors.New("outcome is empty: say what the plan achieved, or why it is abandoned")}
	}
	if err := checkText("outcome", outcome); err != nil {
		return nil, err
	}
	return tb.change(ctx, func(n *Notebook) (*Plan, error) {
		p, err := current(n)
		if err != nil {
			return nil, err
		}
		if args.State == Done {
			for i, s := range p.Subtasks {
				if !s.State.final() {
					return nil, ruleErr("subtask %d is %s: finish or abandon it before the plan is done (or abandon the plan)", i, s.State)
				}
			}
		}
		tb.leave(ctx, n)
		p.State, p.Outcome = args.State, outcome
		n.plan = nil // the Plan event and the tool's result show it finished
		return p, nil
	})
}

const subtaskSchema = `{"type":"object","properties":{` +
	`"name":{"type":"string","description":"A short name for the subtask."},` +
	`"description":{"type":"string","description":"What to do."},` +
	`"expected_outcome":{"type":"string","description":"What the subtask should produce."}},` +
	`"required":["name"],"additionalProperties":false}`

func (tb *Toolbox) makeTools() []ai.Tool {
	return []ai.Tool{
		{
			Name:        ToolCreate,
			Description: fmt.Sprintf("Creates a plan for a task that takes several steps: its subtasks (at most %d), in the order they are to be done. One plan is in progress at a time; the current plan is shown with every request.", tb.max),
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"name":{"type":"string","description":"A short name for the plan."},` +
				`"description":{"type":"string","description":"The task the plan is for."},` +
				`"expected_outcome":{"type":"string","description":"What the plan should produce."},` +
				`"subtasks":{"type":"array","items":` + subtaskSchema + `}},` +
				`"required":["name","subtasks"],"additionalProperties":false}`),
			Invoke: tb.create,
		},
		{
			Name:        ToolUpdateState,
			Description: "Sets the state of a subtask of the current plan, by its index: in_progress when you start it (one at a time), back to todo, or abandoned. A subtask is done with " + ToolFinishTask + ".",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"subtask_idx":{"type":"integer","description":"The subtask's index, from 0."},` +
				`"state":{"type":"string","enum":["todo","in_progress","abandoned"]}},` +
				`"required":["subtask_idx","state"],"additionalProperties":false}`),
			Invoke: tb.updateState,
		},
		{
			Name:        ToolFinishTask,
			Description: "Marks a subtask of the current plan done, with what it achieved.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"subtask_idx":{"type":"integer","description":"The subtask's index, from 0."},` +
				`"subtask_outcome":{"type":"string","description":"What the subtask achieved."}},` +
				`"required":["subtask_idx","subtask_outcome"],"additionalProperties":false}`),
			Invoke: tb.finishTask,
		},
		{
			Name:        ToolRevise,
			Description: "Revises the current plan: add a subtask at an index, or revise or delete the subtask at an index (finished subtasks are kept as they are).",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"subtask_idx":{"type":"integer","description":"Where to add the subtask, or the index of the subtask to revise or delete."},` +
				`"action":{"type":"string","enum":["add","revise","delete"]},` +
				`"subtask":` + subtaskSchema + `},` +
				`"required":["subtask_idx","action"],"additionalProperties":false}`),
			Invoke: tb.revise,
		},
		{
			Name:        ToolView,
			Description: "Shows the current plan and the state of its subtasks.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Invoke:      tb.view,
		},
		{
			Name:        ToolFinishPlan,
			Description: "Ends the current plan: done (every subtask done or abandoned) or abandoned, with its outcome.",
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"state":{"type":"string","enum":["done","abandoned"]},` +
				`"outcome":{"type":"string","description":"What the plan achieved, or why it is abandoned."}},` +
				`"required":["state","outcome"],"additionalProperties":false}`),
			Invoke: tb.finishPlan,
		},
	}
}
