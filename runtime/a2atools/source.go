package a2atools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/internal/tooltext"
)

// DefaultCallTimeout bounds each call of a remote agent when
// [Options.CallTimeout] is 0.
const DefaultCallTimeout = 2 * time.Minute

// DefaultConnectTimeout bounds the fetching of the Agent Card when
// [Options.ConnectTimeout] is 0.
const DefaultConnectTimeout = 30 * time.Second

// DefaultMaxResultBytes bounds the text of an answer told to the model
// when [Options.MaxResultBytes] is 0: about 25,000 tokens.
const DefaultMaxResultBytes = 100_000

// DefaultMaxMessageBytes bounds what is read of an answer when
// [Options.MaxMessageBytes] is 0: 4 MiB, the bound of @a2a-js/sdk on an
// event of a stream.
const DefaultMaxMessageBytes = 4 << 20

// Errors of this package, for errors.Is.
var (
	// ErrClosed: the [Source] was closed.
	ErrClosed = errors.New("a2atools: source closed")
	// ErrUnavailable: the agent cannot be reached, or answered with an
	// HTTP error.
	ErrUnavailable = errors.New("A2A agent unavailable")
	// ErrInvalidCard: the agent's Agent Card is not one this client can
	// use (not JSON, no name, no JSON-RPC interface of A2A 1.0 or 0.3).
	ErrInvalidCard = errors.New("invalid A2A Agent Card")
	// ErrMessageTooLarge: the agent's answer (a response, an event of a
	// stream, or all the text of a stream) exceeds
	// [Options.MaxMessageBytes].
	ErrMessageTooLarge = errors.New("A2A answer too large")
	// ErrProtocol: the agent answered what A2A does not allow.
	ErrProtocol = errors.New("A2A protocol error")
)

// Options configures a [Source]. URL is required.
type Options struct {
	// URL is the agent's base URL: its card is at
	// URL/.well-known/agent-card.json (see [CardPath]); a URL ending in
	// that path is the card's own.
	URL string
	// Name names the tool the model calls; "" means the card's name, its
	// characters outside a tool name's ('a'-'z', 'A'-'Z', '0'-'9', '_',
	// '-') replaced by '_'.
	Name string
	// Description is what the model is told of the tool; "" means one
	// made of the card's description and its skills.
	Description string
	// Version forces a version of A2A: [Version1] or [Version03]; ""
	// means 1.0 when the card offers it, else 0.3.
	Version string
	// HTTPClient makes the requests (give one with a Transport that adds
	// credentials when the agent needs them); nil means
	// http.DefaultClient.
	HTTPClient *http.Client
	// CallTimeout bounds each call of the agent; 0 means
	// [DefaultCallTimeout], a negative value no bound but the turn's own
	// deadline. A call that times out is told to the model as a failure,
	// and the turn goes on; its task, when a stream named it, is
	// cancelled on the agent.
	CallTimeout time.Duration
	// ConnectTimeout bounds the fetching of the card; 0 means
	// [DefaultConnectTimeout].
	ConnectTimeout time.Duration
	// MaxResultBytes bounds the text of an answer told to the model, and
	// kept in its memory: a longer one is cut, at a character boundary,
	// and ends with a line saying so. 0 means [DefaultMaxResultBytes];
	// -1 means no bound.
	MaxResultBytes int
	// MaxMessageBytes bounds what is read of an answer — a response's
	// body, one event of a stream, and the text of all of them — so that
	// a huge answer cannot exhaust the memory: past it the call fails
	// (wrapping [ErrMessageTooLarge]). 0 means [DefaultMaxMessageBytes];
	// -1 means no bound.
	MaxMessageBytes int
	// NoStream sends every message with a plain send, even to an agent
	// whose card says it streams: no progress reaches the client.
	NoStream bool
	// Logger receives the source's logs; nil means slog.Default().
	Logger *slog.Logger
}

// A Source offers one remote A2A agent to AI services as one tool: put
// it in their ai.Config.ToolSources. It is an ai.ToolSource (and an
// ai.ToolLister). See the package documentation.
//
// A Source is safe for concurrent use.
type Source struct {
	name     string // `A2A agent "Smith"`
	opts     Options
	card     *card
	end      endpoint
	remote   remote
	stream   bool
	tool     ai.Tool
	tools    []ai.Tool
	bean     *chat.Bean[*Conversation]
	maxRes   int
	timeout  time.Duration
	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
}

var _ ai.ToolLister = (*Source)(nil)

