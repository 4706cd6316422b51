package llmtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// AnthropicVersion is the anthropic-version header value the
// [AnthropicServer] accepts (the only stable version of the Messages API).
const AnthropicVersion = "2023-06-01"

// AnthropicServer is an Anthropic Messages API server on a loopback
// [httptest.Server], answering from a [Script]. Point langchaingo's
// anthropic client at it with anthropic.WithBaseURL(srv.URL) and any
// non-empty token.
//
// It serves POST /v1/messages, and checks what the real API checks, in the
// real API's words, before the script sees the request:
//
//   - the x-api-key (any non-empty value) and anthropic-version headers;
//   - no top-level field the API does not know ("x: Extra inputs are not
//     permitted"); model, max_tokens (at least 1) and a non-empty messages
//     list;
//   - roles user and assistant only, the first message from the user, no
//     empty text blocks and no empty content except in a final assistant
//     message;
//   - consecutive messages of the same role are combined into one turn, as
//     the API does; then every tool_result block must answer a tool_use
//     block of the assistant turn right before it ("unexpected
//     `tool_use_id` found in `tool_result` blocks"), and every tool_use
//     block must be answered by a tool_result block in the user turn right
//     after it ("`tool_use` ids were found without `tool_result` blocks
//     immediately after", naming the message holding the first unanswered
//     tool_use);
//   - tool names match ^[a-zA-Z0-9_-]{1,64}$ and input_schema is an object
//     schema;
//   - cache_control is {"type":"ephemeral"} with an optional ttl of "5m"
//     or "1h", on at most 4 blocks and tools ("A maximum of 4 blocks with
//     cache_control may be provided. Found 5.");
//   - thinking {"type":"enabled","budget_tokens":N} needs N >= 1024,
//     max_tokens > N, a temperature of 1 when one is sent and a tool_choice
//     that does not force tool use, and when the
//     conversation ends in tool results, the assistant turn that called
//     the tools must start with a thinking block.
//
// Errors use Anthropic's body {"type":"error","error":{"type","message"}}
// (authentication_error 401, invalid_request_error 400, api_error 500, …).
// Messages are numbered as sent (messages.N.content.M), before combining.
//
// The answer is a message whose content is a thinking block (when the
// request enabled thinking and the [Reply] has Reasoning; its signature is
// derived from the text), a text block (when the reply has text or no tool
// calls) and a tool_use block per tool call (ids toolu_01, toolu_02, … when
// the script gives none); stop_reason is end_turn, tool_use or max_tokens
// ("stop", "tool_calls" and "length" translated; any other StopReason is
// sent as it is). Usage: input_tokens is PromptTokens less the cache
// tokens, which are sent as cache_read_input_tokens and
// cache_creation_input_tokens. Streamed, the answer is the documented
// event sequence: message_start, ping, per block content_block_start,
// content_block_delta (thinking_delta then signature_delta, text_delta,
// input_json_delta with fragments of the arguments), content_block_stop,
// then message_delta (stop_reason, usage.output_tokens) and message_stop. A
// [Reply.Err] after streamed chunks cuts the connection off, as the other
// servers do. (The real API sends an error event instead, but langchaingo
// v0.1.14's anthropic client, which returns that error at once and then
// closes the body, leaks its stream-reading goroutine on it:
// llms/anthropic/internal/anthropicclient/messages.go:288.)
//
// Request.Messages holds the conversation in llms form, message by message
// as sent: the system prompt first as a system message; a user message's
// tool_result blocks as a tool message of llms.ToolCallResponse parts
// (named after the tool_use they answer) and its other blocks as a human
// message; an assistant message's text and tool_use blocks as text parts
// and llms.ToolCall parts (arguments as compact JSON). Thinking blocks are
// not recorded. Parts with cache_control are wrapped in llms.CachedContent.
type AnthropicServer struct {
	// URL is the base URL of the API, ending in /v1 (such as
	// http://127.0.0.1:38461/v1): pass it to anthropic.WithBaseURL.
	URL string

	loopback
}

