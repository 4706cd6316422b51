package llmtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// GeminiServer is a Gemini API (generativelanguage v1beta) server on a
// loopback [httptest.Server], answering from a [Script]. Point
// langchaingo's googleai client at it with the Google API option
// option.WithEndpoint(srv.URL) (package google.golang.org/api/option),
// which googleai has no option of its own for: append it to the
// client's Options.ClientOptions, and give any API key:
//
//	llm, err := googleai.New(ctx,
//		googleai.WithAPIKey("any"),
//		googleai.WithDefaultModel(srv.ModelName()),
//		func(o *googleai.Options) {
//			o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL))
//		},
//	)
//
// llmclient.GoogleAI does just that. To count Gemini's usage whole, the
// client goes through runtime/ai's ai.Transport: its doc shows how.
//
// It serves POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent (also under /v1/). The API key comes in the
// x-goog-api-key header or the key query parameter; without one the call
// fails 403 PERMISSION_DENIED. Before the script sees a request it checks,
// in the API's words:
//
//   - contents are given, each with a role user or model ("function" is
//     taken for user) and non-empty parts that each hold data;
//   - a model turn with function calls comes right after a user turn or a
//     function response turn ("Please ensure that function call turn comes
//     immediately after a user turn or after a function response turn.");
//   - a turn of function responses comes right after a turn of function
//     calls ("Please ensure that function response turn comes immediately
//     after a function call turn.") and answers as many calls as it made
//     ("Please ensure that the number of function response parts is equal
//     to the number of function call parts of the function call turn.");
//   - function names are valid; a parameters schema holds only the fields
//     of Gemini's OpenAPI subset ("Unknown name \"additionalProperties\"
//     … Cannot find field.") and an OBJECT schema has properties
//     (parametersJsonSchema, the JSON Schema alternative, is taken as is).
//
// Errors use Google's body {"error":{"code","message","status"}}.
//
// The answer has one candidate: content {role "model", parts} with, when
// the request set generationConfig.thinkingConfig.includeThoughts, the
// reply's Reasoning as a part with "thought": true, then the text, then a
// functionCall part per tool call; finishReason STOP (for "stop" and
// "tool_calls"), MAX_TOKENS (for "length"), else the StopReason upper-cased;
// usageMetadata with promptTokenCount, candidatesTokenCount (the answer's
// tokens without the reasoning's), thoughtsTokenCount (the reasoning's,
// reported whether or not the thoughts are sent, as thinking models do),
// cachedContentTokenCount (Usage.CacheReadTokens) and totalTokenCount. When
// the request asks for "$alt=json;enum-encoding=int" (as Google's Go REST
// client does) finishReason is the enum's number. Streamed, the answer is a
// JSON array of such responses (or server-sent events with alt=sse): a
// response per thought or text chunk and the function calls whole, every
// one with usageMetadata as the API sends it: the prompt's count in each
// response before the last (promptTokenCount, cachedContentTokenCount and
// a totalTokenCount of the prompt's), the whole call's in the last, which
// carries finishReason. A [Reply.Err] after streamed chunks cuts the
// connection.
//
// Google's Go SDK (generative-ai-go, under langchaingo's googleai client)
// calls streamGenerateContent even for a non-streamed call, and keeps the
// usage of the stream's first response (its joinResponses), so an answer
// of more than one response is reported with the prompt's tokens only;
// runtime/ai's ai.Transport reads the last response's usage from the wire.
//
// Request.Messages holds the conversation in llms form: the system
// instruction first as a system message; a user turn's function responses
// as a tool message of llms.ToolCallResponse parts (Content is the
// response's "response" string when it is one, else the response's JSON;
// ToolCallID is the response's id, empty when absent) and its other parts
// as a human message (inline data as llms.BinaryContent); a model turn's
// text and function calls as text parts and llms.ToolCall parts (ID the
// call's id, usually empty: Gemini calls have none). Thought parts are not
// recorded. Request.Tools holds the function declarations with their
// schema as JSON Schema (lower-case types).
type GeminiServer struct {
	// URL is the root URL of the API (such as http://127.0.0.1:38461):
	// pass it to option.WithEndpoint, in googleai.Options.ClientOptions.
	URL string

	loopback
}

