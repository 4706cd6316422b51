package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms/openai"
)

// maxBodyBytes bounds the size of a request body the server reads.
const maxBodyBytes = 8 << 20

// created is the fixed "created" timestamp of every response, so that
// responses are deterministic (2025-01-01T00:00:00Z).
const created = 1735689600

// Server is an OpenAI-compatible chat-completions server on a loopback
// [httptest.Server], answering from a [Script].
//
// It serves:
//
//   - POST /v1/chat/completions, non-streamed (choices[0].message with
//     content, tool_calls and reasoning_content, finish_reason, usage) and
//     streamed as server-sent events: a first delta with the role; the
//     reasoning_content deltas; the content deltas; per tool call, a first
//     delta with index, id, type "function", the name and empty arguments,
//     then deltas with only index and an arguments fragment of at most
//     8 bytes (never empty, and without type, which langchaingo's client
//     would take for a new call); a chunk with finish_reason; when the
//     request set stream_options.include_usage, a usage chunk with
//     "choices": []; and "data: [DONE]". Tool calls are sent one after
//     another, never interleaved: langchaingo's client ignores the index and
//     appends fragments to the last call.
//   - GET /v1/models, listing one model.
//
// Failures use the OpenAI error body {"error":{"message","type","param",
// "code"}}: a malformed body or a conversation the API would reject (see
// [WithHistoryValidation]) is a 400 that the script never sees; a script
// error is a 500; [Reply.Status] and [Reply.Err] fail as documented there.
//
// A Server is safe for concurrent use. Close it when done.
type Server struct {
	// URL is the base URL of the API, ending in /v1 (such as
	// http://127.0.0.1:38461/v1): pass it to openai.WithBaseURL as it is.
	URL string

	cfg       config
	eng       engine
	ts        *httptest.Server
	closed    chan struct{}
	closeOnce sync.Once
}

// NewServer starts a Server answering from script.
func NewServer(script Script, opts ...Option) *Server {
	s := &Server{cfg: newConfig(opts), eng: engine{script: script}, closed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.handleChat)
	mux.HandleFunc("/v1/models", s.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("llmtest: unknown path %s (the API is under /v1)", r.URL.Path))
	})
	s.ts = httptest.NewServer(mux)
	s.URL = s.ts.URL + "/v1"
	return s
}

// Client returns langchaingo's OpenAI client pointed at the server, with
// token "test", the server's model name and an HTTP client whose idle
// connections Close closes. opts are applied after these and may override
// them.
func (s *Server) Client(opts ...openai.Option) (*openai.LLM, error) {
	base := []openai.Option{
		openai.WithBaseURL(s.URL),
		openai.WithToken("test"),
		openai.WithModel(s.cfg.name),
		openai.WithHTTPClient(s.ts.Client()),
	}
	llm, err := openai.New(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("llmtest: creating the OpenAI client: %w", err)
	}
	return llm, nil
}

// HTTPClient returns the HTTP client [Server.Client] gives langchaingo's
// client: one whose idle connections Close closes. Wrap its Transport to
// observe or alter the exchanges.
func (s *Server) HTTPClient() *http.Client { return s.ts.Client() }

// Close shuts the server down. Requests waiting in a Delay end at once with
// a 503; a stream waiting in a ChunkDelay is cut off. Close returns when
// every handler has returned. Close may be called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.ts.Close()
	})
}

// Requests returns a copy of the requests recorded so far, in call order.
// Requests rejected with 400 are not recorded.
func (s *Server) Requests() []Request { return s.eng.recorded() }

// Calls returns the number of requests recorded so far.
func (s *Server) Calls() int { return s.eng.calls() }

// Reset forgets the recorded requests, restarts generated tool-call ids at
// call_1 and rewinds the script if it has a Reset method.
func (s *Server) Reset() { s.eng.reset() }

// handleModels serves GET /v1/models.
func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "llmtest: use GET for /v1/models")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": s.cfg.name, "object": "model", "created": created, "owned_by": "llmtest",
		}},
	})
}