// NewAnthropicServer starts an AnthropicServer answering from script.
func NewAnthropicServer(script Script, opts *Options) *AnthropicServer {
	s := &AnthropicServer{}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", s.handleMessages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeAnthropicError(w, http.StatusNotFound, "Not Found")
	})
	s.init(script, opts, CacheRulesAnthropic, func(n int) string { return fmt.Sprintf("toolu_%02d", n) }, mux)
	s.URL = s.ts.URL + "/v1"
	return s
}

// anthropicRequest is the body of POST /v1/messages.
type anthropicRequest struct {
	Model       string             `json:"model"`
	MaxTokens   *int               `json:"max_tokens"`
	System      json.RawMessage    `json:"system"`
	Messages    []anthropicMessage `json:"messages"`
	Tools       []anthropicTool    `json:"tools"`
	ToolChoice  any                `json:"tool_choice"`
	Stream      bool               `json:"stream"`
	Temperature *float64           `json:"temperature"`
	Thinking    *struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	} `json:"thinking"`
}

// anthropicMessage is a message of a request; Content is a string or an
// array of blocks.
type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicBlock is a content block of a request or a response.
type anthropicBlock struct {
	Type         string                 `json:"type"`
	Text         string                 `json:"text,omitempty"`
	ID           string                 `json:"id,omitempty"`
	Name         string                 `json:"name,omitempty"`
	Input        json.RawMessage        `json:"input,omitempty"`
	ToolUseID    string                 `json:"tool_use_id,omitempty"`
	Content      json.RawMessage        `json:"content,omitempty"`
	IsError      bool                   `json:"is_error,omitempty"`
	Thinking     string                 `json:"thinking,omitempty"`
	Signature    string                 `json:"signature,omitempty"`
	Source       *anthropicImage        `json:"source,omitempty"`
	CacheControl *anthropicCacheControl `json:"cache_control,omitempty"`
}

// anthropicImage is the source of an image block.
type anthropicImage struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url"`
}

// anthropicTool is a tool definition.
type anthropicTool struct {
	Name         string                 `json:"name"`
	Description  string                 `json:"description"`
	InputSchema  any                    `json:"input_schema"`
	CacheControl *anthropicCacheControl `json:"cache_control,omitempty"`
}

// anthropicCacheControl is the cache_control of a block or a tool: a
// breakpoint of the prompt cache.
type anthropicCacheControl struct {
	Type string `json:"type"`
	TTL  string `json:"ttl,omitempty"`
}

// duration is the lifetime the breakpoint asks for; 0 for the default.
func (c *anthropicCacheControl) duration() time.Duration {
	if c != nil && c.TTL == "1h" {
		return time.Hour
	}
	return 0
}

// anthropicToolName is the pattern of a tool name.
var anthropicToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// handleMessages serves POST /v1/messages.
func (s *AnthropicServer) handleMessages(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Api-Key") == "" {
		writeAnthropicError(w, http.StatusUnauthorized, "x-api-key header is required")
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		writeAnthropicError(w, http.StatusBadRequest, "anthropic-version: header is required")
		return
	}
	body, ok := readBody(w, r, writeAnthropicError)
	if !ok {
		return
	}
	var ar anthropicRequest
	if err := decodeStrictJSON(body, &ar); err != nil {
		writeAnthropicError(w, http.StatusBadRequest, err.Error())
		return
	}
	if msg := anthropicExtraFields(body); msg != "" {
		writeAnthropicError(w, http.StatusBadRequest, msg)
		return
	}
	blocks, msg := checkAnthropicRequest(&ar, s.cfg.validate)
	if msg != "" {
		writeAnthropicError(w, http.StatusBadRequest, msg)
		return
	}
	req := &Request{
		Model:      ar.Model,
		Messages:   anthropicToLLMs(ar.System, ar.Messages, blocks),
		Tools:      anthropicTools(ar.Tools),
		ToolChoice: ar.ToolChoice,
		Stream:     ar.Stream,
		Thinking:   ar.Thinking != nil && ar.Thinking.Type == "enabled",
		MaxTokens:  *ar.MaxTokens,
		Body:       body,
	}
	req.PromptTokens = EstimatePromptTokens(req.Messages, req.Tools)
	for i, t := range ar.Tools {
		if t.CacheControl != nil {
			if req.toolBreakpoints == nil {
				req.toolBreakpoints = make([]bool, len(ar.Tools))
			}
			req.toolBreakpoints[i] = true
		}
	}
	rep := s.play(w, r, req, keepReasoning(req.Thinking), writeAnthropicError)
	switch {
	case rep == nil:
	case req.Stream:
		s.stream(w, r, req, rep)
	default:
		writeJSON(w, http.StatusOK, s.message(req, rep, true))
	}
}

