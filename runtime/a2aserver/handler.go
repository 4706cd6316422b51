package a2aserver

import (
	"context"
	"crypto/cipher"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// Defaults of [Options].
const (
	// DefaultMaxBodyBytes bounds a JSON-RPC request body.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultMaxBufferedEvents bounds the events of a stream waiting for
	// a slow client.
	DefaultMaxBufferedEvents = 256
	// DefaultMaxTasks is the number of tasks a context keeps.
	DefaultMaxTasks = 20
	// DefaultMaxHistory is the number of messages a task keeps.
	DefaultMaxHistory = 40
	// DefaultContextTimeout is how long an idle context stays in this
	// process.
	DefaultContextTimeout = 30 * time.Minute
	// DefaultCancelWait is how long a cancel waits for the task to stop.
	DefaultCancelWait = 10 * time.Second
	// DefaultMaxContexts bounds the contexts a handler holds.
	DefaultMaxContexts = 10000
)

// CardPath is the path of the Agent Card, under the handler's base URL.
const CardPath = "/.well-known/agent-card.json"

// ErrClosed is the error of a request on a closed [Handler].
var ErrClosed = errors.New("a2aserver: the handler is closed")

// ErrTooManyContexts is the error of a message that would start a
// context while the handler holds [Options.MaxContexts] of them.
var ErrTooManyContexts = errors.New("a2aserver: too many contexts")

// ErrSlowClient is the cause logged when a stream is cut because its
// client did not read its events while the buffer filled. The task goes
// on: the client can get it or subscribe again.
var ErrSlowClient = errors.New("a2aserver: the client does not read the stream's events")

// Options configures a [Handler]. A nil *Options, like the zero value,
// gives the defaults.
type Options struct {
	// Name, Description and Version describe the agent in its card.
	// Empty: "chatgen", a sentence naming the routes, and "1".
	Name, Description, Version string
	// URL is the public URL of the JSON-RPC endpoint the card lists.
	// Empty: the URL the card was fetched from, less CardPath.
	URL string
	// Route is the route a context's conversation starts on; empty is
	// the router's default route.
	Route string
	// Authenticator establishes the principal of each request, as the
	// websocket endpoint's (ws.ServerOptions.Authenticator) does: a ws
	// Authenticator can be given as it is. A nil principal with a nil
	// error is anonymous; an error answers 401. Nil: every request is
	// anonymous. The card is served to anyone.
	Authenticator func(r *http.Request) (chat.Principal, error)
	// Store is the router's conversation store (chat.RouterOptions.Store),
	// read to answer GetTask, ListTasks and tasks/get for a context this
	// process does not hold (after a restart, or on another node). A
	// task saved when it started and not since (its request has not
	// ended) is answered working while a node holds the conversation's
	// lease, and failed, as interrupted, once none does: to learn it the
	// handler takes the lease for a moment and lets go of it at once.
	// Nil: only the contexts held here are known.
	Store chatstore.ConversationStore
	// TokenKey, an AES key of 16, 24 or 32 bytes, lets the handlers that
	// share it (and Store) continue the contexts the others started:
	// the resume token of each context's conversation is saved with it,
	// sealed with the key, and a handler that does not hold a context
	// resumes its conversation from the store (after the first node's
	// lease ends, when that node died). Nil: a context is served only by
	// the process that started it, and a message on one held elsewhere
	// is answered -32001.
	TokenKey []byte
	// Logger logs failed tasks. Nil means [slog.Default].
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body (0: [DefaultMaxBodyBytes];
	// negative: no bound); a larger one is answered with a JSON-RPC
	// error (-32600).
	MaxBodyBytes int64
	// MaxBufferedEvents bounds the events of a stream waiting for its
	// client (0: [DefaultMaxBufferedEvents]); a stream whose client lets
	// them fill is cut, the task going on.
	MaxBufferedEvents int
	// MaxTasks bounds the tasks a context keeps (0: [DefaultMaxTasks]):
	// the oldest finished one goes first.
	MaxTasks int
	// MaxHistory bounds the messages each task keeps (0:
	// [DefaultMaxHistory]): the oldest go first.
	MaxHistory int
	// ContextTimeout lets go of a context idle that long (0:
	// [DefaultContextTimeout]; negative: never): its conversation is
	// detached, so that on a router with a store its state and task
	// history stay there, get answers from it, and with TokenKey its next
	// message resumes it; without a store the context is gone.
	ContextTimeout time.Duration
	// MaxContexts bounds the contexts held in this process (0:
	// [DefaultMaxContexts]); a message that would start another is
	// answered with a JSON-RPC error (-32603) until idle ones end.
	MaxContexts int
	// CancelWait is how long a cancel waits for its task to stop (0:
	// [DefaultCancelWait]).
	CancelWait time.Duration
}

// A Handler serves the routes of a [chat.Router] as an A2A agent: see the
// package documentation. Build it with [New]; it is safe for concurrent
// use.
type Handler struct {
	router *chat.Router
	opts   Options
	log    *slog.Logger
	skills []skill

	aead     cipher.AEAD // seals resume tokens; nil without Options.TokenKey
	resumeMu sync.Mutex  // one resume at a time

	mu       sync.Mutex
	closed   bool
	contexts map[string]*convContext
	wg       sync.WaitGroup // the requests of tasks in progress
}

// New returns a handler serving router as an A2A agent. opts may be nil.
func New(router *chat.Router, opts *Options) (*Handler, error) {
	if router == nil {
		return nil, errors.New("a2aserver: New needs a router")
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
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxBufferedEvents <= 0 {
		o.MaxBufferedEvents = DefaultMaxBufferedEvents
	}
	if o.MaxTasks <= 0 {
		o.MaxTasks = DefaultMaxTasks
	}
	if o.MaxHistory <= 0 {
		o.MaxHistory = DefaultMaxHistory
	}
	if o.ContextTimeout == 0 {
		o.ContextTimeout = DefaultContextTimeout
	}
	if o.MaxContexts <= 0 {
		o.MaxContexts = DefaultMaxContexts
	}
	if o.CancelWait <= 0 {
		o.CancelWait = DefaultCancelWait
	}
	aead, err := newAEAD(o.TokenKey)
	if err != nil {
		return nil, err
	}
	h := &Handler{router: router, opts: o, log: o.Logger, aead: aead, contexts: map[string]*convContext{}}
	h.skills = skillsOf(router.Manifest())
	if o.Description == "" {
		h.opts.Description = describeAgent(h.skills)
	}
	return h, nil
}

// ServeHTTP serves the Agent Card to a GET of a path ending in CardPath,
// and JSON-RPC to a POST.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, CardPath) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the agent card is read with GET", http.StatusMethodNotAllowed)
			return
		}
		h.serveCard(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "A2A JSON-RPC requests are POSTed", http.StatusMethodNotAllowed)
		return
	}
	var p chat.Principal
	if h.opts.Authenticator != nil {
		var err error
		if p, err = h.opts.Authenticator(r); err != nil {
			h.log.InfoContext(r.Context(), "a2aserver: authentication failed", "remote", r.RemoteAddr, "err", err)
			writeJSON(w, http.StatusUnauthorized, errorResponse(nil, &rpcError{Code: codeUnauthenticated, Message: "unauthenticated"}))
			return
		}
	}
	body := io.Reader(r.Body)
	if h.opts.MaxBodyBytes > 0 {
		body = http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes)
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusOK, errorResponse(nil, &rpcError{Code: codeInvalidRequest,
				Message: fmt.Sprintf("Invalid Request: the request is larger than %d bytes", h.opts.MaxBodyBytes)}))
			return
		}
		writeJSON(w, http.StatusBadRequest, errorResponse(nil, &rpcError{Code: codeParseError, Message: "Parse error: the body could not be read"}))
		return
	}
	req, rerr := parseRequest(raw)
	if rerr != nil {
		writeJSON(w, http.StatusOK, errorResponse(req.idOrNull(), rerr))
		return
	}
	v, ok := versionOf(r.Header.Get(versionHeader))
	if !ok {
		writeJSON(w, http.StatusOK, errorResponse(req.ID, &rpcError{Code: codeVersionNotSupported,
			Message: fmt.Sprintf("Version not supported: %q (this agent serves %s and %s)", r.Header.Get(versionHeader), version1, version03)}))
		return
	}
	call := &call{h: h, w: w, r: r, p: p, v: v, req: req}
	call.serve()
}

