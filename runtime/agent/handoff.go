package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// EventAgent is the type of the event that tells the client which agent
// answers: its data is an [Event].
const EventAgent = protocol.EventAgent

// Event is the data of an Agent event, sent when a hand-off or a hand-back
// makes another agent answer, before that agent's own events.
type Event struct {
	// Name is the route of the agent that answers now.
	Name string `json:"name"`
	// From is the route of the agent that handed off.
	From string `json:"from"`
	// Back reports a hand-back.
	Back bool `json:"back,omitempty"`
}

// ChatEventType implements chat's event typing: Event is sent as an
// Agent event.
func (Event) ChatEventType() string { return EventAgent }

var (
	// ErrTooManyHandOffs is the error of a hand-off past
	// [Options.MaxHandOffs] in one request: agents handing off in a cycle.
	ErrTooManyHandOffs = errors.New("too many hand-offs in one request")
	// ErrNothingToHandBack is the error of [Handoffs.HandBack] when no
	// agent handed off to the current one.
	ErrNothingToHandBack = errors.New("no agent to hand back to")
	// ErrNoRequest is the error of a hand-off outside a route's request.
	ErrNoRequest = errors.New("a hand-off needs a route's request")
)

// Options configures a [Handoffs]. A nil *Options, like the zero value,
// gives the defaults.
type Options struct {
	// Name names the durable bean the state is kept in; "" means
	// "github.com/chatscopes/chatgen/runtime/agent.Handoffs". Two
	// Handoffs of one router need different names.
	Name string
	// MaxHandOffs bounds the hand-offs (and hand-backs) of one request;
	// the one past it fails with [ErrTooManyHandOffs]. 0 means 8.
	MaxHandOffs int
	// MaxHistory bounds the records [Handoffs.History] keeps, the oldest
	// dropped first; 0 means 100.
	MaxHistory int
	// MaxTurns bounds the turns a hand-off gives ([All]) or summarises
	// ([Summary]): the last ones are kept. What an agent was given is in
	// what it sees, and so in what it hands on: the bound keeps inputs
	// from growing over hand-offs back and forth. 0 means 50.
	MaxTurns int
}

// Handoffs hands conversations from agent to agent. Make one per router
// with [New]; put its [Handoffs.ModelHook] in the ai.Config of each agent
// (the services whose routes it hands to and from).
type Handoffs struct {
	bean       *chat.Bean[*state]
	max        int
	maxHistory int
	maxTurns   int
}

// New returns a Handoffs. opts may be nil.
func New(opts *Options) *Handoffs {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "github.com/chatscopes/chatgen/runtime/agent.Handoffs"
	}
	if o.MaxHandOffs <= 0 {
		o.MaxHandOffs = 8
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = 100
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = 50
	}
	return &Handoffs{
		bean: chat.NewBean(o.Name, &chat.BeanOptions{Durable: true}, func(context.Context) (*state, error) {
			return &state{}, nil
		}),
		max:        o.MaxHandOffs,
		maxHistory: o.MaxHistory,
		maxTurns:   o.MaxTurns,
	}
}

// HandOffOptions configures one hand-off. A nil *HandOffOptions, like the
// zero value, gives the agent handed to the whole conversation so far.
type HandOffOptions struct {
	// Input is what the agent handed to sees of the conversation so far;
	// the zero Input is [All].
	Input Input
}

// A Record is one hand-off of a conversation's history.
type Record struct {
	// From and To are the routes of the agents.
	From string `json:"from"`
	To   string `json:"to"`
	// Back reports a hand-back.
	Back bool `json:"back,omitempty"`
	// Input names the input filter: "none", "all", "last 2 turns",
	// "summary".
	Input string `json:"input"`
	// Turns is the number of turns of the conversation the agent was
	// given (the turns summarised, for a summary).
	Turns int `json:"turns"`
	// Usage is the token usage of the summary's model call; zero for the
	// other filters.
	Usage ai.Usage `json:"usage,omitzero"`
}

// state is the durable state of a conversation's hand-offs. Its exported
// fields are saved with the conversation.
type state struct {
	mu sync.Mutex

	// Inputs holds, by route, what the agent was given at its last
	// hand-off.
	Inputs map[string]*given `json:"inputs,omitempty"`
	// View is the conversation as the last model call saw it (system
	// messages left out), with its answer.
	View []Message `json:"view,omitempty"`
	// Back is the hand-back chain: the routes that handed off, the last
	// one last.
	Back []string `json:"back,omitempty"`
	// History is the hand-offs, oldest first.
	History []Record `json:"history,omitempty"`

	// prompt and reply are the last model call's, not converted into
	// View yet (see view): most calls are never handed on.
	prompt  []llms.MessageContent
	reply   *Message
	viewReq *chat.RouteRequest // the request View was recorded in
	req     *chat.RouteRequest // the request hops counts in
	hops    int
	path    []string // the agents of req's hand-offs
}

// given is what an agent was handed.
type given struct {
	// Agent is the service and method ("import/path.Type.Method") whose
	// model calls get the input, bound at the first model call of the
	// hand-off; "" until then.
	Agent    string    `json:"agent,omitempty"`
	Summary  string    `json:"summary,omitempty"`
	Messages []Message `json:"messages,omitempty"`
}

