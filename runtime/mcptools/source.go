package mcptools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// DefaultCallTimeout bounds each tool call when [Options.CallTimeout] is
// 0: a minute, the default of MCP's TypeScript SDK.
const DefaultCallTimeout = time.Minute

// DefaultConnectTimeout bounds the opening of a session (starting the
// server, the MCP handshake and the listing of its tools) when
// [Options.ConnectTimeout] is 0.
const DefaultConnectTimeout = 30 * time.Second

// DefaultMaxResultBytes bounds the text of a tool's result told to the
// model when [Options.MaxResultBytes] is 0: about 25,000 tokens.
const DefaultMaxResultBytes = 100_000

// Errors of this package, for errors.Is.
var (
	// ErrClosed: the [Source] was closed.
	ErrClosed = errors.New("mcptools: source closed")
	// ErrUnavailable: the server cannot be reached: a session did not
	// open, or ended and could not be opened again.
	ErrUnavailable = errors.New("MCP server unavailable")
	// ErrUnusableTool: a tool the server lists cannot be offered to a
	// model (its input schema or its name); see [Options.Allow].
	ErrUnusableTool = errors.New("unusable MCP tool")
	// ErrMessageTooLarge: a message from the server over streamable HTTP
	// was larger than [Options.MaxMessageBytes].
	ErrMessageTooLarge = errors.New("MCP message too large")
)

// Options configures a [Source]. Name and Transport are required.
type Options struct {
	// Name names the server in errors, logs and the tool failures the
	// model is told about: the source is `MCP server "<Name>"`.
	Name string
	// Transport returns the transport of a new session. Each session
	// gets a new one, so a server that ended can be started again.
	// [Command] (stdio) and [StreamableHTTP] make it.
	Transport func(ctx context.Context) (mcp.Transport, error)
	// Allow, when not empty, lists the only tools offered, by the names
	// the server gives them. An allowed tool the server does not list, or
	// lists in a form a model cannot use, is an error (wrapping
	// [ErrUnusableTool]) rather than a tool left out: Connect fails, or,
	// for a [PerScope] source, the turn.
	Allow []string
	// Deny lists tools never offered, by the names the server gives them.
	Deny []string
	// Prefix is put before the name of each tool as the model sees it
	// ("lore_"), a way out of a clash with a generated tool's name, or of
	// a name a model would reject ("3d_print"); the server is called with
	// its own name. It must be a valid start of a tool name (see the
	// package documentation).
	Prefix string
	// CallTimeout bounds each tool call; 0 means [DefaultCallTimeout], a
	// negative value no bound but the turn's own deadline. A call that
	// times out is cancelled on the server and told to the model as a
	// failure; the turn goes on.
	CallTimeout time.Duration
	// ConnectTimeout bounds the opening of a session; 0 means
	// [DefaultConnectTimeout].
	ConnectTimeout time.Duration
	// MaxResultBytes bounds the text of a result (or of an error result)
	// told to the model, and kept in its memory: a longer one is cut, at
	// a character boundary, and ends with a line saying so. 0 means
	// [DefaultMaxResultBytes]; -1 means no bound.
	MaxResultBytes int
	// MaxMessageBytes bounds each message read from a server over
	// streamable HTTP — a JSON response's body, or one event of a stream
	// — so that a huge result cannot exhaust the memory before
	// MaxResultBytes cuts it: the call it answers fails (wrapping
	// [ErrMessageTooLarge]), the session ends, and the next call opens a
	// new one. 0 means [DefaultMaxMessageBytes] (16 MiB, the SDK's bound
	// on a message over stdio), or four times MaxResultBytes when that is
	// more; -1 means no bound.
	MaxMessageBytes int
	// Required makes a turn fail when the server cannot be reached. By
	// default such a turn goes on without the server's tools, and the
	// failure is logged (the next turn tries again).
	Required bool
	// Client is how the client introduces itself to the server; nil means
	// {Name: "chatgen"}.
	Client *mcp.Implementation
	// Logger receives the source's logs (and the MCP client's); nil means
	// slog.Default().
	Logger *slog.Logger
}

