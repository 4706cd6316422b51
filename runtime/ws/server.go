package ws

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// crossOrigin reports whether a browser's Origin header names another host
// than the request's Host: a connection coder/websocket refuses unless
// ServerOptions.OriginPatterns allows it.
func crossOrigin(origin, host string) bool {
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || !strings.EqualFold(u.Host, host)
}

// Paths the handler serves, relative to where it is mounted.
const (
	RoutesPath     = "/_chat/routes"                     // the websocket endpoint
	ScriptPath     = "/_chat/javascript/chatscopes.js"   // the classic-script JavaScript client (the Quarkus URL)
	ModulePath     = "/_chat/javascript/chatscopes.mjs"  // the JavaScript client as an ES module
	TypeScriptPath = "/_chat/javascript/chatscopes.d.ts" // TypeScript declarations of the module

	RoutesModulePath     = "/_chat/javascript/routes.mjs"                       // the routes as an ES module, from the router's manifest
	RoutesTypeScriptPath = "/_chat/javascript/routes.d.ts"                      // TypeScript declarations of the routes module
	QuarkusAPIPath       = "/_static/quarkus-chat-scopes-api/chatscopes-api.js" // the routes module at the URL of Quarkus' generated module
	ImportMapPath        = "/_importmap/generated_importmap.js"                 // the import map script, at the Quarkus URL
)

// Defaults of the limits.
const (
	DefaultMaxFrameSize = 64 << 10
	DefaultMaxSessions  = 64
	DefaultMaxQueued    = 16
	DefaultIdleTimeout  = 30 * time.Minute
	DefaultWriteTimeout = 10 * time.Second

	DefaultMaxConnections = 10000
	DefaultMaxQueuedBytes = 1 << 20
	DefaultRequestTimeout = 5 * time.Minute
	DefaultPingInterval   = 30 * time.Second
)

// MaxChatIDLength is the longest chatId the server accepts, in bytes
// (UTF-8). A frame with a longer one fails with "BadRequest" whose chatId
// is "": the id is never echoed.
const MaxChatIDLength = 128

// An Authenticator establishes the principal of a websocket connection
// from its upgrade request. A nil principal with a nil error is an
// anonymous connection; an error rejects the upgrade with 401.
type Authenticator func(r *http.Request) (chat.Principal, error)