// anthropicFields are the top-level fields of a Messages API request.
var anthropicFields = []string{"model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream",
	"temperature", "top_p", "top_k", "tools", "tool_choice", "thinking", "service_tier", "container", "mcp_servers",
	"context_management"}

// anthropicExtraFields returns the API's message for the first top-level
// field of body (in sorted order) the API does not know, or "".
func anthropicExtraFields(body []byte) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(body, &fields) != nil {
		return ""
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(anthropicFields, k) {
			return k + ": Extra inputs are not permitted"
		}
	}
	return ""
}

// checkAnthropicRequest checks ar as the Messages API does. It returns the
// decoded blocks of each message, or the API's message for the first
// violation. Conversation rules (pairing of tool_use and tool_result, role
// order, thinking in tool loops) are checked only when validate is set.
func checkAnthropicRequest(ar *anthropicRequest, validate bool) ([][]anthropicBlock, string) {
	switch {
	case ar.Model == "":
		return nil, "model: Field required"
	case ar.MaxTokens == nil:
		return nil, "max_tokens: Field required"
	case *ar.MaxTokens < 1:
		return nil, "max_tokens: Input should be greater than or equal to 1"
	case ar.Messages == nil:
		return nil, "messages: Field required"
	case len(ar.Messages) == 0:
		return nil, "messages: at least one message is required"
	}
	if msg := checkAnthropicSystem(ar.System); msg != "" {
		return nil, msg
	}
	for i, t := range ar.Tools {
		switch {
		case !anthropicToolName.MatchString(t.Name):
			return nil, fmt.Sprintf("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		case t.InputSchema == nil:
			return nil, fmt.Sprintf("tools.%d.custom.input_schema: Field required", i)
		}
		if m, ok := t.InputSchema.(map[string]any); !ok || m["type"] != "object" {
			return nil, fmt.Sprintf("tools.%d.custom.input_schema.type: Input should be 'object'", i)
		}
	}
	thinking := ar.Thinking != nil && ar.Thinking.Type == "enabled"
	if thinking {
		switch {
		case ar.Thinking.BudgetTokens < 1024:
			return nil, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
		case *ar.MaxTokens <= ar.Thinking.BudgetTokens:
			return nil, "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at " +
				"https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
		case ar.Temperature != nil && *ar.Temperature != 1:
			return nil, "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at " +
				"https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking"
		case forcesToolUse(ar.ToolChoice):
			return nil, "Thinking may not be enabled when tool_choice forces tool use."
		}
	}
	blocks := make([][]anthropicBlock, len(ar.Messages))
	for i, m := range ar.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		bs, msg := decodeAnthropicContent(i, m)
		if msg != "" {
			return nil, msg
		}
		if len(bs) == 0 && (i < len(ar.Messages)-1 || m.Role != "assistant") {
			return nil, fmt.Sprintf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		blocks[i] = bs
	}
	if msg := checkCacheControl(ar, blocks); msg != "" {
		return nil, msg
	}
	if !validate {
		return blocks, ""
	}
	if ar.Messages[0].Role != "user" {
		return nil, `messages: first message must use the "user" role`
	}
	return blocks, checkAnthropicTurns(ar.Messages, blocks, thinking)
}

// checkCacheControl checks the cache_control of the tools, the system
// blocks and the message blocks: each must be {"type":"ephemeral"} with
// an optional ttl of "5m" or "1h", and there may be at most 4.
func checkCacheControl(ar *anthropicRequest, blocks [][]anthropicBlock) string {
	n := 0
	check := func(at string, c *anthropicCacheControl) string {
		if c == nil {
			return ""
		}
		n++
		switch {
		case c.Type != "ephemeral":
			return at + ".cache_control.type: Input should be 'ephemeral'"
		case c.TTL != "" && c.TTL != "5m" && c.TTL != "1h":
			return at + ".cache_control.ephemeral.ttl: Input should be '5m' or '1h'"
		}
		return ""
	}
	for i, t := range ar.Tools {
		if msg := check(fmt.Sprintf("tools.%d.custom", i), t.CacheControl); msg != "" {
			return msg
		}
	}
	var sys []anthropicBlock
	if raw := bytes.TrimSpace(ar.System); len(raw) > 0 && raw[0] == '[' {
		_ = json.Unmarshal(raw, &sys) // checked by checkAnthropicSystem
	}
	for j, b := range sys {
		if msg := check(fmt.Sprintf("system.%d.text", j), b.CacheControl); msg != "" {
			return msg
		}
	}
	for i, bs := range blocks {
		for j, b := range bs {
			if msg := check(fmt.Sprintf("messages.%d.content.%d.%s", i, j, b.Type), b.CacheControl); msg != "" {
				return msg
			}
		}
	}
	if n > maxCacheBreakpoints {
		return fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", maxCacheBreakpoints, n)
	}
	return ""
}

// forcesToolUse reports whether a tool_choice forces the model to call a
// tool ({"type":"any"} or {"type":"tool",…}).
func forcesToolUse(choice any) bool {
	m, ok := choice.(map[string]any)
	return ok && (m["type"] == "any" || m["type"] == "tool")
}

// checkAnthropicSystem checks the system prompt: a string or an array of
// text blocks.
func checkAnthropicSystem(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == '"' || string(raw) == "null" {
		return ""
	}
	var bs []anthropicBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return "system: Input should be a valid string or a list of text blocks"
	}
	for j, b := range bs {
		if b.Type != "text" {
			return fmt.Sprintf("system.%d.type: Input should be 'text'", j)
		}
		if b.Text == "" {
			return "system: text content blocks must be non-empty"
		}
	}
	return ""
}