// A Source offers the tools of one MCP server to AI services: put it in
// their ai.Config.ToolSources. It is an ai.ToolSource (and an
// ai.ToolLister). See the package documentation for its two lifetimes.
//
// A Source is safe for concurrent use.
type Source struct {
	name        string // `MCP server "lore"`
	opts        Options
	allow, deny map[string]bool
	kind        chat.Kind
	shared      *conn             // Connect: the session of the application
	bean        *chat.Bean[*conn] // PerScope: a session per scope
	maxResult   int               // the bound on a result's text; -1 for none
	maxMessage  int               // the bound on a message over HTTP; -1 for none

	mu     sync.Mutex
	conns  map[*conn]struct{} // not closed
	closed bool

	procs sync.WaitGroup // the servers' processes not reaped yet

	taskOnly sync.Map // the names of the task-only tools logged
}

var _ ai.ToolLister = (*Source)(nil)

// Connect opens an application-wide session with the server: one session
// that every conversation shares, opened now (its tools listed) and
// closed by [Source.Close]. A session that ends (the server exits) is
// opened again on the next turn. opts must have a Name and a Transport.
func Connect(ctx context.Context, opts *Options) (*Source, error) {
	s, err := newSource(opts)
	if err != nil {
		return nil, err
	}
	c := s.newConn()
	if c == nil {
		return nil, ErrClosed
	}
	if _, err := c.get(ctx); err != nil {
		c.close()
		return nil, err
	}
	s.shared = c
	return s, nil
}

// PerScope returns a source that opens a session with the server on first
// use in a scope of the given kind, and closes it when that scope ends
// (or, in a durable conversation, leaves the process):
// chat.KindChat for a session per chat scope that nested scopes share
// (like a //chat:scoped bean), chat.KindPerChat for a session per scope,
// nested ones included, chat.KindInvocation for a session per top-level
// call. Nothing is opened until then. [Source.Close] closes the sessions
// still open. opts must have a Name and a Transport.
func PerScope(kind chat.Kind, opts *Options) (*Source, error) {
	switch kind {
	case chat.KindChat, chat.KindPerChat, chat.KindInvocation:
	default:
		return nil, fmt.Errorf("mcptools: %v is not a scope kind", kind)
	}
	s, err := newSource(opts)
	if err != nil {
		return nil, err
	}
	s.kind = kind
	s.bean = chat.NewBean(s.name+" session", &chat.BeanOptions{Kind: kind}, func(ctx context.Context) (*conn, error) {
		c := s.newConn()
		if c == nil {
			return nil, ErrClosed
		}
		if _, err := c.get(ctx); err != nil {
			c.close()
			return nil, err
		}
		return c, nil
	})
	return s, nil
}

func newSource(opts *Options) (*Source, error) {
	if opts == nil || opts.Name == "" {
		return nil, errors.New("mcptools: the Options need a Name")
	}
	name := "MCP server " + strconv.Quote(opts.Name)
	if opts.Transport == nil {
		return nil, fmt.Errorf("mcptools: %s: the Options need a Transport (mcptools.Command or mcptools.StreamableHTTP)", name)
	}
	switch {
	case opts.ConnectTimeout < 0:
		return nil, fmt.Errorf("mcptools: %s: negative ConnectTimeout %v", name, opts.ConnectTimeout)
	case opts.MaxMessageBytes < -1:
		return nil, fmt.Errorf("mcptools: %s: MaxMessageBytes %d is neither -1 (no bound), 0 (the default) nor positive", name, opts.MaxMessageBytes)
	case opts.MaxResultBytes < -1:
		return nil, fmt.Errorf("mcptools: %s: MaxResultBytes %d is neither -1 (no bound), 0 (the default) nor positive", name, opts.MaxResultBytes)
	case opts.Prefix != "" && !validPrefix.MatchString(opts.Prefix):
		return nil, fmt.Errorf("mcptools: %s: Prefix %q cannot start a tool name: models accept %s", name, opts.Prefix, nameRule)
	}
	s := &Source{name: name, opts: *opts, conns: make(map[*conn]struct{}), maxResult: opts.MaxResultBytes}
	s.opts.Allow = slices.Clone(opts.Allow)
	s.opts.Deny = slices.Clone(opts.Deny)
	if s.opts.ConnectTimeout == 0 {
		s.opts.ConnectTimeout = DefaultConnectTimeout
	}
	if s.opts.CallTimeout == 0 {
		s.opts.CallTimeout = DefaultCallTimeout
	}
	if s.maxResult == 0 {
		s.maxResult = DefaultMaxResultBytes
	}
	s.maxMessage = maxMessage(opts, s.maxResult)
	if s.opts.Client == nil {
		s.opts.Client = &mcp.Implementation{Name: "chatgen"}
	}
	if s.opts.Logger == nil {
		s.opts.Logger = slog.Default()
	}
	if len(opts.Allow) > 0 {
		s.allow = make(map[string]bool, len(opts.Allow))
		for _, n := range opts.Allow {
			s.allow[n] = true
		}
	}
	s.deny = make(map[string]bool, len(opts.Deny))
	for _, n := range opts.Deny {
		if s.allow[n] {
			return nil, fmt.Errorf("mcptools: %s: tool %q is both allowed and denied", name, n)
		}
		s.deny[n] = true
	}
	return s, nil
}