// ServerOptions configures a [Server]. A nil *ServerOptions, like the zero
// value, gives the defaults.
type ServerOptions struct {
	// Authenticator establishes the principal of each connection; it is
	// in the context of every request of the connection
	// ([chat.PrincipalFrom]) and checked against the roles of routes
	// (Failed "Forbidden"). Nil: every connection is anonymous.
	Authenticator Authenticator

	// OriginPatterns allows cross-origin browser connections from
	// origins matching the patterns (host patterns for path.Match, such as
	// "example.com" or "*.example.com"; a pattern with "://" is matched
	// against scheme://host). By default only same-origin pages (and
	// non-browser clients, which send no Origin) may connect.
	OriginPatterns []string

	// MaxFrameSize limits the size of a client frame in bytes (0:
	// [DefaultMaxFrameSize]; negative: no limit). A larger frame closes
	// the connection with status 1009 (message too big).
	MaxFrameSize int64

	// MaxSessions limits the sessions of one connection (0 or negative:
	// [DefaultMaxSessions]); a Connect beyond it fails with
	// "TooManySessions".
	MaxSessions int

	// MaxQueued limits the requests of one session waiting behind the one
	// running (0: [DefaultMaxQueued]; negative: none may wait); a request
	// beyond it fails at once with "TooManyRequests".
	MaxQueued int

	// MaxQueuedBytes limits the size of the requests waiting on one
	// connection, all its sessions together (0: [DefaultMaxQueuedBytes];
	// negative: no limit). A request that would take the connection over
	// it fails at once with "TooManyRequests", unless nothing waits: one
	// request always fits. A connection's requests thus hold at most
	// MaxQueuedBytes waiting plus one running request (at most
	// MaxFrameSize) per session.
	MaxQueuedBytes int64

	// MaxConnections limits the websocket connections open at once,
	// handshakes included (0: [DefaultMaxConnections]; negative: no
	// limit). An upgrade beyond it is refused with 503 (Service
	// Unavailable) and logged at WARN.
	MaxConnections int

	// RequestTimeout bounds the time a request may run (0:
	// [DefaultRequestTimeout]; negative: no limit): the request's context
	// has a deadline RequestTimeout after the request starts (up to a
	// sixteenth more: the requests of a session share a context while
	// its deadline is far enough). When it passes, the client gets Failed
	// "RequestTimeout" at once; the events the route sends afterwards are
	// dropped. The session's next request runs once the route has
	// returned.
	RequestTimeout time.Duration

	// PingInterval is the time between the websocket pings the server
	// sends on each connection (0: [DefaultPingInterval]; negative: no
	// pings). A client that has not answered a ping within WriteTimeout
	// is disconnected, so that a peer that vanished without closing its
	// connection is noticed within PingInterval + WriteTimeout, not after
	// IdleTimeout. Browsers and coder/websocket clients answer pings
	// (a coder/websocket client only while it reads).
	PingInterval time.Duration

	// IdleTimeout ends sessions that had no request for that long (0:
	// [DefaultIdleTimeout]; negative: never); their next request fails
	// with "SessionNotActive". A connection left with no session for that
	// long is closed.
	IdleTimeout time.Duration

	// WriteTimeout bounds the time to write to a client (0 or negative:
	// [DefaultWriteTimeout]); a client that does not read is disconnected.
	WriteTimeout time.Duration

	// Logger is the server's logger (nil: [slog.Default]).
	Logger *slog.Logger
}