// NewGeminiServer starts a GeminiServer answering from script.
func NewGeminiServer(script Script, opts *Options) *GeminiServer {
	s := &GeminiServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1beta/models/", s.handleModel)
	mux.HandleFunc("/v1/models/", s.handleModel)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeGeminiError(w, http.StatusNotFound, fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path))
	})
	s.init(script, opts, CacheRulesGemini, nil, mux)
	s.URL = s.ts.URL
	return s
}

// geminiRequest is the body of a generateContent request.
type geminiRequest struct {
	Model             string          `json:"model"`
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []geminiFunction `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig       any `json:"toolConfig"`
	GenerationConfig struct {
		MaxOutputTokens  int    `json:"maxOutputTokens"`
		ResponseMimeType string `json:"responseMimeType"`
		ThinkingConfig   struct {
			IncludeThoughts bool `json:"includeThoughts"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

// geminiContent is a turn of a conversation or of an answer.
type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

// geminiPart is a part of a turn. Text is a pointer so that an empty text
// part is told from a part without text.
type geminiPart struct {
	Text             *string         `json:"text,omitempty"`
	Thought          bool            `json:"thought,omitempty"`
	FunctionCall     *geminiCall     `json:"functionCall,omitempty"`
	FunctionResponse *geminiResult   `json:"functionResponse,omitempty"`
	InlineData       *geminiBlob     `json:"inlineData,omitempty"`
	FileData         json.RawMessage `json:"fileData,omitempty"`
}

// geminiCall is a function call.
type geminiCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// geminiResult is a function response.
type geminiResult struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// geminiBlob is inline data.
type geminiBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

// geminiFunction is a function declaration. Parameters is an OpenAPI
// schema (geminiSchema); ParametersJSONSchema, its alternative, a JSON
// Schema taken as it is.
type geminiFunction struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description"`
	Parameters           json.RawMessage `json:"parameters"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
}

// geminiSchema is the OpenAPI subset Gemini takes for parameters; a field
// it does not know is refused. Type is the enum's name or, from Google's Go
// client, its number. The fields after Items are accepted and not recorded.
type geminiSchema struct {
	Type        json.RawMessage          `json:"type"`
	Format      string                   `json:"format"`
	Description string                   `json:"description"`
	Nullable    bool                     `json:"nullable"`
	Enum        []string                 `json:"enum"`
	Properties  map[string]*geminiSchema `json:"properties"`
	Required    []string                 `json:"required"`
	Items       *geminiSchema            `json:"items"`

	Title            string          `json:"title"`
	MinItems         json.RawMessage `json:"minItems"`
	MaxItems         json.RawMessage `json:"maxItems"`
	MinProperties    json.RawMessage `json:"minProperties"`
	MaxProperties    json.RawMessage `json:"maxProperties"`
	MinLength        json.RawMessage `json:"minLength"`
	MaxLength        json.RawMessage `json:"maxLength"`
	Minimum          json.RawMessage `json:"minimum"`
	Maximum          json.RawMessage `json:"maximum"`
	Pattern          string          `json:"pattern"`
	Example          json.RawMessage `json:"example"`
	Default          json.RawMessage `json:"default"`
	AnyOf            []*geminiSchema `json:"anyOf"`
	PropertyOrdering []string        `json:"propertyOrdering"`
}

// decodeGeminiSchema decodes a parameters schema, refusing unknown fields
// with the API's text.
func decodeGeminiSchema(raw json.RawMessage, at string) (*geminiSchema, string) {
	var s geminiSchema
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Sprintf("Invalid JSON payload received. Unknown name %s at '%s': Cannot find field.", field, at)
		}
		return nil, fmt.Sprintf("Invalid JSON payload received. Invalid value at '%s': %v", at, err)
	}
	return &s, ""
}

// geminiTypes are the names of the Type enum, by number.
var geminiTypes = []string{"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}

// geminiFunctionName is the pattern of a function name.
var geminiFunctionName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.\-]{0,63}$`)