// decodeAnthropicContent decodes the content of message i into blocks (a
// string becomes one text block) and checks the block types its role may
// carry.
func decodeAnthropicContent(i int, m anthropicMessage) ([]anthropicBlock, string) {
	raw := bytes.TrimSpace(m.Content)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Sprintf("messages.%d.content: Field required", i)
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Sprintf("messages.%d.content: %v", i, err)
		}
		if s == "" {
			return nil, ""
		}
		return []anthropicBlock{{Type: "text", Text: s}}, ""
	}
	var bs []anthropicBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, fmt.Sprintf("messages.%d.content: Input should be a valid string or a list of content blocks", i)
	}
	allowed := map[string]bool{"text": true, "image": true, "document": true, "tool_result": true}
	if m.Role == "assistant" {
		allowed = map[string]bool{"text": true, "tool_use": true, "thinking": true, "redacted_thinking": true}
	}
	for j, b := range bs {
		at := fmt.Sprintf("messages.%d.content.%d", i, j)
		switch {
		case !allowed[b.Type]:
			return nil, fmt.Sprintf("%s.type: a %s message cannot hold a %q block", at, m.Role, b.Type)
		case b.Type == "text" && b.Text == "":
			return nil, "messages: text content blocks must be non-empty"
		case b.Type == "tool_use" && (b.ID == "" || b.Name == ""):
			return nil, fmt.Sprintf("%s.tool_use: id and name are required", at)
		case b.Type == "tool_use" && !isJSONObject(b.Input):
			return nil, fmt.Sprintf("%s.tool_use.input: Input should be a valid dictionary", at)
		case b.Type == "tool_result" && b.ToolUseID == "":
			return nil, fmt.Sprintf("%s.tool_result.tool_use_id: Field required", at)
		case b.Type == "image" && b.Source == nil:
			return nil, fmt.Sprintf("%s.image.source: Field required", at)
		}
	}
	return bs, ""
}

