package llmtest

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// OllamaServer is an Ollama server on a loopback [httptest.Server],
// speaking Ollama's native API and answering from a [Script]. Point
// langchaingo's ollama client at it with ollama.WithServerURL(srv.URL).
//
// It serves:
//
//   - POST /api/chat: messages with roles system, user, assistant (content,
//     images, tool_calls with an arguments object) and tool (content,
//     tool_name); tools in the OpenAI form; options (num_predict is
//     recorded as MaxTokens); format ("json" is JSONMode); think (true or
//     a level) asks for the reply's Reasoning, sent as message.thinking.
//     The answer is streamed as NDJSON unless the request sets "stream":
//     false (Ollama streams by default): chunks of message.thinking, then
//     of message.content, then one chunk with all tool calls, then a final
//     object with done true, done_reason ("stop", or "length" for a
//     StopReason "length"; tool calls end with "stop", as Ollama says),
//     prompt_eval_count, eval_count and fixed durations. Non-streamed, one
//     object holds the whole message and the final fields.
//   - POST /api/pull: installs a model (NDJSON progress ending in
//     {"status":"success"}, or one object with "stream": false).
//   - GET /api/tags: lists the installed models.
//
// The server has one model installed, named by [Options.ModelName] (a name
// without a tag means name:latest, as in Ollama); a chat naming another
// model that was not pulled fails 404 with Ollama's text `model "x" not
// found, try pulling it first`, a chat naming none fails 400 "model is
// required". Errors are {"error": message}; a [Reply.Err] after streamed
// chunks is sent as an {"error"} line, as Ollama reports a failure
// mid-stream. Ollama does not check how tool calls and results pair, so
// neither does the server.
//
// Request.Messages holds the conversation in llms form: text parts, images
// as llms.BinaryContent, an assistant's tool calls as llms.ToolCall (no
// ids: Ollama has none) and a tool message as one llms.ToolCallResponse
// named by tool_name. Request.Stream is true unless the request set
// "stream": false.
type OllamaServer struct {
	// URL is the root URL of the server (such as http://127.0.0.1:38461):
	// pass it to ollama.WithServerURL.
	URL string

	loopback

	mu     sync.Mutex
	models []string // installed models, full names with tags
}

// NewOllamaServer starts an OllamaServer answering from script.
func NewOllamaServer(script Script, opts *Options) *OllamaServer {
	s := &OllamaServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/chat", s.handleChat)
	mux.HandleFunc("/api/pull", s.handlePull)
	mux.HandleFunc("/api/tags", s.handleTags)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeOllamaError(w, http.StatusNotFound, "404 page not found")
	})
	s.init(script, opts, CacheRulesWire, nil, mux)
	s.models = []string{ollamaModelName(s.cfg.name)}
	s.URL = s.ts.URL
	return s
}

// ollamaModelName returns the full name of a model: name:latest for a name
// without a tag.
func ollamaModelName(name string) string {
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i:], "/") {
		return name
	}
	return name + ":latest"
}

// installed reports whether the model is installed.
func (s *OllamaServer) installed(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.models, ollamaModelName(name))
}

// ollamaCreated is the fixed created_at of every answer.
var ollamaCreated = time.Unix(created, 0).UTC().Format(time.RFC3339Nano)

// ollamaChatRequest is the body of POST /api/chat.
type ollamaChatRequest struct {
	Model    string          `json:"model"`
	Messages []ollamaMessage `json:"messages"`
	Tools    []wireTool      `json:"tools"`
	Stream   *bool           `json:"stream"`
	Format   json.RawMessage `json:"format"`
	Options  map[string]any  `json:"options"`
	Think    json.RawMessage `json:"think"`
}