// handleModel serves POST /v1beta/models/{model}:{action}.
func (s *GeminiServer) handleModel(w http.ResponseWriter, r *http.Request) {
	rest := r.URL.Path[strings.Index(r.URL.Path, "/models/")+len("/models/"):]
	model, action, _ := strings.Cut(rest, ":")
	if action != "generateContent" && action != "streamGenerateContent" {
		writeGeminiError(w, http.StatusNotFound, fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path))
		return
	}
	if r.Header.Get("X-Goog-Api-Key") == "" && r.URL.Query().Get("key") == "" {
		writeGeminiError(w, http.StatusForbidden, "Method doesn't allow unregistered callers (callers without established identity). "+
			"Please use API Key or other form of API consumer identity to call this API.")
		return
	}
	body, ok := readBody(w, r, writeGeminiError)
	if !ok {
		return
	}
	var gr geminiRequest
	if err := decodeStrictJSON(body, &gr); err != nil {
		writeGeminiError(w, http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
		return
	}
	tools, msg := geminiTools(&gr)
	if msg == "" {
		msg = checkGeminiContents(gr.Contents, s.cfg.validate)
	}
	if msg != "" {
		writeGeminiError(w, http.StatusBadRequest, msg)
		return
	}
	req := &Request{
		Model:     model,
		Messages:  geminiToLLMs(gr.SystemInstruction, gr.Contents),
		Tools:     tools,
		Stream:    action == "streamGenerateContent",
		JSONMode:  gr.GenerationConfig.ResponseMimeType == "application/json",
		Thinking:  gr.GenerationConfig.ThinkingConfig.IncludeThoughts,
		MaxTokens: gr.GenerationConfig.MaxOutputTokens,
		Body:      body,
	}
	if gr.ToolConfig != nil {
		req.ToolChoice = gr.ToolConfig
	}
	req.PromptTokens = EstimatePromptTokens(req.Messages, req.Tools)
	rep := s.play(w, r, req, nil, writeGeminiError)
	if rep == nil {
		return
	}
	enc := geminiEncoding{intEnums: strings.Contains(r.URL.Query().Get("$alt"), "enum-encoding=int")}
	if !req.Stream {
		parts := geminiAnswerParts(rep, req.Thinking)
		writeJSON(w, http.StatusOK, s.response(req, parts, enc.finish(rep.StopReason), geminiUsageOf(rep)))
		return
	}
	s.stream(w, r, req, rep, enc, r.URL.Query().Get("alt") == "sse")
}

// geminiTools converts and checks the function declarations.
func geminiTools(gr *geminiRequest) ([]llms.Tool, string) {
	var out []llms.Tool
	for i, t := range gr.Tools {
		for j, f := range t.FunctionDeclarations {
			at := fmt.Sprintf("* GenerateContentRequest.tools[%d].function_declarations[%d]", i, j)
			if !geminiFunctionName.MatchString(f.Name) {
				return nil, at + ".name: Invalid function name. Must start with a letter or an underscore. " +
					"Must be a-z, A-Z, 0-9, or contain underscores, dots and dashes, with a maximum length of 64."
			}
			var params any
			switch {
			case len(f.Parameters) > 0 && string(f.Parameters) != "null":
				schema, msg := decodeGeminiSchema(f.Parameters, fmt.Sprintf("tools[%d].function_declarations[%d].parameters", i, j))
				if msg != "" {
					return nil, msg
				}
				p, msg := geminiSchemaMap(schema, at+".parameters")
				if msg != "" {
					return nil, msg
				}
				params = p
			case len(f.ParametersJSONSchema) > 0:
				var p any
				if err := json.Unmarshal(f.ParametersJSONSchema, &p); err != nil {
					return nil, at + ".parameters_json_schema: " + err.Error()
				}
				params = p
			}
			out = append(out, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
				Name: f.Name, Description: f.Description, Parameters: params,
			}})
		}
	}
	return out, ""
}