// Name returns `MCP server "<Options.Name>"`.
func (s *Source) Name() string { return s.name }

// Tools returns the tools offered to the turn running in ctx: those of
// the application-wide session, or of the session of ctx's scope (opened
// now on first use). A session that ended is opened again. When the
// server cannot be reached the turn goes on without its tools, unless
// [Options.Required]. It implements ai.ToolSource.
func (s *Source) Tools(ctx context.Context) ([]ai.Tool, error) {
	c := s.shared
	if s.bean != nil {
		var err error
		if c, err = s.bean.Lookup(ctx); err != nil {
			if errors.Is(err, chat.ErrNotActive) {
				return nil, fmt.Errorf("mcptools: %s opens a session per %s scope, and the turn has none: %w", s.name, s.kind, err)
			}
			if be := (*chat.BeanError)(nil); errors.As(err, &be) {
				err = be.Err // the session's own error says it all
			}
			return s.unavailable(ctx, err)
		}
	}
	tools, err := c.get(ctx)
	if err != nil {
		return s.unavailable(ctx, err)
	}
	return tools, nil
}

// unavailable returns what Tools returns when no session opens: err when
// the source is closed or Required, or when the server lacks a tool of
// Allow (a mistake of configuration, not an outage), else no tools.
func (s *Source) unavailable(ctx context.Context, err error) ([]ai.Tool, error) {
	if s.opts.Required || errors.Is(err, ErrClosed) || errors.Is(err, ErrUnusableTool) || ctx.Err() != nil {
		return nil, err
	}
	s.opts.Logger.WarnContext(ctx, "mcptools: the MCP server is unavailable; the turn goes on without its tools",
		"server", s.opts.Name, "err", err)
	return nil, nil
}

// ListTools returns the tools of the application-wide session as last
// listed; nil for a [PerScope] source. It implements ai.ToolLister, so
// that a router built with a clash between these and a generated tool
// fails at chat.NewRouter.
func (s *Source) ListTools() []ai.Tool {
	if s.shared == nil {
		return nil
	}
	return s.shared.listed()
}

// Sessions returns the number of sessions open now.
func (s *Source) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if c.live() {
			n++
		}
	}
	return n
}

// Close closes the source's sessions: the application-wide one, or those
// of the scopes that have not ended. Tools then fails with [ErrClosed].
// It waits for the processes of its servers run as commands to exit, the
// sessions of ended scopes included: a server that ignores the end of its
// input is signalled after the [Cmd]'s Grace (see [Cmd]). It is
// idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	s.closed = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.close())
	}
	s.procs.Wait()
	return errors.Join(errs...)
}

// newConn returns a new connection of the source, or nil once the source
// is closed.
func (s *Source) newConn() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	c := &conn{src: s}
	s.conns[c] = struct{}{}
	return c
}

// forget drops a closed connection.
func (s *Source) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// offered reports whether the tool the server calls name is offered.
func (s *Source) offered(name string) bool {
	if s.deny[name] {
		return false
	}
	return s.allow == nil || s.allow[name]
}