// checkAnthropicTurns checks the pairing of tool_use and tool_result blocks
// across turns, consecutive messages of one role being one turn, and, with
// thinking on, that a tool loop's assistant turn starts with its thinking.
func checkAnthropicTurns(msgs []anthropicMessage, blocks [][]anthropicBlock, thinking bool) string {
	// turns[k] lists the messages of the k-th turn.
	var turns [][]int
	for i, m := range msgs {
		if i == 0 || m.Role != msgs[i-1].Role {
			turns = append(turns, nil)
		}
		turns[len(turns)-1] = append(turns[len(turns)-1], i)
	}
	// toolUses returns the tool_use ids of a turn, in order, and the
	// messages holding them.
	toolUses := func(turn []int) (ids []string, at []int) {
		for _, i := range turn {
			for _, b := range blocks[i] {
				if b.Type == "tool_use" {
					ids = append(ids, b.ID)
					at = append(at, i)
				}
			}
		}
		return ids, at
	}
	for k, turn := range turns {
		if msgs[turn[0]].Role == "user" {
			var calls []string
			if k > 0 {
				calls, _ = toolUses(turns[k-1])
			}
			for _, i := range turn {
				for j, b := range blocks[i] {
					if b.Type == "tool_result" && !slices.Contains(calls, b.ToolUseID) {
						return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
							"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
					}
				}
			}
			continue
		}
		calls, at := toolUses(turn)
		if len(calls) == 0 {
			continue
		}
		answered := map[string]bool{}
		if k+1 < len(turns) {
			for _, i := range turns[k+1] {
				for _, b := range blocks[i] {
					if b.Type == "tool_result" {
						answered[b.ToolUseID] = true
					}
				}
			}
		}
		var missing []string
		missingAt := -1 // the message holding the first unanswered call
		for n, id := range calls {
			if !answered[id] {
				missing = append(missing, id)
				if missingAt < 0 {
					missingAt = at[n]
				}
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
				"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", missingAt, strings.Join(missing, ", "))
		}
		if thinking && k == len(turns)-2 {
			// The conversation ends in this turn's tool results: the turn
			// must start with its thinking.
			first := blocks[turn[0]]
			if typ := first[0].Type; typ != "thinking" && typ != "redacted_thinking" {
				return fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. "+
					"When `thinking` is enabled, a final `assistant` message must start with a thinking block "+
					"(preceeding the lastmost set of `tool_use` and `tool_result` blocks). "+
					"We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. "+
					"Please consult our documentation at https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking", turn[0], typ)
			}
		}
	}
	return ""
}