// geminiSchemaMap converts a schema into JSON Schema, checking it.
func geminiSchemaMap(s *geminiSchema, at string) (map[string]any, string) {
	typ, ok := geminiTypeName(s.Type)
	if !ok {
		return nil, fmt.Sprintf("Invalid value at '%s.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), %s",
			strings.TrimPrefix(at, "* GenerateContentRequest."), s.Type)
	}
	m := map[string]any{}
	if typ != "" && typ != "TYPE_UNSPECIFIED" {
		m["type"] = strings.ToLower(typ)
	}
	if typ == "OBJECT" && len(s.Properties) == 0 {
		return nil, at + ".properties: should be non-empty for OBJECT type"
	}
	if s.Description != "" {
		m["description"] = s.Description
	}
	if s.Format != "" {
		m["format"] = s.Format
	}
	if s.Nullable {
		m["nullable"] = true
	}
	if len(s.Enum) > 0 {
		m["enum"] = anySlice(s.Enum)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for name, p := range s.Properties {
			if p == nil {
				continue
			}
			pm, msg := geminiSchemaMap(p, at+".properties["+name+"]")
			if msg != "" && !strings.HasSuffix(msg, "should be non-empty for OBJECT type") {
				return nil, msg
			}
			props[name] = pm
		}
		m["properties"] = props
	}
	if len(s.Required) > 0 {
		m["required"] = anySlice(s.Required)
	}
	if s.Items != nil {
		im, msg := geminiSchemaMap(s.Items, at+".items")
		if msg != "" && !strings.HasSuffix(msg, "should be non-empty for OBJECT type") {
			return nil, msg
		}
		m["items"] = im
	}
	return m, ""
}

// anySlice returns ss as a []any, the form of a decoded JSON array.
func anySlice(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// geminiTypeName returns the enum name of a schema type given as a name
// (any case) or a number; "" when absent.
func geminiTypeName(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var n int
	if json.Unmarshal(raw, &n) == nil {
		if n >= 0 && n < len(geminiTypes) {
			return geminiTypes[n], true
		}
		return "", false
	}
	var name string
	if json.Unmarshal(raw, &name) != nil {
		return "", false
	}
	for _, t := range geminiTypes {
		if strings.EqualFold(t, name) {
			return t, true
		}
	}
	return "", false
}

// geminiCounts returns the number of function calls and responses of a turn.
func geminiCounts(c geminiContent) (calls, results int) {
	for _, p := range c.Parts {
		if p.FunctionCall != nil {
			calls++
		}
		if p.FunctionResponse != nil {
			results++
		}
	}
	return calls, results
}

// checkGeminiContents checks the turns as the API does. The function call
// and response rules are checked only when validate is set.
func checkGeminiContents(contents []geminiContent, validate bool) string {
	if len(contents) == 0 {
		return "* GenerateContentRequest.contents: contents is not specified"
	}
	for i, c := range contents {
		switch c.Role {
		case "", "user", "model", "function":
		default:
			return "Please use a valid role: user, model."
		}
		if len(c.Parts) == 0 {
			return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		for j, p := range c.Parts {
			if p.Text == nil && p.FunctionCall == nil && p.FunctionResponse == nil && p.InlineData == nil && p.FileData == nil {
				return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts[%d].data: required oneof field 'data' must have one initialized field", i, j)
			}
			if p.FunctionCall != nil && p.FunctionCall.Name == "" {
				return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts[%d].function_call.name: Name cannot be empty.", i, j)
			}
		}
	}
	if !validate {
		return ""
	}
	for i, c := range contents {
		calls, results := geminiCounts(c)
		prevCalls, prevModel := 0, false
		if i > 0 {
			prevCalls, _ = geminiCounts(contents[i-1])
			prevModel = contents[i-1].Role == "model"
		}
		if calls > 0 && (i == 0 || prevModel) {
			return "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
		}
		if results > 0 {
			if !prevModel || prevCalls == 0 {
				return "Please ensure that function response turn comes immediately after a function call turn."
			}
			if results != prevCalls {
				return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
			}
		}
	}
	return ""
}

// geminiToLLMs converts the system instruction and the turns into llms
// messages (see GeminiServer).
func geminiToLLMs(system *geminiContent, contents []geminiContent) []llms.MessageContent {
	var out []llms.MessageContent
	if system != nil {
		var parts []llms.ContentPart
		for _, p := range system.Parts {
			if p.Text != nil {
				parts = append(parts, llms.TextContent{Text: *p.Text})
			}
		}
		if len(parts) > 0 {
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeSystem, Parts: parts})
		}
	}
	for _, c := range contents {
		var cur *llms.MessageContent
		add := func(role llms.ChatMessageType, p llms.ContentPart) {
			if cur == nil || cur.Role != role {
				out = append(out, llms.MessageContent{Role: role})
				cur = &out[len(out)-1]
			}
			cur.Parts = append(cur.Parts, p)
		}
		role := llms.ChatMessageTypeHuman
		if c.Role == "model" {
			role = llms.ChatMessageTypeAI
		}
		for _, p := range c.Parts {
			switch {
			case p.Thought:
			case p.Text != nil:
				add(role, llms.TextContent{Text: *p.Text})
			case p.InlineData != nil:
				data, err := base64.StdEncoding.DecodeString(p.InlineData.Data)
				if err != nil {
					data = []byte(p.InlineData.Data)
				}
				add(role, llms.BinaryContent{MIMEType: p.InlineData.MimeType, Data: data})
			case p.FunctionCall != nil:
				add(role, llms.ToolCall{ID: p.FunctionCall.ID, Type: "function", FunctionCall: &llms.FunctionCall{
					Name: p.FunctionCall.Name, Arguments: compactJSON(p.FunctionCall.Args, "{}"),
				}})
			case p.FunctionResponse != nil:
				add(llms.ChatMessageTypeTool, llms.ToolCallResponse{
					ToolCallID: p.FunctionResponse.ID, Name: p.FunctionResponse.Name, Content: geminiResultText(p.FunctionResponse.Response),
				})
			}
		}
	}
	return out
}

