// Package subagent offers an AI service to another as a tool: an agent as
// a tool, as AgentScope's SubAgentTool and ADK's AgentTool do.
//
// The tool's calls run the sub-agent (any func, typically a //chat:ai
// method) in a session of its own: a sub-conversation with its own chat
// memory, owned by the chat scope of the calling turn and keyed by an id
// the model is told. The model passes that id back ("session_id") to
// continue the sub-conversation, or leaves it out to start a new one.
// Sessions are capped in number and idle time per scope, and end with the
// scope: every memory they hold is deleted then.
//
// The sub-agent's turns are linked to the calling turn (see ai.WithAgent):
// their model calls count against the top-level turn's budget
// (ai.Config.TurnBudget), their usage adds up into the calling turn's
// Reply.Usage, their spans nest under the tool call's span, and their
// steps reach the client as SubAgent events tagged with the agent and the
// session (docs/protocol.md). Calls of several sub-agent tools of one
// model reply run concurrently (ai.Tool.Concurrent, bounded by
// ai.Config.AgentConcurrency). A sub-agent that fails, panics, times out,
// loops past its model calls or calls a tool it does not have fails its
// tool call only: the calling model is told why, and neither memory keeps
// a partial turn.
//
// A tool call inside the sub-agent that waits for the user's confirmation
// or a client tool's result pauses the whole turn (see
// ai.ConfirmationPending): the session remembers the call it paused on,
// and the answer, in the next request, resumes it there (ai.AgentCall),
// then the caller. A scope's sessions are a per-chat durable bean, so a
// durable conversation keeps them across detaches and restarts; and each
// call that completes is checkpointed (chatimpl.Checkpoint), so that after a
// crash the resent request gets the answers of the calls that had
// completed without running them again.
package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// Defaults of [Options].
const (
	// DefaultMaxSessions is how many sessions of one sub-agent a scope
	// keeps when Options.MaxSessions is 0.
	DefaultMaxSessions = 8
	// DefaultIdleTimeout is how long a session may go unused before it
	// ends, when Options.IdleTimeout is 0.
	DefaultIdleTimeout = 30 * time.Minute
)

// Errors the tool's calls fail with, for errors.Is on the
// ai.ToolExecution's Err; the model is told the error's text.
var (
	// ErrUnknownSession: the model passed a session_id the scope has
	// not (any more): it never existed, ended idle or was evicted.
	ErrUnknownSession = errors.New("unknown session_id")
	// ErrTooManySessions: the scope holds Options.MaxSessions sessions of
	// the sub-agent, all of them running.
	ErrTooManySessions = errors.New("too many sub-agent sessions")
	// ErrTimeout: the sub-agent ran longer than Options.Timeout.
	ErrTimeout = errors.New("sub-agent timed out")
	// ErrPanicked: the sub-agent panicked.
	ErrPanicked = errors.New("sub-agent panicked")
	// ErrNoScope: the tool was called outside a chat scope, which owns
	// the sessions.
	ErrNoScope = errors.New("sub-agent tool called outside a chat scope")
)

// Func runs the sub-agent on task, in ctx, and returns its answer: call
// the //chat:ai method of the sub-agent with ctx (its chat-scoped memory
// is then the session's).
type Func func(ctx context.Context, task string) (string, error)

// Options configure a sub-agent tool. A nil *Options gives the defaults.
type Options struct {
	// Description tells the calling model what the sub-agent does; ""
	// means a generic one naming the agent.
	Description string
	// MaxSessions is how many sessions of the sub-agent one scope keeps;
	// at the cap, a new session evicts the one unused the longest (its
	// memory is deleted). 0 means [DefaultMaxSessions].
	MaxSessions int
	// IdleTimeout ends a session unused for that long (checked on each
	// call of the tool, so no timer outlives anything). 0 means
	// [DefaultIdleTimeout].
	IdleTimeout time.Duration
	// Timeout bounds each call; 0 means none but the turn's.
	Timeout time.Duration
	// MaxDepth bounds how deeply sub-agents nest (see ai.AgentRun); 0
	// means ai.DefaultMaxAgentDepth.
	MaxDepth int
	// Now is the clock of the idle timeout; nil means time.Now.
	Now func() time.Time
	// Logger logs the sessions that end; nil means slog.Default().
	Logger *slog.Logger
}