// anthropicToLLMs converts a request's system prompt and messages into
// llms messages (see AnthropicServer).
func anthropicToLLMs(system json.RawMessage, msgs []anthropicMessage, blocks [][]anthropicBlock) []llms.MessageContent {
	var out []llms.MessageContent
	if sys := anthropicSystemParts(system); len(sys) > 0 {
		out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeSystem, Parts: sys})
	}
	names := map[string]string{}
	for i, m := range msgs {
		var cur *llms.MessageContent
		add := func(role llms.ChatMessageType, p llms.ContentPart) {
			if cur == nil || cur.Role != role {
				out = append(out, llms.MessageContent{Role: role})
				cur = &out[len(out)-1]
			}
			cur.Parts = append(cur.Parts, p)
		}
		human := llms.ChatMessageTypeHuman
		if m.Role == "assistant" {
			human = llms.ChatMessageTypeAI
		}
		for _, b := range blocks[i] {
			var p llms.ContentPart
			role := human
			switch b.Type {
			case "text":
				p = llms.TextContent{Text: b.Text}
			case "image":
				p = anthropicImagePart(b.Source)
			case "tool_use":
				var args bytes.Buffer
				if err := json.Compact(&args, b.Input); err != nil {
					args.Write(b.Input)
				}
				names[b.ID] = b.Name
				p = llms.ToolCall{ID: b.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: b.Name, Arguments: args.String()}}
			case "tool_result":
				role = llms.ChatMessageTypeTool
				p = llms.ToolCallResponse{ToolCallID: b.ToolUseID, Name: names[b.ToolUseID], Content: anthropicResultText(b.Content)}
			default: // thinking, redacted_thinking, document: not recorded
				continue
			}
			if b.CacheControl != nil {
				p = llms.CachedContent{ContentPart: p, CacheControl: &llms.CacheControl{Type: b.CacheControl.Type, Duration: b.CacheControl.duration()}}
			}
			add(role, p)
		}
	}
	return out
}

// anthropicSystemParts converts the system prompt into text parts.
func anthropicSystemParts(raw json.RawMessage) []llms.ContentPart {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil
		}
		return []llms.ContentPart{llms.TextContent{Text: s}}
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(raw, &bs) // checked by checkAnthropicSystem
	var parts []llms.ContentPart
	for _, b := range bs {
		var p llms.ContentPart = llms.TextContent{Text: b.Text}
		if b.CacheControl != nil {
			p = llms.CachedContent{ContentPart: p, CacheControl: &llms.CacheControl{Type: b.CacheControl.Type, Duration: b.CacheControl.duration()}}
		}
		parts = append(parts, p)
	}
	return parts
}

// anthropicImagePart converts an image source into a part.
func anthropicImagePart(src *anthropicImage) llms.ContentPart {
	if src.Type == "url" {
		return llms.ImageURLContent{URL: src.URL}
	}
	data, err := base64.StdEncoding.DecodeString(src.Data)
	if err != nil {
		data = []byte(src.Data)
	}
	return llms.BinaryContent{MIMEType: src.MediaType, Data: data}
}

// anthropicResultText returns the text of a tool_result's content: a
// string, or the joined text blocks of an array.
func anthropicResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []anthropicBlock
	_ = json.Unmarshal(raw, &bs)
	var b strings.Builder
	for _, blk := range bs {
		b.WriteString(blk.Text)
	}
	return b.String()
}

// anthropicTools converts tool definitions.
func anthropicTools(in []anthropicTool) []llms.Tool {
	if len(in) == 0 {
		return nil
	}
	out := make([]llms.Tool, len(in))
	for i, t := range in {
		out[i] = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.InputSchema,
		}}
	}
	return out
}

// anthropicStopReason translates a Reply's StopReason.
func anthropicStopReason(s string) string {
	switch s {
	case "stop":
		return "end_turn"
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	default:
		return s
	}
}

// anthropicUsage is the usage object of a message.
type anthropicUsage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// anthropicUsageOf returns the usage of rep. Anthropic's input_tokens
// leaves out the tokens read from or written to the cache.
func anthropicUsageOf(rep *resolved) anthropicUsage {
	return anthropicUsage{
		InputTokens:              max(0, rep.Usage.PromptTokens-rep.Usage.CacheReadTokens-rep.Usage.CacheWriteTokens),
		OutputTokens:             rep.Usage.CompletionTokens,
		CacheCreationInputTokens: rep.Usage.CacheWriteTokens,
		CacheReadInputTokens:     rep.Usage.CacheReadTokens,
	}
}