// compactJSON returns raw compacted, or empty when raw is empty.
func compactJSON(raw json.RawMessage, empty string) string {
	var b bytes.Buffer
	if len(bytes.TrimSpace(raw)) == 0 || json.Compact(&b, raw) != nil {
		if len(bytes.TrimSpace(raw)) == 0 {
			return empty
		}
		return string(raw)
	}
	return b.String()
}

// geminiResultText returns the content of a function response: its
// "response" field when that is the only field and a string, else the
// response's compact JSON.
func geminiResultText(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && len(m) == 1 {
		var s string
		if json.Unmarshal(m["response"], &s) == nil {
			return s
		}
	}
	return compactJSON(raw, "")
}

// geminiAnswerParts returns the parts of rep's whole answer; thoughts
// says whether the reasoning is sent.
func geminiAnswerParts(rep *resolved, thoughts bool) []geminiPart {
	var parts []geminiPart
	if thoughts && rep.Reasoning != "" {
		parts = append(parts, geminiPart{Text: &rep.Reasoning, Thought: true})
	}
	if rep.content != "" || len(rep.ToolCalls) == 0 {
		parts = append(parts, geminiPart{Text: &rep.content})
	}
	return append(parts, geminiCalls(rep)...)
}

// geminiCalls returns rep's tool calls as functionCall parts (see
// objectArguments).
func geminiCalls(rep *resolved) []geminiPart {
	var parts []geminiPart
	for _, tc := range rep.ToolCalls {
		parts = append(parts, geminiPart{FunctionCall: &geminiCall{Name: tc.Name, Args: objectArguments(tc.Arguments)}})
	}
	return parts
}

