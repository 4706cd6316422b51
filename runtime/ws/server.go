package ws

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// Paths the handler serves, relative to where it is mounted.
const (
	RoutesPath     = "/_chat/routes"                     // the websocket endpoint
	ScriptPath     = "/_chat/javascript/chatscopes.js"   // the classic-script JavaScript client (the Quarkus URL)
	ModulePath     = "/_chat/javascript/chatscopes.mjs"  // the JavaScript client as an ES module
	TypeScriptPath = "/_chat/javascript/chatscopes.d.ts" // TypeScript declarations of the module
)

// Defaults of the limits.
const (
	DefaultMaxFrameSize = 64 << 10
	DefaultMaxSessions  = 64
	DefaultMaxQueued    = 16
	DefaultIdleTimeout  = 30 * time.Minute
	DefaultWriteTimeout = 10 * time.Second
)

// An Authenticator establishes the principal of a websocket connection
// from its upgrade request. A nil principal with a nil error is an
// anonymous connection; an error rejects the upgrade with 401.
type Authenticator func(r *http.Request) (chat.Principal, error)

// An Option configures the handler returned by [Handler].
type Option func(*config)

type config struct {
	auth         Authenticator
	origins      []string
	maxFrame     int64
	maxSessions  int
	maxQueued    int
	idle         time.Duration
	writeTimeout time.Duration
	outBuffer    int
	logger       *slog.Logger
}

// WithAuthenticator sets the authentication hook. The principal it returns
// is in the context of every request of the connection ([chat.PrincipalFrom])
// and is checked against the roles of routes (Failed "Forbidden").
func WithAuthenticator(a Authenticator) Option { return func(c *config) { c.auth = a } }

// WithOriginPatterns allows cross-origin browser connections from origins
// matching the patterns (host patterns for path.Match, such as
// "example.com" or "*.example.com"; a pattern with "://" is matched
// against scheme://host). By default only same-origin pages (and
// non-browser clients, which send no Origin) may connect.
func WithOriginPatterns(patterns ...string) Option {
	return func(c *config) { c.origins = append(c.origins, patterns...) }
}

// WithMaxFrameSize limits the size of a client frame in bytes (default
// [DefaultMaxFrameSize]). A larger frame closes the connection with status
// 1009 (message too big).
func WithMaxFrameSize(n int64) Option { return func(c *config) { c.maxFrame = n } }

// WithMaxSessions limits the sessions of one connection (default
// [DefaultMaxSessions]); a Connect beyond it fails with "TooManySessions".
func WithMaxSessions(n int) Option { return func(c *config) { c.maxSessions = n } }

// WithMaxQueued limits the requests of one session waiting behind the one
// running (default [DefaultMaxQueued]); a request beyond it fails at once
// with "TooManyRequests".
func WithMaxQueued(n int) Option { return func(c *config) { c.maxQueued = n } }

// WithIdleTimeout ends sessions that had no request for d (default
// [DefaultIdleTimeout]); their next request fails with "SessionNotActive".
// A connection left with no session for d is closed. d <= 0 disables
// both.
func WithIdleTimeout(d time.Duration) Option { return func(c *config) { c.idle = d } }

// WithWriteTimeout bounds the time to write one frame to a client (default
// [DefaultWriteTimeout]); a client that does not read is disconnected.
func WithWriteTimeout(d time.Duration) Option { return func(c *config) { c.writeTimeout = d } }

// WithLogger sets the logger (default [slog.Default]).
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }

// A Server is the websocket endpoint of a [chat.Router] and the server of
// the JavaScript client. It is an [http.Handler]: mount it on any mux, at
// the root or under a prefix (it matches the ends of paths, so
// http.StripPrefix is optional). Create it with [Handler].
type Server struct {
	router *chat.Router
	cfg    config
	pools  pools
	assets *assets

	mu       sync.Mutex
	conns    map[*conn]struct{}
	shutdown bool
	wg       sync.WaitGroup // one per connection being served
}

// Handler returns the websocket endpoint of router, serving [RoutesPath]
// and the JavaScript client ([ScriptPath], [ModulePath], [TypeScriptPath]).
func Handler(router *chat.Router, opts ...Option) *Server {
	s := &Server{
		router: router,
		cfg: config{
			maxFrame:     DefaultMaxFrameSize,
			maxSessions:  DefaultMaxSessions,
			maxQueued:    DefaultMaxQueued,
			idle:         DefaultIdleTimeout,
			writeTimeout: DefaultWriteTimeout,
			outBuffer:    64,
			logger:       slog.Default(),
		},
		conns:  map[*conn]struct{}{},
		assets: newAssets(),
	}
	for _, o := range opts {
		o(&s.cfg)
	}
	return s
}

// ServeHTTP serves the websocket endpoint and the JavaScript client.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, RoutesPath):
		s.serveWebsocket(w, r)
	case strings.HasSuffix(p, ScriptPath):
		s.assets.serve(w, r, assetScript)
	case strings.HasSuffix(p, ModulePath):
		s.assets.serve(w, r, assetModule)
	case strings.HasSuffix(p, TypeScriptPath):
		s.assets.serve(w, r, assetTypes)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) serveWebsocket(w http.ResponseWriter, r *http.Request) {
	var principal chat.Principal
	if s.cfg.auth != nil {
		p, err := s.cfg.auth(r)
		if err != nil {
			s.cfg.logger.InfoContext(r.Context(), "ws: authentication failed", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		principal = p
	}
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	hw := &hijackCapture{ResponseWriter: w, pool: &s.pools.corks, timeout: s.cfg.writeTimeout}
	wc, err := websocket.Accept(hw, r, &websocket.AcceptOptions{OriginPatterns: s.cfg.origins})
	if err != nil {
		// Accept has answered (403 for a foreign origin, 400 for a bad handshake).
		s.cfg.logger.InfoContext(r.Context(), "ws: upgrade refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "err", err)
		return
	}
	wc.SetReadLimit(s.cfg.maxFrame)

	ctx := context.Background()
	if principal != nil {
		ctx = chat.WithPrincipal(ctx, principal)
	}
	c := newConn(s, wc, hw.conn, ctx, r.RemoteAddr)
	s.mu.Lock()
	if s.shutdown { // Shutdown began during the handshake
		s.mu.Unlock()
		wc.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()

	// The connection is served on a goroutine of its own, so that the
	// HTTP server's state for this request is freed.
	go func() {
		defer s.wg.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
}

// Shutdown stops the endpoint gracefully: new connections are refused,
// requests received from now on fail with "ShuttingDown", the requests in
// progress and queued finish, then every session is ended (its scopes and
// chat memory destroyed) and every connection closed with status 1001
// (going away). If ctx ends first, requests still running have their
// context cancelled, the connections are closed at once, and Shutdown
// returns ctx's error once they are cleaned up.
//
// An http.Server does not track hijacked connections: call Shutdown after
// (or alongside) the http.Server's own Shutdown.
func (s *Server) Shutdown(ctx context.Context) error {
	for _, c := range s.stopConns() {
		c.drain()
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	for _, c := range s.stopConns() {
		c.abort()
	}
	<-done
	return fmt.Errorf("ws: shutdown: %w", ctx.Err())
}

// Close closes every connection at once (no close handshake: clients see
// the connection lost), cancelling the requests in progress; it ends every
// session and waits for the cleanup.
func (s *Server) Close() error {
	for _, c := range s.stopConns() {
		c.abort()
	}
	s.wg.Wait()
	return nil
}

// stop refuses new connections and returns the open ones.
func (s *Server) stopConns() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.shutdown = true
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// Connections returns the number of open websocket connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
