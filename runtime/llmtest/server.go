package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
)

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
//   - POST /v1/embeddings, answered without the script with deterministic
//     vectors ([Embed]; [EmbeddingDimensions] unless the request sets
//     dimensions), as floats or base64, checked as OpenAI checks it
//     (model and input required, no unknown field, no empty string in an
//     input array); [Server.EmbeddingCalls] counts the calls. Use it with
//     embeddings.NewEmbedder over the client, as the vector path of a
//     retriever needs.
//   - POST /v1/moderations, answered without the script from
//     [ModerationScores], checked as OpenAI checks it: a bearer token (else
//     401), input required (a string, a non-empty array of strings, or of
//     {"type":"text","text"} and at most one {"type":"image_url",
//     "image_url":{"url"}} parts, these with an omni model only), model
//     optional and one of OpenAI's moderation models (else 404), no
//     unknown field; [Server.ModerationCalls] counts the calls.
//   - GET /v1/models, listing one model.
//
// Failures use the OpenAI error body {"error":{"message","type","param",
// "code"}}: a malformed body or a conversation the API would reject (see
// [Options.NoHistoryValidation]) is a 400 that the script never sees; a script
// error is a 500; [Reply.Status] and [Reply.Err] fail as documented there.
//
// A Server is safe for concurrent use. Close it when done.
type Server struct {
	// URL is the base URL of the API, ending in /v1 (such as
	// http://127.0.0.1:38461/v1): pass it to openai.WithBaseURL as it is.
	URL string

	loopback
	embeddingEndpoint
	moderationEndpoint
}

// NewServer starts a Server answering from script.
func NewServer(script Script, opts *Options) *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.handleChat)
	mux.HandleFunc("/v1/models", s.handleModels)
	mux.HandleFunc("/v1/embeddings", s.handleEmbeddings)
	mux.HandleFunc("/v1/moderations", s.handleModerations)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("llmtest: unknown path %s (the API is under /v1)", r.URL.Path))
	})
	s.init(script, opts, CacheRulesOpenAI, nil, mux)
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
	s.serveChat(w, r, &openAIDialect)
}

// chatDialect is what differs between the OpenAI chat-completions wire and
// the stricter providers that speak a variant of it (Mistral).
type chatDialect struct {
	// fail writes an error body.
	fail errorWriter
	// validate returns the provider's message for a conversation it
	// rejects, or ""; it runs when history validation is on.
	validate func(msgs []llms.MessageContent) string
	// authorize checks the request's credentials; it returns false after
	// answering when they are missing. Nil accepts every request.
	authorize func(w http.ResponseWriter, r *http.Request) bool
	// wholeToolCalls streams all tool calls whole in one delta (Mistral)
	// instead of a delta per call followed by argument fragments (OpenAI).
	wholeToolCalls bool
	// usageInFinish puts the usage in the finish chunk of every stream
	// (Mistral) instead of a separate chunk when the request asked for it
	// with stream_options.include_usage (OpenAI).
	usageInFinish bool
	// reasoning sends Reply.Reasoning as reasoning_content, and reasoning
	// tokens in the usage.
	reasoning bool
}

// openAIDialect is the OpenAI chat-completions wire.
var openAIDialect = chatDialect{fail: writeError, validate: validateHistory, reasoning: true}

// serveChat serves a chat-completions request in dialect d.
func (l *loopback) serveChat(w http.ResponseWriter, r *http.Request, d *chatDialect) {
	if d.authorize != nil && !d.authorize(w, r) {
		return
	}
	body, ok := readBody(w, r, d.fail)
	if !ok {
		return
	}
	wr, msgs, err := decodeRequest(body)
	if err != nil {
		d.fail(w, http.StatusBadRequest, "llmtest: invalid request: "+err.Error())
		return
	}
	if l.cfg.validate {
		if msg := d.validate(msgs); msg != "" {
			d.fail(w, http.StatusBadRequest, msg)
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

	rep := l.play(w, r, req, keepReasoning(d.reasoning), d.fail)
	switch {
	case rep == nil:
	case req.Stream:
		l.streamChat(w, r, req, rep, d, d.usageInFinish || wr.StreamOptions != nil && wr.StreamOptions.IncludeUsage)
	default:
		writeJSON(w, http.StatusOK, l.chatResponse(req, rep, d))
	}
}

// completionID is the deterministic id of the completion answering req.
func completionID(req *Request) string { return fmt.Sprintf("chatcmpl-llmtest-%d", req.Index+1) }

// chatResponse builds the non-streamed completion of rep.
func (l *loopback) chatResponse(req *Request, rep *resolved, d *chatDialect) *wireResponse {
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
		Model:   l.model(req),
		Choices: []wireChoice{{Index: 0, Message: msg, FinishReason: rep.StopReason}},
		Usage:   usageOf(rep, d.reasoning),
	}
}

// streamChat writes rep as server-sent events. When rep.Err is set, or
// when the client goes away or the server closes mid-stream, it aborts the
// connection after the chunks written so far, so the client sees a read
// error rather than a cleanly ended, truncated stream.
func (l *loopback) streamChat(w http.ResponseWriter, r *http.Request, req *Request, rep *resolved, d *chatDialect, includeUsage bool) {
	sw := l.startStream(w, r, "text/event-stream", rep)
	chunk := func(dl delta, finish *string) wireChunk {
		return wireChunk{
			ID: completionID(req), Object: "chat.completion.chunk", Created: created, Model: l.model(req),
			Choices: []chunkChoice{{Index: 0, Delta: dl, FinishReason: finish}},
		}
	}
	send := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			sw.abort()
		}
		sw.write(fmt.Appendf(nil, "data: %s\n\n", b))
	}
	sendDelta := func(dl delta) {
		sw.pause()
		send(chunk(dl, nil))
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
		sw.abort()
	}
	if d.wholeToolCalls && len(rep.ToolCalls) > 0 {
		var calls []deltaToolCall
		for i, tc := range rep.ToolCalls {
			calls = append(calls, deltaToolCall{
				Index: i, ID: tc.ID, Type: "function", Function: deltaFunction{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		sendDelta(delta{ToolCalls: calls})
	} else {
		for i, tc := range rep.ToolCalls {
			sendDelta(delta{ToolCalls: []deltaToolCall{{
				Index: i, ID: tc.ID, Type: "function", Function: deltaFunction{Name: tc.Name},
			}}})
			for _, frag := range splitFragments(tc.Arguments) {
				sendDelta(delta{ToolCalls: []deltaToolCall{{Index: i, Function: deltaFunction{Arguments: frag}}}})
			}
		}
	}
	finish := chunk(delta{}, &rep.StopReason)
	if d.usageInFinish {
		finish.Usage = usageOf(rep, d.reasoning)
	}
	send(finish)
	if includeUsage && !d.usageInFinish {
		u := chunk(delta{}, nil)
		u.Choices = []chunkChoice{}
		u.Usage = usageOf(rep, d.reasoning)
		send(u)
	}
	if _, err := io.WriteString(w, "data: [DONE]\n\n"); err == nil {
		_ = sw.rc.Flush()
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