// handleChat serves POST /v1/chat/completions.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "llmtest: use POST for /v1/chat/completions")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		status := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, status, fmt.Sprintf("llmtest: reading the request body: %v", err))
		return
	}
	wr, msgs, err := decodeRequest(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: invalid request: "+err.Error())
		return
	}
	if s.cfg.validate {
		if msg := validateHistory(msgs); msg != "" {
			writeError(w, http.StatusBadRequest, msg)
			return
		}
	}
	req := &Request{
		Model:      wr.Model,
		Messages:   msgs,
		Tools:      convertTools(wr.Tools),
		ToolChoice: wr.ToolChoice,
		Stream:     wr.Stream,
		JSONMode:   wr.ResponseFormat != nil && wr.ResponseFormat.Type == "json_object",
		MaxTokens:  wr.MaxCompletionTokens,
		Body:       body,
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = wr.MaxTokens
	}
	req.PromptTokens = EstimatePromptTokens(req.Messages, req.Tools)

	rep, err := s.eng.play(req)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if err := wait(r.Context(), rep.Delay, s.closed); err != nil {
		// The client is gone, or the server is closing.
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
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
		writeError(w, rep.Status, rep.statusMessage())
	case rep.Err != nil && (!req.Stream || len(rep.chunks) == 0 && len(rep.reasoningChunks) == 0):
		writeError(w, http.StatusInternalServerError, rep.Err.Error())
	case req.Stream:
		s.stream(w, r, req, rep, wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage)
	default:
		writeJSON(w, http.StatusOK, s.response(req, rep))
	}
}

// model is the model name to report for req.
func (s *Server) model(req *Request) string {
	if req.Model != "" {
		return req.Model
	}
	return s.cfg.name
}

// completionID is the deterministic id of the completion answering req.
func completionID(req *Request) string { return fmt.Sprintf("chatcmpl-llmtest-%d", req.Index+1) }

// response builds the non-streamed completion of rep.
func (s *Server) response(req *Request, rep *resolved) *wireResponse {
	msg := responseMessage{Role: "assistant", ReasoningContent: rep.Reasoning}
	if rep.content != "" || len(rep.ToolCalls) == 0 {
		msg.Content = &rep.content
	}
	for _, tc := range rep.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, wireToolCall{
			ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	return &wireResponse{
		ID:      completionID(req),
		Object:  "chat.completion",
		Created: created,
		Model:   s.model(req),
		Choices: []wireChoice{{Index: 0, Message: msg, FinishReason: rep.StopReason}},
		Usage:   usageOf(rep),
	}
}

// stream writes rep as server-sent events. When rep.Err is set, or when the
// client goes away or the server closes mid-stream, it aborts the
// connection after the chunks written so far, so the client sees a read
// error rather than a cleanly ended, truncated stream.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, req *Request, rep *resolved, includeUsage bool) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	chunk := func(d delta, finish *string) wireChunk {
		return wireChunk{
			ID: completionID(req), Object: "chat.completion.chunk", Created: created, Model: s.model(req),
			Choices: []chunkChoice{{Index: 0, Delta: d, FinishReason: finish}},
		}
	}
	send := func(v any) {
		b, err := json.Marshal(v)
		if err == nil {
			_, err = fmt.Fprintf(w, "data: %s\n\n", b)
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			panic(http.ErrAbortHandler)
		}
	}
	n := 0
	sendDelta := func(d delta) {
		n++
		if n > 1 {
			if err := wait(r.Context(), rep.ChunkDelay, s.closed); err != nil {
				panic(http.ErrAbortHandler)
			}
		}
		send(chunk(d, nil))
	}

	empty := ""
	send(chunk(delta{Role: "assistant", Content: &empty}, nil))
	for _, c := range rep.reasoningChunks {
		sendDelta(delta{ReasoningContent: c})
	}
	for _, c := range rep.chunks {
		sendDelta(delta{Content: &c})
	}
	if rep.Err != nil {
		panic(http.ErrAbortHandler)
	}
	for i, tc := range rep.ToolCalls {
		sendDelta(delta{ToolCalls: []deltaToolCall{{
			Index: i, ID: tc.ID, Type: "function", Function: deltaFunction{Name: tc.Name},
		}}})
		for _, frag := range splitFragments(tc.Arguments) {
			sendDelta(delta{ToolCalls: []deltaToolCall{{Index: i, Function: deltaFunction{Arguments: frag}}}})
		}
	}
	send(chunk(delta{}, &rep.StopReason))
	if includeUsage {
		u := chunk(delta{}, nil)
		u.Choices = []chunkChoice{}
		u.Usage = usageOf(rep)
		send(u)
	}
	if _, err := io.WriteString(w, "data: [DONE]\n\n"); err == nil {
		_ = rc.Flush()
	}
}

// writeError writes an OpenAI error body.
func writeError(w http.ResponseWriter, status int, message string) {
	typ, code := errorKind(status)
	writeJSON(w, status, wireError{Error: wireErrorDetail{Message: message, Type: typ, Code: code}})
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"message":"llmtest: encoding the response failed","type":"server_error","param":null,"code":null}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