// Connect fetches the Agent Card of the agent at opts.URL, chooses the
// version of A2A to speak from its interfaces and returns the source of
// its tool. A card that cannot be fetched fails with [ErrUnavailable], one
// this client cannot use with [ErrInvalidCard].
func Connect(ctx context.Context, opts *Options) (*Source, error) {
	if opts == nil || opts.URL == "" {
		return nil, errors.New("a2atools: the Options need a URL")
	}
	o := *opts
	switch {
	case o.ConnectTimeout < 0:
		return nil, fmt.Errorf("a2atools: negative ConnectTimeout %v", o.ConnectTimeout)
	case o.MaxMessageBytes < -1:
		return nil, fmt.Errorf("a2atools: MaxMessageBytes %d is neither -1 (no bound), 0 (the default) nor positive", o.MaxMessageBytes)
	case o.MaxResultBytes < -1:
		return nil, fmt.Errorf("a2atools: MaxResultBytes %d is neither -1 (no bound), 0 (the default) nor positive", o.MaxResultBytes)
	case o.Version != "" && o.Version != Version1 && o.Version != Version03:
		return nil, fmt.Errorf("a2atools: Version %q is neither %q nor %q", o.Version, Version1, Version03)
	case o.Name != "" && !validName.MatchString(o.Name):
		return nil, fmt.Errorf("a2atools: Name %q is not a tool name: models accept 1 to 64 letters, digits, '_' and '-', starting with a letter or '_'", o.Name)
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxResultBytes == 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	base := http.DefaultClient
	if o.HTTPClient != nil {
		base = o.HTTPClient
	}
	client := *base
	rt := client.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	client.Transport = &boundedTransport{base: rt, limit: int64(o.MaxMessageBytes)}

	at, err := cardURL(o.URL)
	if err != nil {
		return nil, fmt.Errorf("a2atools: the URL %q: %w", o.URL, err)
	}
	cctx, cancel := context.WithTimeout(ctx, o.ConnectTimeout)
	defer cancel()
	c, _, err := fetchCard(cctx, base, at)
	if err != nil {
		return nil, fmt.Errorf("a2atools: the agent at %s: %w", o.URL, err)
	}
	s := &Source{name: "A2A agent " + strconv.Quote(c.Name), opts: o, card: c, maxRes: o.MaxResultBytes, timeout: o.CallTimeout}
	if s.end, err = c.choose(o.Version, at); err != nil {
		return nil, fmt.Errorf("a2atools: %s: %w", s.name, err)
	}
	s.stream = c.Capabilities.Streaming && !o.NoStream
	switch s.end.version {
	case Version1:
		s.remote = &v1{url: s.end.url, client: &client, max: o.MaxMessageBytes}
	default:
		if s.remote, err = newV03(ctx, s.end.url, &client, o.MaxMessageBytes); err != nil {
			return nil, fmt.Errorf("a2atools: %s: %w", s.name, err)
		}
	}
	name := o.Name
	if name == "" {
		name = toolName(c.Name)
	}
	desc := o.Description
	if desc == "" {
		desc = c.description()
	}
	s.tool = ai.Tool{Name: name, Description: desc, Parameters: json.RawMessage(parameters), Invoke: s.call}
	s.tools = []ai.Tool{s.tool}
	s.bean = chat.NewBean("a2atools "+name+" conversation", &chat.BeanOptions{Durable: true}, func(context.Context) (*Conversation, error) {
		return &Conversation{}, nil
	})
	o.Logger.Debug("a2atools: agent connected", "agent", c.Name, "version", s.end.version, "url", s.end.url, "stream", s.stream)
	return s, nil
}

// parameters is the JSON Schema of the tool's arguments.
const parameters = `{"type":"object","properties":{` +
	`"message":{"type":"string","description":"What to tell or ask the agent, in plain language."},` +
	`"new_conversation":{"type":"boolean","description":"Start a new conversation with the agent instead of continuing the current one."}},` +
	`"required":["message"],"additionalProperties":false}`

// Name returns `A2A agent "<the card's name>"`.
func (s *Source) Name() string { return s.name }

// Version returns the version of A2A the source speaks: [Version1] or
// [Version03].
func (s *Source) Version() string { return s.end.version }

// Tools returns the agent's tool: the same slice on every call. It
// implements ai.ToolSource.
func (s *Source) Tools(context.Context) ([]ai.Tool, error) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%s: %w", s.name, ErrClosed)
	}
	return s.tools, nil
}

// ListTools returns the agent's tool. It implements ai.ToolLister, so
// that a clash with a generated tool's name fails chat.NewRouter.
func (s *Source) ListTools() []ai.Tool { return s.tools }

