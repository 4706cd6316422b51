package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// DefaultMaxMessageBytes is the default bound of one client message: a
// line over stdio, a request body over HTTP.
const DefaultMaxMessageBytes = 4 << 20

// DefaultSessionTimeout is how long an idle HTTP session lives by default.
const DefaultSessionTimeout = 30 * time.Minute

// ErrInvalidToolName is the error of [New] for a route whose name is not
// a valid MCP tool name (letters, digits, '_', '-' and '.', at most 128).
var ErrInvalidToolName = errors.New("mcpserver: the route's name is not a valid MCP tool name")

// Options configures a [Server]. A nil *Options, like the zero value,
// gives the defaults.
type Options struct {
	// Name and Version name the server to clients (the initialize
	// result). Empty: "chatgen" and "1".
	Name    string
	Version string
	// Instructions, when not empty, are sent to clients at initialize.
	Instructions string
	// Logger logs failed calls and session ends. Nil means [slog.Default].
	Logger *slog.Logger

	// Principal is the principal of every stdio session (and of the
	// sessions of any transport given to [Server.Run]); nil is
	// anonymous. An application serving MCP over stdio is run by its
	// user: it says who that is.
	Principal chat.Principal
	// Authenticator establishes the principal of each HTTP request of
	// [Server.Handler], as the websocket endpoint's
	// (ws.ServerOptions.Authenticator) does for an upgrade: a ws
	// Authenticator can be given as it is. A nil principal with a nil
	// error is anonymous; an error answers 401. A session belongs to the
	// principal that opened it. Nil: every request is anonymous.
	Authenticator func(r *http.Request) (chat.Principal, error)

	// MaxMessageBytes bounds one client message (0:
	// [DefaultMaxMessageBytes]; negative: no bound). A larger one closes
	// a stdio session; over HTTP it is answered 413.
	MaxMessageBytes int64
	// SessionTimeout ends an HTTP session idle that long (0:
	// [DefaultSessionTimeout]; negative: never).
	SessionTimeout time.Duration
	// MaxConfirmations bounds the confirmations one tool call asks for
	// (a route may pause again after each answer); beyond it the call
	// is denied. 0 means 8.
	MaxConfirmations int
	// ToolBoxes are the //chat:tools boxes offered as MCP tools of their
	// own, next to the routes' tools: see [ToolBox].
	ToolBoxes []ToolBox
}

// A Server offers the routes of a [chat.Router] as MCP tools. Build it
// with [New]; serve it over stdio with [Server.ServeStdio], over
// streamable HTTP with [Server.Handler], or over any MCP transport with
// [Server.Run]. It is safe for concurrent use.
type Server struct {
	router *chat.Router
	opts   Options
	log    *slog.Logger
	mcp    *mcp.Server
	tools  map[string]*routeTool
	boxes  map[string]*boxTool // the tools of tool boxes, by MCP name

	mu       sync.Mutex
	closed   bool
	sessions map[*mcp.ServerSession]*session
	owners   map[string]owner // HTTP session id → its principal
	wg       sync.WaitGroup   // one per session: ends its conversations
}

// An owner is the principal an HTTP session was opened by.
type owner struct{ p chat.Principal }

// A routeTool is the MCP tool of one route.
type routeTool struct {
	route  string
	tool   *mcp.Tool
	schema *jsonschema.Resolved
}

// New returns a server offering the routes of router as MCP tools. opts
// may be nil. A route whose name is not a valid MCP tool name is an error
// matching [ErrInvalidToolName]; a route schema that does not resolve is
// an error too.
func New(router *chat.Router, opts *Options) (*Server, error) {
	if router == nil {
		return nil, errors.New("mcpserver: New needs a router")
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "chatgen"
	}
	if o.Version == "" {
		o.Version = "1"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.SessionTimeout == 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.MaxConfirmations <= 0 {
		o.MaxConfirmations = 8
	}
	s := &Server{
		router:   router,
		opts:     o,
		log:      o.Logger,
		tools:    map[string]*routeTool{},
		boxes:    map[string]*boxTool{},
		sessions: map[*mcp.ServerSession]*session{},
		owners:   map[string]owner{},
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: o.Name, Version: o.Version}, &mcp.ServerOptions{
		Instructions: o.Instructions,
		Logger:       o.Logger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	m := router.Manifest()
	var errs []error
	for _, ri := range m.Routes {
		rt, err := newRouteTool(ri, m.Types)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.tools[ri.Name] = rt
		s.mcp.AddTool(rt.tool, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.call(ctx, rt, req)
		})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := s.addToolBoxes(o.ToolBoxes); err != nil {
		return nil, err
	}
	s.mcp.AddReceivingMiddleware(s.filterList)
	return s, nil
}

// toolName matches the names MCP allows for tools.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// newRouteTool returns the tool of the route ri, whose schemas refer to
// the named types of types.
func newRouteTool(ri chatimpl.RouteInfo, types []chatimpl.TypeInfo) (*routeTool, error) {
	if !toolName.MatchString(ri.Name) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidToolName, ri.Name)
	}
	schema, err := inputSchema(ri, types)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: the input schema of route %q: %w", ri.Name, err)
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(schema, &js); err != nil {
		return nil, fmt.Errorf("mcpserver: the input schema of route %q: %w", ri.Name, err)
	}
	resolved, err := js.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: the input schema of route %q: %w", ri.Name, err)
	}
	return &routeTool{
		route:  ri.Name,
		schema: resolved,
		tool: &mcp.Tool{
			Name:        ri.Name,
			Description: describe(ri),
			InputSchema: json.RawMessage(schema),
		},
	}, nil
}