// ollamaMessage is a message of a request or an answer.
type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	Thinking  string           `json:"thinking,omitempty"`
	Images    []string         `json:"images,omitempty"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
	ToolName  string           `json:"tool_name,omitempty"`
}

// ollamaToolCall is a tool call; its arguments are a JSON object.
type ollamaToolCall struct {
	Function struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// handleChat serves POST /api/chat.
func (s *OllamaServer) handleChat(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, writeOllamaError)
	if !ok {
		return
	}
	var or ollamaChatRequest
	if len(bytes.TrimSpace(body)) == 0 {
		writeOllamaError(w, http.StatusBadRequest, "missing request body")
		return
	}
	if err := decodeStrictJSON(body, &or); err != nil {
		writeOllamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	switch {
	case or.Model == "":
		writeOllamaError(w, http.StatusBadRequest, "model is required")
		return
	case !s.installed(or.Model):
		writeOllamaError(w, http.StatusNotFound, fmt.Sprintf("model %q not found, try pulling it first", or.Model))
		return
	}
	msgs, err := ollamaToLLMs(or.Messages)
	if err != nil {
		writeOllamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	format := strings.TrimSpace(string(or.Format))
	if format != "" && format != `""` && format != `"json"` && !isJSONObject(or.Format) {
		writeOllamaError(w, http.StatusBadRequest, `invalid format: expected "json" or a valid JSON schema`)
		return
	}
	think := strings.TrimSpace(string(or.Think))
	req := &Request{
		Model:     or.Model,
		Messages:  msgs,
		Tools:     convertTools(or.Tools),
		Stream:    or.Stream == nil || *or.Stream,
		JSONMode:  format == `"json"`,
		Thinking:  think != "" && think != "false" && think != "null",
		MaxTokens: optionInt(or.Options, "num_predict"),
		Body:      body,
	}
	req.PromptTokens = EstimatePromptTokens(req.Messages, req.Tools)
	rep := s.play(w, r, req, keepReasoning(req.Thinking), writeOllamaError)
	switch {
	case rep == nil:
	case req.Stream:
		s.stream(w, r, req, rep)
	default:
		final := s.final(req, rep)
		final.Message = s.answer(rep)
		writeJSON(w, http.StatusOK, final)
	}
}

// optionInt returns the integer option name, 0 when absent.
func optionInt(opts map[string]any, name string) int {
	if f, ok := opts[name].(float64); ok {
		return int(f)
	}
	return 0
}

// ollamaToLLMs converts request messages into llms messages.
func ollamaToLLMs(in []ollamaMessage) ([]llms.MessageContent, error) {
	out := make([]llms.MessageContent, 0, len(in))
	for i, m := range in {
		var msg llms.MessageContent
		switch m.Role {
		case "system":
			msg.Role = llms.ChatMessageTypeSystem
		case "user":
			msg.Role = llms.ChatMessageTypeHuman
		case "assistant":
			msg.Role = llms.ChatMessageTypeAI
		case "tool":
			msg.Role = llms.ChatMessageTypeTool
			msg.Parts = []llms.ContentPart{llms.ToolCallResponse{Name: m.ToolName, Content: m.Content}}
			out = append(out, msg)
			continue
		default:
			return nil, fmt.Errorf("invalid role %q in messages[%d]", m.Role, i)
		}
		if m.Content != "" || len(m.ToolCalls) == 0 && len(m.Images) == 0 {
			msg.Parts = append(msg.Parts, llms.TextContent{Text: m.Content})
		}
		for _, img := range m.Images {
			data, err := base64.StdEncoding.DecodeString(img)
			if err != nil {
				return nil, fmt.Errorf("messages[%d]: illegal base64 data in images: %w", i, err)
			}
			msg.Parts = append(msg.Parts, llms.BinaryContent{MIMEType: http.DetectContentType(data), Data: data})
		}
		for _, tc := range m.ToolCalls {
			if !isJSONObject(tc.Function.Arguments) {
				return nil, fmt.Errorf("messages[%d]: tool call %q: arguments must be a JSON object", i, tc.Function.Name)
			}
			var args bytes.Buffer
			_ = json.Compact(&args, tc.Function.Arguments)
			msg.Parts = append(msg.Parts, llms.ToolCall{Type: "function", FunctionCall: &llms.FunctionCall{
				Name: tc.Function.Name, Arguments: args.String(),
			}})
		}
		out = append(out, msg)
	}
	return out, nil
}

// ollamaResponse is an answer object: a streamed chunk, or the final one.
type ollamaResponse struct {
	Model              string         `json:"model"`
	CreatedAt          string         `json:"created_at"`
	Message            *ollamaMessage `json:"message,omitempty"`
	Done               bool           `json:"done"`
	DoneReason         string         `json:"done_reason,omitempty"`
	TotalDuration      int64          `json:"total_duration,omitempty"`
	LoadDuration       int64          `json:"load_duration,omitempty"`
	PromptEvalCount    int            `json:"prompt_eval_count,omitempty"`
	PromptEvalDuration int64          `json:"prompt_eval_duration,omitempty"`
	EvalCount          int            `json:"eval_count,omitempty"`
	EvalDuration       int64          `json:"eval_duration,omitempty"`
}

// answer returns the whole message of rep.
func (s *OllamaServer) answer(rep *resolved) *ollamaMessage {
	return &ollamaMessage{Role: "assistant", Content: rep.content, Thinking: rep.Reasoning, ToolCalls: ollamaToolCalls(rep)}
}

// ollamaToolCalls returns rep's tool calls in Ollama's form (see
// objectArguments).
func ollamaToolCalls(rep *resolved) []ollamaToolCall {
	var out []ollamaToolCall
	for i, tc := range rep.ToolCalls {
		var c ollamaToolCall
		c.Function.Index, c.Function.Name = i, tc.Name
		c.Function.Arguments = objectArguments(tc.Arguments)
		out = append(out, c)
	}
	return out
}

// final returns the final object of the answer to req, without a message.
// Durations are fixed: 1ms to load, 1ms per prompt token, 10ms per answer
// token.
func (s *OllamaServer) final(req *Request, rep *resolved) *ollamaResponse {
	reason := rep.StopReason
	if reason == "tool_calls" {
		reason = "stop"
	}
	load := time.Millisecond.Nanoseconds()
	promptEval := int64(rep.Usage.PromptTokens) * time.Millisecond.Nanoseconds()
	eval := int64(rep.Usage.CompletionTokens) * 10 * time.Millisecond.Nanoseconds()
	return &ollamaResponse{
		Model: s.model(req), CreatedAt: ollamaCreated, Done: true, DoneReason: reason,
		TotalDuration: load + promptEval + eval, LoadDuration: load,
		PromptEvalCount: rep.Usage.PromptTokens, PromptEvalDuration: promptEval,
		EvalCount: rep.Usage.CompletionTokens, EvalDuration: eval,
	}
}

// stream writes rep as NDJSON chunks.
func (s *OllamaServer) stream(w http.ResponseWriter, r *http.Request, req *Request, rep *resolved) {
	sw := s.startStream(w, r, "application/x-ndjson", rep)
	line := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			sw.abort()
		}
		sw.write(append(b, '\n'))
	}
	chunk := func(m ollamaMessage) {
		sw.pause()
		m.Role = "assistant"
		line(ollamaResponse{Model: s.model(req), CreatedAt: ollamaCreated, Message: &m})
	}
	for _, c := range rep.reasoningChunks {
		chunk(ollamaMessage{Thinking: c})
	}
	for _, c := range rep.chunks {
		chunk(ollamaMessage{Content: c})
	}
	if rep.Err != nil {
		line(map[string]string{"error": rep.Err.Error()})
		return
	}
	if len(rep.ToolCalls) > 0 {
		chunk(ollamaMessage{ToolCalls: ollamaToolCalls(rep)})
	}
	final := s.final(req, rep)
	final.Message = &ollamaMessage{Role: "assistant"}
	line(final)
}

// handlePull serves POST /api/pull: it installs the model.
func (s *OllamaServer) handlePull(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, writeOllamaError)
	if !ok {
		return
	}
	var pr struct {
		Model  string `json:"model"`
		Name   string `json:"name"`
		Stream *bool  `json:"stream"`
	}
	if err := decodeStrictJSON(body, &pr); err != nil {
		writeOllamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	name := cmp.Or(pr.Model, pr.Name)
	if name == "" {
		writeOllamaError(w, http.StatusBadRequest, "model is required")
		return
	}
	s.mu.Lock()
	if full := ollamaModelName(name); !slices.Contains(s.models, full) {
		s.models = append(s.models, full)
	}
	s.mu.Unlock()
	if pr.Stream != nil && !*pr.Stream {
		writeJSON(w, http.StatusOK, map[string]string{"status": "success"})
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	for _, status := range []string{"pulling manifest", "verifying sha256 digest", "writing manifest", "success"} {
		b, _ := json.Marshal(map[string]string{"status": status})
		_, _ = w.Write(append(b, '\n'))
	}
}

// handleTags serves GET /api/tags.
func (s *OllamaServer) handleTags(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeOllamaError(w, http.StatusMethodNotAllowed, "405 method not allowed")
		return
	}
	s.mu.Lock()
	names := slices.Clone(s.models)
	s.mu.Unlock()
	models := []map[string]any{}
	for _, n := range names {
		models = append(models, map[string]any{
			"name": n, "model": n, "modified_at": ollamaCreated, "size": 0, "digest": "",
			"details": map[string]any{"format": "gguf", "family": "llmtest"},
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": models})
}

// writeOllamaError writes an Ollama error body.
func writeOllamaError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]string{"error": message})
}