// anthropicMessageBody is a message of a response.
type anthropicMessageBody struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Content      []anthropicBlock `json:"content"`
	Model        string           `json:"model"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

// thinkingSignature is the deterministic signature of a thinking text.
func thinkingSignature(text string) string {
	sum := sha256.Sum256([]byte("llmtest thinking: " + text))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// blocks returns the content blocks of rep's answer.
func anthropicAnswer(rep *resolved) []anthropicBlock {
	var out []anthropicBlock
	if rep.Reasoning != "" {
		out = append(out, anthropicBlock{Type: "thinking", Thinking: rep.Reasoning, Signature: thinkingSignature(rep.Reasoning)})
	}
	if rep.content != "" || len(rep.ToolCalls) == 0 {
		out = append(out, anthropicBlock{Type: "text", Text: rep.content})
	}
	for _, tc := range rep.ToolCalls {
		out = append(out, anthropicBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: objectArguments(tc.Arguments)})
	}
	return out
}

// message builds the message answering req; done says whether it is
// complete (a non-streamed answer) or the empty start of a stream.
func (s *AnthropicServer) message(req *Request, rep *resolved, done bool) *anthropicMessageBody {
	m := &anthropicMessageBody{
		ID:      fmt.Sprintf("msg_llmtest_%d", req.Index+1),
		Type:    "message",
		Role:    "assistant",
		Content: []anthropicBlock{},
		Model:   s.model(req),
		Usage:   anthropicUsageOf(rep),
	}
	if done {
		stop := anthropicStopReason(rep.StopReason)
		m.Content, m.StopReason = anthropicAnswer(rep), &stop
	} else {
		m.Usage.OutputTokens = 1
	}
	return m
}

// stream writes rep as the Messages API's server-sent events.
func (s *AnthropicServer) stream(w http.ResponseWriter, r *http.Request, req *Request, rep *resolved) {
	sw := s.startStream(w, r, "text/event-stream; charset=utf-8", rep)
	event := func(name string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			sw.abort()
		}
		sw.write(fmt.Appendf(nil, "event: %s\ndata: %s\n\n", name, b))
	}
	type obj = map[string]any
	delta := func(i int, d obj) {
		sw.pause()
		event("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": d})
	}
	event("message_start", obj{"type": "message_start", "message": s.message(req, rep, false)})
	event("ping", obj{"type": "ping"})

	i := 0
	if rep.Reasoning != "" {
		event("content_block_start", obj{"type": "content_block_start", "index": i,
			"content_block": obj{"type": "thinking", "thinking": "", "signature": ""}})
		for _, c := range rep.reasoningChunks {
			delta(i, obj{"type": "thinking_delta", "thinking": c})
		}
		delta(i, obj{"type": "signature_delta", "signature": thinkingSignature(rep.Reasoning)})
		event("content_block_stop", obj{"type": "content_block_stop", "index": i})
		i++
	}
	if rep.content != "" || len(rep.ToolCalls) == 0 {
		event("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "text", "text": ""}})
		for _, c := range rep.chunks {
			delta(i, obj{"type": "text_delta", "text": c})
		}
		if rep.Err != nil {
			sw.abort()
		}
		event("content_block_stop", obj{"type": "content_block_stop", "index": i})
		i++
	}
	if rep.Err != nil {
		sw.abort()
	}
	for _, tc := range rep.ToolCalls {
		event("content_block_start", obj{"type": "content_block_start", "index": i,
			"content_block": obj{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": obj{}}})
		delta(i, obj{"type": "input_json_delta", "partial_json": ""})
		for _, frag := range splitFragments(string(objectArguments(tc.Arguments))) {
			delta(i, obj{"type": "input_json_delta", "partial_json": frag})
		}
		event("content_block_stop", obj{"type": "content_block_stop", "index": i})
		i++
	}
	event("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": anthropicStopReason(rep.StopReason), "stop_sequence": nil},
		"usage": obj{"output_tokens": rep.Usage.CompletionTokens}})
	event("message_stop", obj{"type": "message_stop"})
}

// anthropicErrorType returns Anthropic's error type for an HTTP status.
func anthropicErrorType(status int) string {
	switch status {
	case 400, 405:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

// writeAnthropicError writes an Anthropic error body.
func writeAnthropicError(w http.ResponseWriter, status int, message string) {
	writeJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": anthropicErrorType(status), "message": message},
	})
}