// Tool is a sub-agent offered as a tool. It is an ai.ToolSource (put it in
// the calling service's ai.Config.ToolSources) and an ai.ToolLister; its
// [Tool.Tool] may also go in a Method's Tools. It is safe for concurrent
// use.
type Tool struct {
	name string
	run  Func
	opts Options
	tool ai.Tool
	list []ai.Tool
	// bean holds the sessions of each scope: a durable per-chat bean, so
	// that a durable conversation saves them with its scopes.
	bean *chat.Bean[*sessions]
}

var (
	_ ai.ToolSource = (*Tool)(nil)
	_ ai.ToolLister = (*Tool)(nil)
)

// New returns the tool, named name (the name the model calls it by and
// the agent its events are tagged with), that runs run.
func New(name string, run Func, opts *Options) *Tool {
	return newTool(name, BeanPrefix+name, run, opts)
}

// newTool is [New] with the name of the sessions' bean.
func newTool(name, beanName string, run Func, opts *Options) *Tool {
	t := &Tool{name: name, run: run}
	t.bean = chat.NewBean(beanName, &chat.BeanOptions{Kind: chat.KindPerChat, Durable: true}, t.newSessions)
	if opts != nil {
		t.opts = *opts
	}
	if t.opts.MaxSessions <= 0 {
		t.opts.MaxSessions = DefaultMaxSessions
	}
	if t.opts.IdleTimeout <= 0 {
		t.opts.IdleTimeout = DefaultIdleTimeout
	}
	if t.opts.Now == nil {
		t.opts.Now = time.Now
	}
	desc := t.opts.Description
	if desc == "" {
		desc = "Ask the " + name + " agent to do a task."
	}
	t.tool = ai.Tool{
		Name:        name,
		Description: desc + " It answers with its result and a session_id: pass the session_id again to continue the same conversation with the agent, or leave it out to start a new one.",
		Parameters:  json.RawMessage(parameters),
		Invoke:      t.invoke,
		Concurrent:  true,
	}
	t.list = []ai.Tool{t.tool}
	return t
}

// Of returns the tool, named name, that runs the AI service of bean: each
// call looks the service up in the session's context and asks answer,
// its method that answers a task (a method expression such as
// Researcher.Research). It is [New] for a //chat:ai service: the code
// chatgen generates for a //chat:agent method calls it, so that AI
// services whose //chat:tools name the service offer it as a tool. The
// bean of its sessions is named after the service's bean as well as the
// tool (BeanPrefix + the bean's name + ":" + name), so that agents of
// one name in two packages keep their sessions apart.
func Of[T any](name string, bean *chat.Bean[T], answer func(T, context.Context, string) (string, error), opts *Options) *Tool {
	return newTool(name, BeanPrefix+bean.Name()+":"+name, func(ctx context.Context, task string) (string, error) {
		svc, err := bean.Lookup(ctx)
		if err != nil {
			return "", err
		}
		return answer(svc, ctx, task)
	}, opts)
}

const parameters = `{"type":"object","properties":{` +
	`"task":{"type":"string","description":"What the agent is to do, with everything it needs to know."},` +
	`"session_id":{"type":"string","description":"The session_id of an earlier answer of this agent, to continue that conversation; leave it out to start a new one."}},` +
	`"required":["task"]}`

// Name implements ai.ToolSource.
func (t *Tool) Name() string { return "sub-agent " + strconv.Quote(t.name) }

// Tools implements ai.ToolSource: the one tool.
func (t *Tool) Tools(context.Context) ([]ai.Tool, error) { return t.list, nil }

// ListTools implements ai.ToolLister.
func (t *Tool) ListTools() []ai.Tool { return t.list }