// Bean returns the chat-scoped durable bean that holds the remote
// conversation of a scope.
func (s *Source) Bean() *chat.Bean[*Conversation] { return s.bean }

// Close waits for the calls under way and closes the client. Calls then
// fail with [ErrClosed]. It is idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	s.remote.close()
	return nil
}

// A Conversation is the remote conversation of a chat scope (the bean
// [Source.Bean]): the agent's contextId, and the task that waits for an
// answer (input-required). It is saved with a durable conversation, so
// that a conversation resumed on another node goes on in the same remote
// context, and dropped when the scope ends. Its methods are safe for
// concurrent use.
type Conversation struct {
	mu sync.Mutex
	// ContextID is the agent's contextId; "" before its first answer.
	ContextID string `json:"contextId,omitempty"`
	// TaskID is the task that asked a question, "" when none does.
	TaskID string `json:"taskId,omitempty"`
}

type conversationJSON struct {
	ContextID string `json:"contextId,omitempty"`
	TaskID    string `json:"taskId,omitempty"`
}

// MarshalJSON saves the conversation under its lock.
func (c *Conversation) MarshalJSON() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return json.Marshal(conversationJSON{ContextID: c.ContextID, TaskID: c.TaskID})
}

// UnmarshalJSON restores a saved conversation.
func (c *Conversation) UnmarshalJSON(b []byte) error {
	var j conversationJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ContextID, c.TaskID = j.ContextID, j.TaskID
	return nil
}

// ids returns the conversation's ids.
func (c *Conversation) ids() (contextID, taskID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ContextID, c.TaskID
}

func (c *Conversation) set(contextID, taskID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ContextID, c.TaskID = contextID, taskID
}

// A CallError is a call of the agent that got no usable answer: the agent
// could not be reached (wrapping [ErrUnavailable]), the call timed out
// (wrapping context.DeadlineExceeded), the answer was too large
// ([ErrMessageTooLarge]) or not A2A ([ErrProtocol]), or the agent
// answered with an error (a [*RemoteError]).
type CallError struct {
	Agent string // the card's name
	Err   error
}

// Error implements error.
func (e *CallError) Error() string { return fmt.Sprintf("A2A agent %q: %v", e.Agent, e.Err) }

// Unwrap returns the cause.
func (e *CallError) Unwrap() error { return e.Err }

// A RemoteError is a JSON-RPC error the agent answered with (-32001, task
// not found, for example).
type RemoteError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Error implements error.
func (e *RemoteError) Error() string {
	if e.Code == 0 {
		return "the agent answered with an error: " + e.Message
	}
	return fmt.Sprintf("the agent answered with error %d: %s", e.Code, e.Message)
}

// A TaskError is a task the agent ended without doing it: failed,
// rejected, canceled, or waiting for an authentication this client does
// not give (auth-required). The model is told State and Text.
type TaskError struct {
	Agent string // the card's name
	State string // "failed", "rejected", "canceled", "auth-required"
	Text  string // the status message's text
}

// Error implements error.
func (e *TaskError) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("A2A agent %q: the task ended %s", e.Agent, e.State)
	}
	return fmt.Sprintf("A2A agent %q: the task ended %s: %s", e.Agent, e.State, e.Text)
}