// geminiUsage is the usageMetadata of a response.
type geminiUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int `json:"totalTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
}

// geminiUsageOf returns the final usage of rep.
func geminiUsageOf(rep *resolved) *geminiUsage {
	return &geminiUsage{
		PromptTokenCount:        rep.Usage.PromptTokens,
		CandidatesTokenCount:    max(0, rep.Usage.CompletionTokens-rep.reasoningTokens),
		ThoughtsTokenCount:      rep.reasoningTokens,
		CachedContentTokenCount: rep.Usage.CacheReadTokens,
		TotalTokenCount:         rep.totalTokens,
	}
}

// geminiEncoding is how enums are sent: names, or numbers when the request
// asked for enum-encoding=int.
type geminiEncoding struct{ intEnums bool }

// geminiFinishReasons are the names of the FinishReason enum, by number.
var geminiFinishReasons = []string{"FINISH_REASON_UNSPECIFIED", "STOP", "MAX_TOKENS", "SAFETY", "RECITATION", "OTHER",
	"BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "MALFORMED_FUNCTION_CALL"}

// finish returns the finishReason for a Reply's StopReason.
func (e geminiEncoding) finish(stop string) any {
	name := strings.ToUpper(stop)
	switch stop {
	case "stop", "tool_calls":
		name = "STOP"
	case "length":
		name = "MAX_TOKENS"
	}
	if !e.intEnums {
		return name
	}
	for i, n := range geminiFinishReasons {
		if n == name {
			return i
		}
	}
	if n, err := strconv.Atoi(stop); err == nil {
		return n
	}
	return 5 // OTHER
}

// geminiResponse is a GenerateContentResponse.
type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata *geminiUsage      `json:"usageMetadata,omitempty"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

// geminiCandidate is a candidate of a response.
type geminiCandidate struct {
	Content      geminiContent `json:"content"`
	FinishReason any           `json:"finishReason,omitempty"`
	Index        int           `json:"index"`
}

// response builds a response with parts; finish may be nil (a stream
// chunk before the last).
func (s *GeminiServer) response(req *Request, parts []geminiPart, finish any, usage *geminiUsage) *geminiResponse {
	return &geminiResponse{
		Candidates:    []geminiCandidate{{Content: geminiContent{Role: "model", Parts: parts}, FinishReason: finish}},
		UsageMetadata: usage,
		ModelVersion:  s.model(req),
		ResponseID:    fmt.Sprintf("llmtest-%d", req.Index+1),
	}
}

// stream writes rep as a JSON array of responses or, with sse, as
// server-sent events.
func (s *GeminiServer) stream(w http.ResponseWriter, r *http.Request, req *Request, rep *resolved, enc geminiEncoding, sse bool) {
	contentType := "application/json; charset=UTF-8"
	if sse {
		contentType = "text/event-stream"
	}
	sw := s.startStream(w, r, contentType, rep)
	n := 0
	send := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			sw.abort()
		}
		switch {
		case sse:
			b = fmt.Appendf(nil, "data: %s\r\n\r\n", b)
		case n == 0:
			b = append([]byte("["), b...)
		default:
			b = append([]byte(",\r\n"), b...)
		}
		n++
		sw.write(b)
	}
	// Each chunk is one part; the last carries the finish reason and the
	// final usage.
	var chunks [][]geminiPart
	if req.Thinking {
		for _, c := range rep.reasoningChunks {
			chunks = append(chunks, []geminiPart{{Text: &c, Thought: true}})
		}
	}
	for _, c := range rep.chunks {
		chunks = append(chunks, []geminiPart{{Text: &c}})
	}
	if calls := geminiCalls(rep); len(calls) > 0 && rep.Err == nil {
		chunks = append(chunks, calls)
	}
	if len(chunks) == 0 {
		empty := ""
		chunks = append(chunks, []geminiPart{{Text: &empty}})
	}
	// The responses before the last carry the prompt's usage only.
	early := &geminiUsage{
		PromptTokenCount:        rep.Usage.PromptTokens,
		CachedContentTokenCount: rep.Usage.CacheReadTokens,
		TotalTokenCount:         rep.Usage.PromptTokens,
	}
	for i, parts := range chunks {
		sw.pause()
		if i == len(chunks)-1 && rep.Err == nil {
			send(s.response(req, parts, enc.finish(rep.StopReason), geminiUsageOf(rep)))
			break
		}
		send(s.response(req, parts, nil, early))
	}
	if rep.Err != nil {
		sw.abort()
	}
	if !sse {
		sw.write([]byte("]"))
	}
}

// geminiStatus returns Google's status name for an HTTP status.
func geminiStatus(status int) string {
	switch status {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	default:
		if status >= 500 {
			return "INTERNAL"
		}
		return "FAILED_PRECONDITION"
	}
}

// writeGeminiError writes a Google API error body.
func writeGeminiError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]any{
		"error": map[string]any{"code": status, "message": message, "status": geminiStatus(status)},
	})
}