// withDefaults returns a copy of opts with the defaults filled in.
func (opts *ServerOptions) withDefaults() ServerOptions {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	o.OriginPatterns = slices.Clone(o.OriginPatterns)
	switch {
	case o.MaxFrameSize == 0:
		o.MaxFrameSize = DefaultMaxFrameSize
	case o.MaxFrameSize < 0:
		o.MaxFrameSize = -1
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	switch {
	case o.MaxQueued == 0:
		o.MaxQueued = DefaultMaxQueued
	case o.MaxQueued < 0:
		o.MaxQueued = 0
	}
	switch {
	case o.MaxQueuedBytes == 0:
		o.MaxQueuedBytes = DefaultMaxQueuedBytes
	case o.MaxQueuedBytes < 0:
		o.MaxQueuedBytes = -1
	}
	switch {
	case o.MaxConnections == 0:
		o.MaxConnections = DefaultMaxConnections
	case o.MaxConnections < 0:
		o.MaxConnections = -1
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.PingInterval == 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// A Server is the websocket endpoint of a [chat.Router] and the server of
// the JavaScript client. It is an [http.Handler]: mount it on any mux, at
// the root or under a prefix (it matches the ends of paths, so
// http.StripPrefix is optional). Create it with [NewServer].
type Server struct {
	router  *chat.Router
	opts    ServerOptions // with the defaults filled in
	pools   pools
	workers workerPool
	assets  *assets

	mu       sync.Mutex
	conns    map[*conn]struct{}
	active   int // connections admitted, handshakes included (MaxConnections)
	refused  int // upgrades refused by MaxConnections since the last log
	lastWarn time.Time
	shutdown bool
	wg       sync.WaitGroup // one per connection being served
}

// NewServer returns the websocket endpoint of router, serving
// [RoutesPath], the JavaScript client ([ScriptPath], [ModulePath],
// [TypeScriptPath]), the routes module made from the router's
// [chat.Router.Manifest] ([RoutesModulePath], [RoutesTypeScriptPath],
// [QuarkusAPIPath]) and the import map script ([ImportMapPath]). opts may
// be nil.
func NewServer(router *chat.Router, opts *ServerOptions) *Server {
	return &Server{
		router: router,
		opts:   opts.withDefaults(),
		conns:  map[*conn]struct{}{},
		assets: newAssets(router),
	}
}

// ServeHTTP serves the websocket endpoint and the JavaScript client.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, RoutesPath):
		s.serveWebsocket(w, r)
	case strings.HasSuffix(p, ScriptPath):
		// One URL, two forms: the classic script of the Quarkus client,
		// or the ES module newer Quarkus versions serve there.
		k := assetScript
		if wantsModule(r) {
			k = assetScriptModule
		}
		s.assets.serve(w, r, k, "Sec-Fetch-Mode, Sec-Fetch-Dest")
	case strings.HasSuffix(p, ModulePath):
		s.assets.serve(w, r, assetModule, "")
	case strings.HasSuffix(p, TypeScriptPath):
		s.assets.serve(w, r, assetTypes, "")
	case strings.HasSuffix(p, RoutesModulePath):
		s.assets.serve(w, r, assetRoutes, "")
	case strings.HasSuffix(p, RoutesTypeScriptPath):
		s.assets.serve(w, r, assetRoutesTypes, "")
	case strings.HasSuffix(p, QuarkusAPIPath):
		s.assets.serve(w, r, assetQuarkusAPI, "")
	case strings.HasSuffix(p, ImportMapPath):
		s.assets.serve(w, r, assetImportMap, "")
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) serveWebsocket(w http.ResponseWriter, r *http.Request) {
	var principal chat.Principal
	if s.opts.Authenticator != nil {
		p, err := s.opts.Authenticator(r)
		if err != nil {
			s.opts.Logger.InfoContext(r.Context(), "ws: authentication failed", "remote", r.RemoteAddr, "err", err)
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
	if limit := s.opts.MaxConnections; limit > 0 && s.active >= limit {
		refused := s.refusedLocked()
		s.mu.Unlock()
		if refused > 0 {
			s.opts.Logger.WarnContext(r.Context(), "ws: refused connections: too many open; ServerOptions.MaxConnections allows more",
				"max", limit, "refused", refused, "remote", r.RemoteAddr)
		}
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return
	}
	s.active++
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	served := false // the connection's goroutine releases its slot
	defer func() {
		if !served {
			s.releaseSlot()
		}
	}()

	hw := &hijackCapture{ResponseWriter: w, corks: &s.pools.corks, timeout: s.opts.WriteTimeout}
	// The socket, once hijacked. The callbacks must not hold hw: it holds
	// net/http's buffers of the request (BenchmarkIdleMemory).
	var sock *tcpConn
	wc, err := websocket.Accept(hw, r, &websocket.AcceptOptions{
		OriginPatterns: s.opts.OriginPatterns,
		// A control frame was read: the reader may be at a frame boundary.
		OnPingReceived: func(context.Context, []byte) bool { sock.atBoundary(); return true },
		OnPongReceived: func(context.Context, []byte) { sock.atBoundary() },
	})
	if err != nil {
		// Accept has answered (403 for a foreign origin, 400 for a bad handshake).
		if origin := r.Header.Get("Origin"); crossOrigin(origin, r.Host) {
			// Most often a page served from another host or port than
			// the endpoint, which the application meant to allow.
			s.opts.Logger.WarnContext(r.Context(), "ws: refused a cross-origin connection; allow its origin with ServerOptions.OriginPatterns",
				"origin", origin, "host", r.Host, "remote", r.RemoteAddr, "err", err)
			return
		}
		s.opts.Logger.InfoContext(r.Context(), "ws: upgrade refused", "remote", r.RemoteAddr, "origin", r.Header.Get("Origin"), "err", err)
		return
	}
	sock = hw.conn
	wc.SetReadLimit(s.opts.MaxFrameSize)

	ctx := context.Background()
	if principal != nil {
		ctx = chat.WithPrincipal(ctx, principal)
	}
	c := newConn(ctx, s, wc, hw.conn, r.RemoteAddr)
	s.mu.Lock()
	if s.shutdown { // Shutdown began during the handshake
		s.mu.Unlock()
		wc.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	served = true

	// The connection is served on a goroutine of its own (its waiter), so
	// that the HTTP server's state for this request is freed.
	go func() {
		defer s.wg.Done()
		c.serve()
		s.mu.Lock()
		delete(s.conns, c)
		s.active--
		s.mu.Unlock()
	}()
}

// releaseSlot frees the MaxConnections slot of an upgrade that did not
// become a connection.
func (s *Server) releaseSlot() {
	s.mu.Lock()
	s.active--
	s.mu.Unlock()
}

// refusedLocked counts an upgrade refused by MaxConnections and returns
// the number to log now (0: none). The server logs at most one WARN a
// second, with the number refused since the last one, so that a flood of
// connections does not flood the logs. s.mu is held.
func (s *Server) refusedLocked() int {
	s.refused++
	now := time.Now()
	if now.Sub(s.lastWarn) < time.Second {
		return 0
	}
	n := s.refused
	s.refused, s.lastWarn = 0, now
	return n
}

// Shutdown stops the endpoint gracefully: new connections are refused,
// requests received from now on fail with "ShuttingDown", the requests in
// progress and queued finish, then every session is ended (its scopes and
// chat memory destroyed) and every connection closed with status 1001
// (going away). It returns nil once all that is done.
//
// If ctx ends first, Shutdown cancels the context of the requests still
// running, drops the connections, releases the leases of the durable
// conversations still served here (taking at most [ReleaseTimeout]; see
// [chat.Router.ReleaseLeases]) and returns ctx's error, like
// http.Server.Shutdown: it does not wait for routes or tools that ignore
// their context. Their sessions are cleaned up in the background when
// they return, and nothing they send reaches a client. The released
// conversations are resumed at once on another node, where their clients
// send the cut requests again, rather than after the lease's time to live:
// the process may exit as soon as Shutdown returns.
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
		s.workers.close()
		return nil
	case <-ctx.Done():
	}
	for _, c := range s.stopConns() {
		c.abort()
		c.abortTurns()
	}
	s.workers.close()
	s.releaseLeases(ctx, done)
	return fmt.Errorf("ws: shutdown: %w", ctx.Err())
}

// ReleaseTimeout bounds the release of the leases of the conversations a
// [Server.Shutdown] cut short ([chat.Router.ReleaseLeases]).
const ReleaseTimeout = 2 * time.Second

// releaseLeases lets go of the conversations a cut shutdown leaves
// served here, so that they do not stay leased to a process that exits:
// those still served (their turns cut, or stuck in a route that ignores
// its context) at once, then it waits, within ReleaseTimeout, for the
// sessions already ending to detach theirs (closed done: every connection
// has been torn down).
func (s *Server) releaseLeases(ctx context.Context, done <-chan struct{}) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	n, err := s.router.ReleaseLeases(rctx)
	if err != nil {
		s.opts.Logger.WarnContext(rctx, "ws: shutdown cut short: releasing the leases of the conversations served here", "released", n, "err", err)
	} else if n > 0 {
		s.opts.Logger.InfoContext(rctx, "ws: shutdown cut short: released the conversations served here for other nodes", "released", n)
	}
	select {
	case <-done:
	case <-rctx.Done():
		s.opts.Logger.WarnContext(rctx, "ws: shutdown cut short: sessions still ending after the release timeout", "timeout", ReleaseTimeout)
	}
}

// Close closes every connection at once (no close handshake: clients see
// the connection lost), cancelling the requests in progress; it ends every
// session and waits for the cleanup, that is for the routes running to
// return. To bound that wait when a route may ignore its context, call
// Shutdown with a context that ends soon instead.
func (s *Server) Close() error {
	for _, c := range s.stopConns() {
		c.abort()
		c.abortTurns()
	}
	s.wg.Wait()
	s.workers.close()
	return nil
}

// stopConns refuses new connections and returns the open ones.
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