// Tool returns the tool, for a Method's Tools.
func (t *Tool) Tool() ai.Tool { return t.tool }

// Answer is the tool's result: what the calling model is told.
type Answer struct {
	// SessionID names the session the answer comes from.
	SessionID string `json:"session_id"`
	// Answer is the sub-agent's answer.
	Answer string `json:"answer"`
}

// BeanPrefix prefixes the name of the durable bean that holds the
// sessions of a sub-agent tool in each scope: BeanPrefix + the tool's
// name ([Of] adds the service's bean name). Tools of [New] of one name
// share it: give each sub-agent a name of its own.
const BeanPrefix = "github.com/chatscopes/chatgen/runtime/agent/subagent.sessions:"

// Sessions returns the ids of the sessions of the sub-agent the current
// scope of ctx holds, oldest first.
func (t *Tool) Sessions(ctx context.Context) []string {
	reg, err := t.bean.Lookup(ctx)
	if err != nil {
		return nil
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	ids := make([]string, 0, len(reg.byID))
	for _, s := range reg.order {
		ids = append(ids, s.id)
	}
	return ids
}

func (t *Tool) invoke(ctx context.Context, arguments string) (any, error) {
	a, err := decodeArgs(arguments)
	if err != nil {
		return nil, &ai.ArgumentsError{Err: err}
	}
	if strings.TrimSpace(a.Task) == "" {
		return nil, &ai.ArgumentsError{Err: errors.New(`"task" is required`)}
	}
	scope, err := chat.ID(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoScope, err)
	}
	reg, err := t.registry(ctx, scope)
	if err != nil {
		return nil, err
	}
	callID, resumed := ai.AgentCall(ctx)
	if !resumed {
		if ans, ok := reg.replayed(ctx, a); ok {
			// A call the interrupted request completed: its answer, again.
			t.checkpoint(ctx, reg)
			return ans, nil
		}
	}
	var s *session
	var ended []*session
	if resumed {
		s, err = reg.acquirePaused(callID, t.opts.Now())
	} else {
		s, ended, err = reg.acquire(a.SessionID, t.opts.Now())
	}
	t.end(ctx, ended)
	if err != nil {
		return nil, err
	}
	defer reg.releaseSession(s, t.opts.Now)
	actx, err := ai.WithAgent(ctx, &ai.AgentRun{Name: t.name, Session: s.id, Owner: s, MaxDepth: t.opts.MaxDepth})
	if err != nil {
		return nil, err
	}
	if t.opts.Timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(actx, t.opts.Timeout, errTimeout)
		defer cancel()
	}
	answer, err := t.call(actx, a.Task)
	if err != nil && errors.Is(err, ai.ErrConfirmationRequired) {
		// A tool call of the sub-agent waits (an *ai.ConfirmationPending):
		// the session stays paused on this call, which the turn resumes
		// (ai.AgentCall).
		reg.setPaused(s, callID)
		return nil, fmt.Errorf("sub-agent %q (session %s) paused: %w", t.name, s.id, err)
	}
	if err != nil && resumed && isBadRequest(err) {
		return nil, err // the answer does not fit: the session stays paused
	}
	reg.setPaused(s, "")
	if err != nil {
		if context.Cause(actx) == errTimeout && ctx.Err() == nil {
			return nil, fmt.Errorf("%w after %v (session %s): %w", ErrTimeout, t.opts.Timeout, s.id, err)
		}
		return nil, fmt.Errorf("sub-agent %q (session %s) failed: %w", t.name, s.id, err)
	}
	ans := Answer{SessionID: s.id, Answer: answer}
	if reg.complete(ctx, a, ans) {
		t.checkpoint(ctx, reg)
	}
	return ans, nil
}