// describe is the description of the tool of route ri.
func describe(ri chatimpl.RouteInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The chat route %q", ri.Name)
	if ri.Default {
		b.WriteString(" (the default route)")
	}
	b.WriteString(". Each call is the next request of this session's conversation on the route, which keeps its state between calls")
	if hasParam(ri, protocol.KeyUserMessage) {
		b.WriteString("; userMessage is the user's text")
	}
	b.WriteString(".")
	if ri.Untyped {
		b.WriteString(" Its parameters are not described: it takes any object.")
	}
	return b.String()
}

func hasParam(ri chatimpl.RouteInfo, name string) bool {
	return slices.ContainsFunc(ri.Params, func(p chatimpl.ParamInfo) bool { return p.Name == name })
}

// defRef matches a reference to a named type of a manifest.
var defRef = regexp.MustCompile(`"\$ref"\s*:\s*"` + regexp.QuoteMeta(chatimpl.DefsRef) + `([^"]+)"`)

// inputSchema returns the JSON Schema of the arguments of the route ri:
// an object with a property per parameter (every one optional, as a
// missing key is the parameter's zero value) and no others, the named
// types it refers to (directly or not) under $defs. An untyped route
// takes any object.
func inputSchema(ri chatimpl.RouteInfo, types []chatimpl.TypeInfo) (json.RawMessage, error) {
	if ri.Untyped {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	props := map[string]json.RawMessage{}
	var pending []string
	for _, p := range ri.Params {
		raw, err := p.Schema.MarshalJSON()
		if err != nil {
			return nil, err
		}
		props[p.Name] = raw
		pending = append(pending, string(raw))
	}
	byName := make(map[string]chatimpl.JSONSchema, len(types))
	for _, t := range types {
		byName[t.Name] = t.Schema
	}
	defs := map[string]json.RawMessage{}
	for len(pending) > 0 {
		text := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		for _, m := range defRef.FindAllStringSubmatch(text, -1) {
			name := m[1]
			if _, done := defs[name]; done {
				continue
			}
			t, ok := byName[name]
			if !ok {
				return nil, fmt.Errorf("it refers to the unknown type %q", name)
			}
			raw, err := t.MarshalJSON()
			if err != nil {
				return nil, err
			}
			defs[name] = raw
			pending = append(pending, string(raw))
		}
	}
	schema := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(defs) > 0 {
		schema["$defs"] = defs
	}
	return json.Marshal(schema)
}

// filterList is the middleware that tracks each session (its principal
// is that of its first message's context) and lists to it only the
// tools of the routes its principal may use.
func (s *Server) filterList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ss == nil {
			return next(ctx, method, req)
		}
		sess, err := s.track(ss, chat.PrincipalFrom(ctx))
		if err != nil {
			return nil, err
		}
		res, err := next(ctx, method, req)
		if err != nil || method != "tools/list" {
			return res, err
		}
		list, ok := res.(*mcp.ListToolsResult)
		if !ok {
			return res, nil
		}
		p := sess.principal
		list.Tools = slices.DeleteFunc(list.Tools, func(t *mcp.Tool) bool { return !s.router.Permits(p, s.routeOf(t.Name)) })
		return list, nil
	}
}

// Run serves one MCP session over t until the client ends it or ctx is
// done; the session's principal is [Options.Principal]. Its
// conversations have ended when Run returns.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	ss, err := s.mcp.Connect(chat.WithPrincipal(ctx, s.opts.Principal), t, nil)
	if err != nil {
		return fmt.Errorf("mcpserver: %w", err)
	}
	sess, err := s.track(ss, s.opts.Principal)
	if err != nil {
		return errors.Join(err, ss.Close())
	}
	stop := context.AfterFunc(ctx, func() { _ = ss.Close() })
	defer stop()
	werr := ss.Wait()
	<-sess.ended
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if werr != nil && !errors.Is(werr, mcp.ErrConnectionClosed) {
		return fmt.Errorf("mcpserver: the session ended: %w", werr)
	}
	return nil
}

// ServeStdio serves one MCP session over the process's standard input
// and output (newline-delimited JSON-RPC, each line bounded by
// [Options.MaxMessageBytes]) until the client closes its end or ctx is
// done.
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.Run(ctx, &mcp.StdioTransport{MaxLineLength: lineLimit(s.opts.MaxMessageBytes)})
}

// lineLimit is the MaxLineLength of the SDK's stdio transports for a
// bound of n bytes.
func lineLimit(n int64) int {
	if n < 0 {
		return -1
	}
	return int(n)
}

// Close ends every session and its conversations, and refuses new ones.
// It waits for the calls in progress to finish, or for ctx to be done.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	var open []*mcp.ServerSession
	for ss := range s.sessions {
		open = append(open, ss)
	}
	s.mu.Unlock()
	var errs []error
	for _, ss := range open {
		if err := ss.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			errs = append(errs, err)
		}
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, ctx.Err())
	}
	return errors.Join(errs...)
}

// Sessions returns the number of sessions the server holds now.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// routeOf returns the route of the tool name: the route itself, or the
// route of a tool box's tool.
func (s *Server) routeOf(name string) string {
	if bt := s.boxes[name]; bt != nil {
		return bt.route
	}
	return name
}