// activeKey marks the context of a hand-off's execution with the route
// handed to.
type activeKey struct{}

// HandOff makes the agent of route to answer the current request's user
// message now, in this request (its events go to the client as any
// route's), and the requests that follow: to becomes the current route.
// Before it runs, the client gets an Agent event. opts may be nil.
//
// Call it from a route, or from a tool of the agent answering now (mark
// the tool immediate, so that the agent's turn ends with it). A route the
// router does not serve fails at once with an error matching
// *chat.UnknownRouteError, and one the principal may not use fails with
// chat.ErrForbidden; the conversation stays where it was. A
// hand-off past [Options.MaxHandOffs] in one request fails with
// [ErrTooManyHandOffs], naming the agents' path.
func (h *Handoffs) HandOff(ctx context.Context, to string, opts *HandOffOptions) error {
	return h.handOff(ctx, to, opts, false)
}

// HandBack hands the conversation back to the agent that handed off to
// the current one, as [Handoffs.HandOff] does: that agent answers the
// current message, seeing what opts chooses. Without one it fails with
// [ErrNothingToHandBack].
func (h *Handoffs) HandBack(ctx context.Context, opts *HandOffOptions) error {
	st, err := h.bean.Lookup(ctx)
	if err != nil {
		return fmt.Errorf("agent: hand back: %w", err)
	}
	st.mu.Lock()
	n := len(st.Back)
	var to string
	if n > 0 {
		to = st.Back[n-1]
	}
	st.mu.Unlock()
	if n == 0 {
		return fmt.Errorf("agent: hand back: %w", ErrNothingToHandBack)
	}
	return h.handOff(ctx, to, opts, true)
}

func (h *Handoffs) handOff(ctx context.Context, to string, opts *HandOffOptions, back bool) error {
	var in Input
	if opts != nil {
		in = opts.Input
	}
	req := chat.Request(ctx)
	if req == nil {
		return fmt.Errorf("agent: hand-off to %q: %w", to, ErrNoRequest)
	}
	from, err := chat.CurrentRoute(ctx)
	if err != nil {
		return fmt.Errorf("agent: hand-off to %q: %w", to, err)
	}
	st, err := h.bean.Lookup(ctx)
	if err != nil {
		return fmt.Errorf("agent: hand-off to %q: %w", to, err)
	}

	st.mu.Lock()
	if st.req != req {
		st.req, st.hops, st.path = req, 0, []string{from}
	}
	if st.hops >= h.max {
		path := strings.Join(append(st.path, to), " → ")
		st.mu.Unlock()
		return fmt.Errorf("agent: hand-off from %q to %q: %w (%d: %s)", from, to, ErrTooManyHandOffs, h.max, path)
	}
	source := lastTurns(st.source(req), h.maxTurns)
	st.mu.Unlock()

	// The route is checked (and set) before anything else happens.
	if err := chat.Route(ctx, to); err != nil {
		return fmt.Errorf("agent: hand-off from %q: %w", from, err)
	}
	g, rec, err := in.apply(ctx, source)
	if err != nil {
		if rerr := chat.Route(ctx, from); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return fmt.Errorf("agent: hand-off from %q to %q: %w", from, to, err)
	}
	rec.From, rec.To, rec.Back = from, to, back
	// A summary's model call counts in the usage of the turn whose tool
	// hands off (none when a route does).
	ai.AddUsage(ctx, rec.Usage)

	st.mu.Lock()
	undo := st.snapshot(to)
	st.hops++
	st.path = append(st.path, to)
	if st.Inputs == nil {
		st.Inputs = map[string]*given{}
	}
	st.Inputs[to] = g
	if back {
		if n := len(st.Back); n > 0 && st.Back[n-1] == to {
			st.Back = st.Back[:n-1]
		}
	} else {
		st.Back = append(st.Back, from)
		if len(st.Back) > h.maxHistory {
			st.Back = st.Back[len(st.Back)-h.maxHistory:]
		}
	}
	st.History = append(st.History, rec)
	if len(st.History) > h.maxHistory {
		st.History = st.History[len(st.History)-h.maxHistory:]
	}
	st.mu.Unlock()

	if err := chat.Response(ctx).Event(EventAgent, Event{Name: to, From: from, Back: back}); err != nil {
		return fmt.Errorf("agent: hand-off from %q to %q: %w", from, to, err)
	}
	err = chat.ExecuteRoute(context.WithValue(ctx, activeKey{}, to), to)
	var inner *refusedError
	if errors.Is(err, chat.ErrForbidden) && !errors.As(err, &inner) {
		// The principal may not use the route: the hand-off did not
		// happen, and the conversation stays where it was.
		st.mu.Lock()
		st.restore(undo)
		st.mu.Unlock()
		if rerr := chat.Route(ctx, from); rerr != nil {
			return errors.Join(err, rerr)
		}
		return &refusedError{err: fmt.Errorf("agent: hand-off from %q to %q: %w", from, to, err)}
	}
	return err
}