// checkpoint saves the durable conversation of ctx with the calls of its
// request that completed, so that a resend after a crash replays them
// (see chatimpl.Checkpoint).
func (t *Tool) checkpoint(ctx context.Context, reg *sessions) {
	reg.cpMu.Lock()
	defer reg.cpMu.Unlock()
	reg.mu.Lock()
	raw, err := json.Marshal(reg.done)
	reg.mu.Unlock()
	if err == nil {
		err = chatimpl.Checkpoint(ctx, reg.journalKey(), raw)
	}
	if err != nil {
		t.log().WarnContext(ctx, "subagent: checkpointing a completed call", "agent", t.name, "err", err)
	}
}

var errTimeout = errors.New("sub-agent timeout")

// isBadRequest reports whether err is a *chat.BadRequestError.
func isBadRequest(err error) bool {
	var bad *chat.BadRequestError
	return errors.As(err, &bad)
}

// call runs the sub-agent, recovering a panic.
func (t *Tool) call(ctx context.Context, task string) (answer string, err error) {
	defer func() {
		if v := recover(); v != nil {
			t.log().ErrorContext(ctx, "subagent: the sub-agent panicked", "agent", t.name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			answer, err = "", fmt.Errorf("%w: %v", ErrPanicked, v)
		}
	}()
	return t.run(ctx, task)
}

func (t *Tool) log() *slog.Logger {
	if t.opts.Logger != nil {
		return t.opts.Logger
	}
	return slog.Default()
}

// newSessions makes the sessions of the current scope of ctx: the bean's
// constructor.
func (t *Tool) newSessions(ctx context.Context) (*sessions, error) {
	scope, err := chat.ID(ctx)
	if err != nil {
		return nil, err
	}
	return &sessions{tool: t, scope: scope, byID: make(map[string]*session)}, nil
}

// registry returns the sessions of the scope (restored from its saved
// state in a resumed durable conversation), attached to the scope on
// first use.
func (t *Tool) registry(ctx context.Context, scope string) (*sessions, error) {
	reg, err := t.bean.Lookup(ctx)
	if err != nil {
		return nil, fmt.Errorf("sub-agent %q: its sessions: %w", t.name, err)
	}
	if reg.scope != scope {
		return nil, fmt.Errorf("sub-agent %q: the current scope changed to %s: %w", t.name, reg.scope, chat.ErrNotActive)
	}
	reg.mu.Lock()
	attached := reg.attached
	reg.attached = true
	reg.mu.Unlock()
	if attached {
		return reg, nil
	}
	if _, err := chat.AttachMemory(ctx, "subagent:"+t.name, reg); err != nil {
		reg.mu.Lock()
		reg.attached = false
		reg.mu.Unlock()
		return nil, fmt.Errorf("sub-agent %q: attaching its sessions to the scope: %w", t.name, err)
	}
	return reg, nil
}

// end deletes the memories of the ended sessions.
func (t *Tool) end(ctx context.Context, ended []*session) {
	for _, s := range ended {
		if err := s.DeleteMemory(ctx); err != nil {
			t.log().WarnContext(ctx, "subagent: deleting an ended session's memory", "agent", t.name, "session", s.id, "err", err)
		}
	}
}

// sessions are the sessions of one sub-agent in one scope: the value of
// the tool's per-chat durable bean (saved with a durable conversation's
// scope, as JSON) and the chatimpl.ScopedMemory attached to the scope, which
// clears or deletes them all with it.
type sessions struct {
	tool  *Tool
	scope string

	cpMu sync.Mutex // orders the checkpoints of the tool's calls

	mu       sync.Mutex
	next     int
	byID     map[string]*session
	order    []*session // oldest first
	ended    bool
	attached bool // attached to the scope

	// The calls of the current request that completed (done), and those
	// an interrupted request completed that it has not replayed yet.
	req    *chat.RouteRequest
	done   []completed
	replay []completed
}

// completed is a sub-agent call that completed in a request: its
// arguments and its answer.
type completed struct {
	Task      string `json:"task"`
	SessionID string `json:"session_id,omitempty"` // the model's argument
	Answer    Answer `json:"answer"`
}

// journalKey is the key of the record of the calls the scope's current
// request completed (chatimpl.Checkpoint).
func (r *sessions) journalKey() string { return "subagent:" + r.tool.name + "@" + r.scope }

// request makes the request of ctx the current one, forgetting the calls
// of the one before, and reading those of an interrupted one. r.mu is
// held.
func (r *sessions) request(ctx context.Context) {
	req := chat.Request(ctx)
	if req == r.req {
		return
	}
	r.req, r.done, r.replay = req, nil, nil
	if raw := chatimpl.Interrupted(ctx, r.journalKey()); raw != nil {
		if err := json.Unmarshal(raw, &r.replay); err != nil {
			r.tool.log().WarnContext(ctx, "subagent: the record of an interrupted request does not decode: its calls run again", "agent", r.tool.name, "err", err)
		}
	}
}

// replayed returns the answer of a call like a's that the interrupted
// request completed, once; its session is used again.
func (r *sessions) replayed(ctx context.Context, a args) (Answer, bool) {
	if !chatimpl.Durable(ctx) {
		return Answer{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.request(ctx)
	i := slices.IndexFunc(r.replay, func(c completed) bool { return c.Task == a.Task && c.SessionID == a.SessionID })
	if i < 0 {
		return Answer{}, false
	}
	c := r.replay[i]
	r.replay = slices.Delete(r.replay, i, i+1)
	r.done = append(r.done, c)
	if s := r.byID[c.Answer.SessionID]; s != nil {
		s.last = r.tool.opts.Now()
		r.touch(s)
	}
	return c.Answer, true
}

// complete records a call of the request of ctx that completed, and
// reports whether the conversation is durable (the record is to be
// checkpointed).
func (r *sessions) complete(ctx context.Context, a args, ans Answer) bool {
	if !chatimpl.Durable(ctx) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.request(ctx)
	r.done = append(r.done, completed{Task: a.Task, SessionID: a.SessionID, Answer: ans})
	return true
}

// setPaused records that s paused on the tool call id ("": it did not).
func (r *sessions) setPaused(s *session, id string) {
	r.mu.Lock()
	s.paused = id
	r.mu.Unlock()
}

// acquirePaused returns the session that paused on the tool call id,
// marked busy.
func (r *sessions) acquirePaused(id string, now time.Time) (*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil, fmt.Errorf("sub-agent %q: %w: its scope ended", r.tool.name, chat.ErrNotActive)
	}
	i := slices.IndexFunc(r.order, func(s *session) bool { return s.paused == id })
	if id == "" || i < 0 {
		return nil, fmt.Errorf("%w: no session of sub-agent %q paused on the tool call %q", ErrUnknownSession, r.tool.name, id)
	}
	s := r.order[i]
	s.busy++
	r.touch(s)
	return s, nil
}

// savedSessions is the saved form of sessions.
type savedSessions struct {
	Next     int            `json:"next"`
	Sessions []savedSession `json:"sessions,omitempty"` // oldest first
}

type savedSession struct {
	ID     string    `json:"id"`
	Last   time.Time `json:"last"`
	Paused string    `json:"paused,omitempty"` // the tool call it paused on
}

// MarshalJSON saves the sessions (the bean's state).
func (r *sessions) MarshalJSON() ([]byte, error) {
	r.mu.Lock()
	out := savedSessions{Next: r.next, Sessions: make([]savedSession, len(r.order))}
	for i, s := range r.order {
		out.Sessions[i] = savedSession{ID: s.id, Last: s.last, Paused: s.paused}
	}
	r.mu.Unlock()
	return json.Marshal(out)
}

// UnmarshalJSON restores the sessions saved by MarshalJSON, into a value
// newSessions made.
func (r *sessions) UnmarshalJSON(b []byte) error {
	var in savedSessions
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next = in.Next
	for _, ss := range in.Sessions {
		if ss.ID == "" || r.byID[ss.ID] != nil {
			return fmt.Errorf("sub-agent %q: a saved session id is empty or repeated: %q", r.tool.name, ss.ID)
		}
		s := &session{id: ss.ID, owner: r.scope + "/" + ss.ID, last: ss.Last, paused: ss.Paused}
		r.byID[s.id] = s
		r.order = append(r.order, s)
	}
	return nil
}

var _ chatimpl.ReleasableMemory = (*sessions)(nil)

// acquire returns the session id names (a new one when id is ""),
// marked busy, and the sessions that ended meanwhile (idle, or evicted
// for the new one), whose memories the caller deletes.
func (r *sessions) acquire(id string, now time.Time) (*session, []*session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil, nil, fmt.Errorf("sub-agent %q: %w: its scope ended", r.tool.name, chat.ErrNotActive)
	}
	var ended []*session
	for i := 0; i < len(r.order); {
		if s := r.order[i]; s.busy == 0 && now.Sub(s.last) >= r.tool.opts.IdleTimeout && s.id != id {
			ended = append(ended, r.drop(s))
			continue
		}
		i++
	}
	if id != "" {
		s := r.byID[id]
		if s == nil {
			known := "there are none; leave session_id out to start one"
			if len(r.order) > 0 {
				ids := make([]string, len(r.order))
				for i, s := range r.order {
					ids[i] = s.id
				}
				known = "the sessions are " + strings.Join(ids, ", ") + "; leave session_id out to start a new one"
			}
			return nil, ended, fmt.Errorf("%w %q of sub-agent %q: %s", ErrUnknownSession, id, r.tool.name, known)
		}
		s.busy++
		r.touch(s)
		return s, ended, nil
	}
	if len(r.order) >= r.tool.opts.MaxSessions {
		i := slices.IndexFunc(r.order, func(s *session) bool { return s.busy == 0 })
		if i < 0 {
			return nil, ended, fmt.Errorf("%w: %q has %d sessions, all running", ErrTooManySessions, r.tool.name, len(r.order))
		}
		ended = append(ended, r.drop(r.order[i]))
	}
	r.next++
	s := &session{id: r.tool.name + "-" + strconv.Itoa(r.next), busy: 1}
	s.owner = r.scope + "/" + s.id
	r.byID[s.id] = s
	r.order = append(r.order, s)
	return s, ended, nil
}

// touch moves s to the end of the order (most recently used). r.mu is
// held.
func (r *sessions) touch(s *session) {
	if i := slices.Index(r.order, s); i >= 0 {
		r.order = append(slices.Delete(r.order, i, i+1), s)
	}
}

// drop removes s from r. r.mu is held.
func (r *sessions) drop(s *session) *session {
	delete(r.byID, s.id)
	if i := slices.Index(r.order, s); i >= 0 {
		r.order = slices.Delete(r.order, i, i+1)
	}
	return s
}

// releaseSession ends a call on s.
func (r *sessions) releaseSession(s *session, now func() time.Time) {
	r.mu.Lock()
	s.busy--
	s.last = now()
	r.mu.Unlock()
}

// ClearMemory implements chatimpl.ScopedMemory: a wipe of the scope clears
// every session's memory (the sessions stay).
func (r *sessions) ClearMemory(ctx context.Context) error {
	r.mu.Lock()
	all := slices.Clone(r.order)
	r.mu.Unlock()
	var errs []error
	for _, s := range all {
		errs = append(errs, s.ClearMemory(ctx))
	}
	return errors.Join(errs...)
}

// DeleteMemory implements chatimpl.ScopedMemory: the scope ended, and with it
// every session.
func (r *sessions) DeleteMemory(ctx context.Context) error {
	return r.end(ctx, (*session).DeleteMemory)
}

// ReleaseMemory implements chatimpl.ReleasableMemory: the scope left the
// process without ending (a durable conversation detached, taken over
// elsewhere or rolled back). The sessions are part of its saved state
// (the bean), and their memories are kept in the store: they are only
// released here, and the sessions go on where the conversation is resumed.
func (r *sessions) ReleaseMemory(ctx context.Context) error {
	return r.end(ctx, (*session).ReleaseMemory)
}

// end forgets every session, as the scope ends or leaves, doing fn to each.
func (r *sessions) end(ctx context.Context, fn func(*session, context.Context) error) error {
	r.mu.Lock()
	r.ended = true
	all := r.order
	r.order, r.byID = nil, nil
	r.mu.Unlock()
	var errs []error
	for _, s := range all {
		errs = append(errs, fn(s, ctx))
	}
	return errors.Join(errs...)
}

// session is one sub-conversation: the ai.MemoryOwner of the sub-agent's
// memories.
type session struct {
	id, owner string
	busy      int       // calls running; guarded by the sessions' mu
	last      time.Time // when the last call ended; guarded by the sessions' mu
	paused    string    // the tool call it paused on; guarded by the sessions' mu

	mu      sync.Mutex
	mems    []chatimpl.ScopedMemory
	keys    []string
	deleted bool
}

var _ ai.MemoryOwner = (*session)(nil)

// OwnerID implements ai.MemoryOwner.
func (s *session) OwnerID() string { return s.owner }

// AttachMemory implements ai.MemoryOwner.
//
// The memory id is also listed with the scope (see listedMemory), so that
// a durable conversation's store keeps the memory while the scope lives
// and deletes it when the scope ends, even when the sessions, restored
// from the store, are never used again.
func (s *session) AttachMemory(ctx context.Context, key string, mem chatimpl.ScopedMemory) error {
	s.mu.Lock()
	if s.deleted {
		s.mu.Unlock()
		return fmt.Errorf("session %s ended: %w", s.id, chat.ErrNotActive)
	}
	if slices.Contains(s.keys, key) {
		s.mu.Unlock()
		return nil
	}
	s.keys = append(s.keys, key)
	s.mems = append(s.mems, mem)
	s.mu.Unlock()
	if _, err := chat.AttachMemory(ctx, key, listedMemory{}); err != nil {
		return fmt.Errorf("session %s: listing memory %q with the scope: %w", s.id, key, err)
	}
	return nil
}

// listedMemory lists a session's memory id with its scope: the session
// clears and deletes the memory itself (through the sessions attached to
// the scope), so it does nothing. A scope restored from a store lists the
// id until the memory is used again: if the scope ends first, the store
// deletes the memory with it.
type listedMemory struct{}

// ClearMemory implements chatimpl.ScopedMemory: the sessions clear it.
func (listedMemory) ClearMemory(context.Context) error { return nil }

// DeleteMemory implements chatimpl.ScopedMemory: the sessions delete it.
func (listedMemory) DeleteMemory(context.Context) error { return nil }

// ClearMemory clears the session's memories.
func (s *session) ClearMemory(ctx context.Context) error {
	s.mu.Lock()
	mems := slices.Clone(s.mems)
	s.mu.Unlock()
	var errs []error
	for _, m := range mems {
		errs = append(errs, m.ClearMemory(ctx))
	}
	return errors.Join(errs...)
}

// DeleteMemory deletes the session's memories, newest first.
func (s *session) DeleteMemory(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	s.mu.Lock()
	s.deleted = true
	mems := s.mems
	s.mems, s.keys = nil, nil
	s.mu.Unlock()
	var errs []error
	for i := len(mems) - 1; i >= 0; i-- {
		errs = append(errs, mems[i].DeleteMemory(ctx))
	}
	return errors.Join(errs...)
}

// ReleaseMemory releases the session's memories (see
// chatimpl.ReleasableMemory), newest first: their stored messages stay.
func (s *session) ReleaseMemory(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	s.mu.Lock()
	s.deleted = true
	mems := s.mems
	s.mems, s.keys = nil, nil
	s.mu.Unlock()
	var errs []error
	for i := len(mems) - 1; i >= 0; i-- {
		if rm, ok := mems[i].(chatimpl.ReleasableMemory); ok {
			errs = append(errs, rm.ReleaseMemory(ctx))
		}
	}
	return errors.Join(errs...)
}
