package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// maxBodyBytes bounds the size of a request body a server reads.
const maxBodyBytes = 8 << 20

// created is the fixed "created" timestamp of every response, so that
// responses are deterministic (2025-01-01T00:00:00Z).
const created = 1735689600

// loopback is the HTTP machinery every server of this package shares: the
// loopback httptest.Server, the script engine, shutdown, and the steps of a
// call that do not depend on the wire format (reading the bounded body,
// playing the script, the Delay, and the scripted failures). Each server
// embeds it, so Requests, Calls, Reset, HTTPClient and Close are the same
// on all of them.
type loopback struct {
	cfg       config
	eng       engine
	ts        *httptest.Server
	closed    chan struct{}
	closeOnce sync.Once
}

// init prepares l and starts its httptest.Server with h. rules are the
// prompt-cache rules of the wire (see Options.PromptCache); toolID formats
// generated tool-call ids (nil: call_n).
func (l *loopback) init(script Script, opts *Options, rules CacheRules, toolID func(n int) string, h http.Handler) {
	l.cfg = newConfig(opts)
	l.eng = engine{script: script, toolID: toolID, cache: newPromptCache(l.cfg.cache, rules)}
	l.closed = make(chan struct{})
	l.ts = httptest.NewServer(h)
}

// HTTPClient returns an HTTP client for the server whose idle connections
// Close closes. Wrap its Transport to observe or alter the exchanges.
func (l *loopback) HTTPClient() *http.Client { return l.ts.Client() }

// Close shuts the server down. Requests waiting in a Delay end at once with
// a 503; a stream waiting in a ChunkDelay is cut off. Close returns when
// every handler has returned. Close may be called more than once.
func (l *loopback) Close() {
	l.closeOnce.Do(func() {
		close(l.closed)
		l.ts.Close()
	})
}

// Requests returns a copy of the requests recorded so far, in call order.
// Requests the server rejects (bad headers, malformed bodies, conversations
// the provider would refuse) are not recorded.
func (l *loopback) Requests() []Request { return l.eng.recorded() }

// Calls returns the number of requests recorded so far.
func (l *loopback) Calls() int { return l.eng.calls() }

// Reset forgets the recorded requests, restarts generated tool-call ids at
// 1 and rewinds the script if it has a Reset method.
func (l *loopback) Reset() { l.eng.reset() }

// errorWriter writes an error response in one wire's format.
type errorWriter func(w http.ResponseWriter, status int, message string)

// readBody reads the body of a POST request, at most maxBodyBytes. When the
// method is wrong or the body cannot be read, it answers with fail and
// returns false.
func readBody(w http.ResponseWriter, r *http.Request, fail errorWriter) ([]byte, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("llmtest: use POST for %s", r.URL.Path))
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		status := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status = http.StatusRequestEntityTooLarge
		}
		fail(w, status, fmt.Sprintf("llmtest: reading the request body: %v", err))
		return nil, false
	}
	return body, true
}

// decodeStrictJSON decodes body, one JSON value and nothing after it, into v.
func decodeStrictJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("malformed JSON body: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("malformed JSON body: data after the top-level value")
	}
	return nil
}

// isJSONObject reports whether raw is a JSON object.
func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{' && json.Valid(raw)
}

// objectArguments returns the arguments of a scripted tool call for a wire
// whose calls carry a JSON object (Anthropic, Gemini, Ollama): args itself
// when it is one, else {"invalid_arguments": args}, so that a script's
// invalid arguments still reach the client, recognizably.
func objectArguments(args string) json.RawMessage {
	if raw := json.RawMessage(args); isJSONObject(raw) {
		return raw
	}
	b, _ := json.Marshal(map[string]string{"invalid_arguments": args})
	return b
}

// play runs the wire-independent part of a call: it records req, asks the
// script for the reply (adapted by shape, which may be nil), waits for the
// reply's Delay and plays the scripted failures — a dropped connection, a
// Status, or an Err that cannot be streamed first. It returns the reply to
// send, or nil when the call has been answered already.
func (l *loopback) play(w http.ResponseWriter, r *http.Request, req *Request, shape func(*Reply), fail errorWriter) *resolved {
	rep, err := l.eng.play(req, shape)
	if err != nil {
		fail(w, http.StatusInternalServerError, err.Error())
		return nil
	}
	if err := wait(r.Context(), rep.Delay, l.closed); err != nil {
		// The client is gone, or the server is closing.
		fail(w, http.StatusServiceUnavailable, err.Error())
		return nil
	}
	switch {
	case rep.Disconnect:
		panic(http.ErrAbortHandler) // the client sees the connection drop
	case rep.failing():
		if rep.RetryAfter > 0 {
			secs := (rep.RetryAfter + time.Second - 1) / time.Second
			w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
			w.Header().Set("Retry-After-Ms", strconv.FormatInt(rep.RetryAfter.Milliseconds(), 10))
		}
		fail(w, rep.Status, rep.statusMessage())
		return nil
	case rep.Err != nil && (!req.Stream || len(rep.chunks) == 0 && len(rep.reasoningChunks) == 0):
		fail(w, http.StatusInternalServerError, rep.Err.Error())
		return nil
	}
	return rep
}

// keepReasoning returns the shape of a reply for a wire that sends the
// reasoning only when asked: nil when keep is set, else a shape that drops
// it.
func keepReasoning(keep bool) func(*Reply) {
	if keep {
		return nil
	}
	return func(r *Reply) { r.Reasoning = "" }
}

// model is the model name to report for req.
func (l *loopback) model(req *Request) string {
	if req.Model != "" {
		return req.Model
	}
	return l.cfg.name
}

// streamWriter writes the events of a streamed answer. Any failure to
// write, a cancelled request or a closing server aborts the handler (and so
// the connection), so the client sees a read error rather than a cleanly
// ended, truncated stream.
type streamWriter struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	ctx    context.Context
	closed <-chan struct{}
	delay  time.Duration
	n      int
}

// startStream sends the 200 header of a stream of the given content type.
// Every pause after the first waits for rep.ChunkDelay.
func (l *loopback) startStream(w http.ResponseWriter, r *http.Request, contentType string, rep *resolved) *streamWriter {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &streamWriter{
		w: w, rc: http.NewResponseController(w), ctx: r.Context(), closed: l.closed, delay: rep.ChunkDelay,
	}
}

// write writes b and flushes it.
func (s *streamWriter) write(b []byte) {
	_, err := s.w.Write(b)
	if err == nil {
		err = s.rc.Flush()
	}
	if err != nil {
		panic(http.ErrAbortHandler)
	}
}

// pause marks the start of a streamed chunk: every chunk after the first
// waits for the reply's ChunkDelay.
func (s *streamWriter) pause() {
	s.n++
	if s.n == 1 {
		return
	}
	if err := wait(s.ctx, s.delay, s.closed); err != nil {
		panic(http.ErrAbortHandler)
	}
}

// abort cuts the connection off after what was written, as a provider
// failing mid-stream does.
func (s *streamWriter) abort() { panic(http.ErrAbortHandler) }

// ModelName returns the model name the server reports when a request names
// none (see [Options.ModelName]).
func (l *loopback) ModelName() string { return l.cfg.name }