// A refusedError is the error of a hand-off to a route the principal may
// not use, undone: a hand-off that led to it keeps its own.
type refusedError struct{ err error }

func (e *refusedError) Error() string { return e.err.Error() }
func (e *refusedError) Unwrap() error { return e.err }

// undo is what a hand-off to a route changes of a state.
type undo struct {
	to      string
	input   *given
	had     bool
	back    []string
	history []Record
}

// snapshot returns what a hand-off to to changes. st.mu is held.
func (st *state) snapshot(to string) undo {
	g, ok := st.Inputs[to]
	return undo{to: to, input: g, had: ok, back: slices.Clone(st.Back), history: slices.Clone(st.History)}
}

// restore undoes a hand-off. st.mu is held.
func (st *state) restore(u undo) {
	if u.had {
		st.Inputs[u.to] = u.input
	} else {
		delete(st.Inputs, u.to)
	}
	st.Back, st.History = u.back, u.history
	st.hops--
	st.path = st.path[:len(st.path)-1]
}

// History returns the hand-offs of the conversation in ctx, oldest first.
func (h *Handoffs) History(ctx context.Context) ([]Record, error) {
	st, err := h.bean.Lookup(ctx)
	if err != nil {
		return nil, fmt.Errorf("agent: history: %w", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]Record(nil), st.History...), nil
}

// source returns the conversation so far, as the agent answering now saw
// it: the view of the last model call, without the current request's
// user message and what followed it when that call belongs to this
// request (a hand-off from a tool). st.mu is held.
func (st *state) source(req *chat.RouteRequest) []Message {
	v := st.view()
	if st.viewReq == req {
		for i := len(v) - 1; i >= 0; i-- {
			if v[i].Role == roleHuman {
				v = v[:i]
				break
			}
		}
	}
	return append([]Message(nil), v...)
}

// view returns View, converting the last model call's prompt and reply
// first. st.mu is held.
func (st *state) view() []Message {
	if st.prompt != nil {
		st.View = fromLLMs(st.prompt)
		if st.reply != nil {
			st.View = append(st.View, *st.reply)
		}
		st.prompt, st.reply = nil, nil
	}
	return st.View
}

// MarshalJSON implements json.Marshaler: the durable state, its view
// converted.
func (st *state) MarshalJSON() ([]byte, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.view()
	type saved state // without the method
	return json.Marshal((*saved)(st))
}

// ModelHook returns the hook to put in the ai.Config.ModelHooks of every
// agent: it gives a model call of the agent handed to the input of its
// hand-off, after the system message (in every model call of that agent
// while it stays the conversation's route), and records what each model
// call saw and answered, the source of the next hand-off's input.
func (h *Handoffs) ModelHook() ai.ModelHook {
	return func(next ai.ModelHandler) ai.ModelHandler {
		return func(ctx context.Context, call *ai.ModelCall) (*llms.ContentResponse, error) {
			req := chat.Request(ctx)
			if req == nil {
				return next(ctx, call)
			}
			st, err := h.bean.Lookup(ctx)
			if err != nil {
				return next(ctx, call)
			}
			route, _ := ctx.Value(activeKey{}).(string)
			fresh := route != ""
			if !fresh {
				route, _ = chat.CurrentRoute(ctx)
			}
			agent := call.Service + "." + call.Method
			st.mu.Lock()
			g := st.Inputs[route]
			if g != nil && fresh && g.Agent == "" {
				g.Agent = agent
			}
			if g != nil && g.Agent == agent {
				call.Messages = g.insert(call.Messages)
			}
			st.mu.Unlock()
			resp, err := next(ctx, call)
			if err != nil {
				return resp, err
			}
			var reply *Message
			if resp != nil && len(resp.Choices) > 0 {
				a := answer(resp.Choices[0])
				reply = &a
			}
			st.mu.Lock()
			st.prompt, st.reply, st.viewReq = slices.Clip(call.Messages), reply, req
			st.mu.Unlock()
			return resp, nil
		}
	}
}

// insert returns msgs with g after their leading system message: a
// summary joins the system message; messages follow it.
func (g *given) insert(msgs []llms.MessageContent) []llms.MessageContent {
	if g.Summary == "" && len(g.Messages) == 0 {
		return msgs
	}
	sys := 0
	if len(msgs) > 0 && msgs[0].Role == llms.ChatMessageTypeSystem {
		sys = 1
	}
	out := make([]llms.MessageContent, 0, len(msgs)+len(g.Messages)+1)
	if g.Summary != "" {
		text := summaryPreamble + g.Summary
		if sys == 1 {
			parts := append(append([]llms.ContentPart(nil), msgs[0].Parts...), llms.TextContent{Text: "\n\n" + text})
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeSystem, Parts: parts})
		} else {
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, text))
		}
	} else if sys == 1 {
		out = append(out, msgs[0])
	}
	out = append(out, toLLMs(g.Messages)...)
	return append(out, msgs[sys:]...)
}

// summaryPreamble introduces a hand-off's summary in the system message.
const summaryPreamble = "The conversation so far, summarised: "