// call runs one call of the tool.
func (s *Source) call(ctx context.Context, args string) (any, error) {
	var a struct {
		Message         string `json:"message"`
		NewConversation bool   `json:"new_conversation"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return nil, &ai.ArgumentsError{Err: err}
	}
	if strings.TrimSpace(a.Message) == "" {
		return nil, &ai.ArgumentsError{Err: errors.New(`"message" is required and must not be empty`)}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, &CallError{Agent: s.card.Name, Err: ErrClosed}
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()

	conv, err := s.bean.Lookup(ctx)
	if err != nil {
		if !errors.Is(err, chat.ErrNotActive) {
			return nil, err
		}
		conv = nil // outside a chat scope: every call is a new conversation
	}
	msg := &outgoing{id: a2a.NewMessageID(), text: a.Message}
	if conv != nil && !a.NewConversation {
		msg.contextID, msg.taskID = conv.ids()
	}
	callCtx := ctx
	if s.timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	var task atomic.Value // the task's id, once known
	on := func(st step) {
		if st.taskID != "" {
			task.Store(st.taskID)
		}
		if st.kind != "" {
			s.event(ctx, st)
		}
	}
	pending := msg.taskID // the task whose question this call answers
	out, err := s.remote.send(callCtx, msg, s.stream, on)
	if re := (*RemoteError)(nil); errors.As(err, &re) && msg.taskID != "" && callCtx.Err() == nil {
		// The agent no longer knows the task that asked (it restarted,
		// say): the answer goes to the context as a new message.
		s.opts.Logger.InfoContext(ctx, "a2atools: the agent refused the message to the task that asked; sending it as a new task",
			"agent", s.card.Name, "task", msg.taskID, "err", err)
		msg.taskID, msg.id = "", a2a.NewMessageID()
		out, err = s.remote.send(callCtx, msg, s.stream, on)
	}
	if err != nil {
		if ctx.Err() == nil && callCtx.Err() != nil {
			err = fmt.Errorf("no answer within %v: %w", s.timeout, context.DeadlineExceeded)
		}
		if id, _ := task.Load().(string); id != "" && callCtx.Err() != nil {
			s.cancel(ctx, id)
		}
		if conv != nil && pending != "" {
			conv.set(msg.contextID, "") // the question is not pending any more
		}
		s.opts.Logger.WarnContext(ctx, "a2atools: a call of the agent failed", "agent", s.card.Name, "err", err)
		return nil, &CallError{Agent: s.card.Name, Err: err}
	}
	if conv != nil {
		contextID := out.contextID
		if contextID == "" {
			contextID = msg.contextID
		}
		taskID := ""
		if out.state == string(a2a.TaskStateInputRequired) {
			taskID = out.taskID
		}
		conv.set(contextID, taskID)
	}
	switch out.state {
	case string(a2a.TaskStateFailed), string(a2a.TaskStateRejected), string(a2a.TaskStateCanceled), string(a2a.TaskStateAuthRequired):
		return nil, &TaskError{Agent: s.card.Name, State: out.state, Text: tooltext.Clip(out.status, s.maxRes)}
	case string(a2a.TaskStateInputRequired):
		q := out.status
		if q == "" {
			q = "(the agent asks for more input without saying what)"
		}
		text := fmt.Sprintf("[The agent %q needs more input before it can go on (A2A input-required). Its question:]\n%s\n"+
			"[Answer it with your next call of %s: that call continues this task.]", s.card.Name, q, s.tool.Name)
		return tooltext.Clip(text, s.maxRes), nil
	}
	text := answerText(out)
	if out.state != "" && out.state != string(a2a.TaskStateCompleted) {
		text = fmt.Sprintf("[the agent's task is %s]\n%s", out.state, text)
	}
	if text == "" {
		return nil, nil
	}
	return tooltext.Clip(text, s.maxRes), nil
}

// cancelTimeout bounds the cancel of a task whose call ended first.
const cancelTimeout = 10 * time.Second

// cancel asks the agent, in the background, to cancel the task of a call
// that timed out or was cancelled; Close waits for it.
func (s *Source) cancel(ctx context.Context, taskID string) {
	s.inflight.Add(1) // the call's own is still held
	go func() {
		defer s.inflight.Done()
		ctx, stop := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
		defer stop()
		if err := s.remote.cancel(ctx, taskID); err != nil {
			s.opts.Logger.WarnContext(ctx, "a2atools: cancelling the task of a call that ended first", "agent", s.card.Name, "task", taskID, "err", err)
			return
		}
		s.opts.Logger.DebugContext(ctx, "a2atools: cancelled the task of a call that ended first", "agent", s.card.Name, "task", taskID)
	}()
}

// answerText is what the model is told of a completed task: its
// artifacts, then its status message (or the agent's message).
func answerText(out *outcome) string {
	parts := make([]string, 0, len(out.artifacts)+1)
	for _, a := range out.artifacts {
		if a != "" {
			parts = append(parts, a)
		}
	}
	if out.status != "" {
		parts = append(parts, out.status)
	}
	return strings.Join(parts, "\n")
}

// event sends a step of the agent to the client of the request in ctx as
// a SubAgent event tagged with the agent; outside a request it does
// nothing.
func (s *Source) event(ctx context.Context, st step) {
	ev := ai.AgentEvent{Agent: s.card.Name, Session: st.contextID, Type: st.kind, Text: st.text, ID: st.id}
	if err := chat.Response(ctx).Event(ai.EventSubAgent, ev); err != nil && !errors.Is(err, chat.ErrNotActive) {
		s.opts.Logger.DebugContext(ctx, "a2atools: sending a SubAgent event", "agent", s.card.Name, "err", err)
	}
}