// writeJSON writes v as a JSON response of status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(errorResponse(nil, &rpcError{Code: codeInternal, Message: "Internal error: the response could not be encoded"}))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// Contexts returns the number of contexts the handler holds now.
func (h *Handler) Contexts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.contexts)
}

// Close refuses new requests, waits for the tasks in progress to end and
// lets go of every context's conversation (a durable one is detached: its
// saved state stays in the store). When ctx is done first, the tasks
// still running are cancelled with the cause [ErrClosed] and Close
// returns ctx's error.
func (h *Handler) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		h.cancelAll(ErrClosed)
		return fmt.Errorf("a2aserver: waiting for the tasks in progress: %w", ctx.Err())
	}
	h.mu.Lock()
	contexts := h.contexts
	h.contexts = map[string]*convContext{}
	h.mu.Unlock()
	for _, cc := range contexts {
		cc.run.Lock()
		if cc.timer != nil {
			cc.timer.Stop()
		}
		h.closeContext(cc)
		cc.run.Unlock()
	}
	return nil
}

// cancelAll cancels the requests of the tasks in progress with cause.
func (h *Handler) cancelAll(cause error) {
	h.mu.Lock()
	ccs := make([]*convContext, 0, len(h.contexts))
	for _, cc := range h.contexts {
		ccs = append(ccs, cc)
	}
	h.mu.Unlock()
	for _, cc := range ccs {
		cc.mu.Lock()
		for _, tk := range cc.tasks {
			if tk.running {
				tk.cancel(cause)
			}
		}
		cc.mu.Unlock()
	}
}
