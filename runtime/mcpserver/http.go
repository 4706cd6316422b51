package mcpserver

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/internal/principal"
)

// sessionHeader is the header of streamable HTTP that names a session.
const sessionHeader = "Mcp-Session-Id"

// Handler returns the streamable HTTP endpoint of the server (the MCP
// 2025-03-26 transport and later): mount it at the path clients are
// given, such as /mcp. Every request is authenticated with
// [Options.Authenticator] (an error answers 401); the principal of the
// request that opens a session is the session's, and a request naming a
// session another principal opened is answered 403. Request bodies are
// bounded by [Options.MaxMessageBytes] (413), idle sessions end after
// [Options.SessionTimeout], and DELETE ends a session and its
// conversations.
func (s *Server) Handler() http.Handler {
	timeout := s.opts.SessionTimeout
	if timeout < 0 {
		timeout = 0
	}
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger:              s.log,
		SessionTimeout:      timeout,
		MaxRequestBodyBytes: s.opts.MaxMessageBytes,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p chat.Principal
		if s.opts.Authenticator != nil {
			var err error
			if p, err = s.opts.Authenticator(r); err != nil {
				s.log.InfoContext(r.Context(), "mcpserver: authentication failed", "remote", r.RemoteAddr, "err", err)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		if id := r.Header.Get(sessionHeader); id != "" {
			s.mu.Lock()
			o, known := s.owners[id]
			s.mu.Unlock()
			if known && !principal.Same(o.p, p) {
				s.log.WarnContext(r.Context(), "mcpserver: a request for another principal's session", "remote", r.RemoteAddr)
				http.Error(w, "the session belongs to another principal", http.StatusForbidden)
				return
			}
			sdk.ServeHTTP(w, r.WithContext(chat.WithPrincipal(r.Context(), p)))
			return
		}
		// A request opening a session: the session id the SDK answers
		// with is recorded as the principal's.
		rec := &ownerRecorder{ResponseWriter: w, s: s, p: p}
		sdk.ServeHTTP(rec, r.WithContext(chat.WithPrincipal(r.Context(), p)))
		s.forgetUntracked(rec.id)
	})
}

// forgetUntracked forgets the owner of the session id when no session of
// that id is tracked once the request that opened it was answered: its
// initialize failed, or it ended already.
func (s *Server) forgetUntracked(id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.sessions {
		if ss.ID() == id {
			return
		}
	}
	delete(s.owners, id)
}

// An ownerRecorder records the session id of the response that opens a
// session as owned by its principal, before the client can see it.
type ownerRecorder struct {
	http.ResponseWriter
	s     *Server
	p     chat.Principal
	wrote bool
	id    string // the session id recorded
}

func (o *ownerRecorder) record() {
	if o.wrote {
		return
	}
	o.wrote = true
	if id := o.Header().Get(sessionHeader); id != "" {
		o.id = id
		o.s.mu.Lock()
		o.s.owners[id] = owner{p: o.p}
		o.s.mu.Unlock()
	}
}

// WriteHeader implements http.ResponseWriter.
func (o *ownerRecorder) WriteHeader(code int) {
	o.record()
	o.ResponseWriter.WriteHeader(code)
}

// Write implements http.ResponseWriter.
func (o *ownerRecorder) Write(b []byte) (int, error) {
	o.record()
	return o.ResponseWriter.Write(b)
}

// Flush implements http.Flusher: the SDK streams events.
func (o *ownerRecorder) Flush() {
	o.record()
	if f, ok := o.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (o *ownerRecorder) Unwrap() http.ResponseWriter { return o.ResponseWriter }
