package llmtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/llms"
)

// This file holds the OpenAI chat-completions wire format: what the server
// decodes and what it sends.

// wireRequest is the body of POST /v1/chat/completions.
type wireRequest struct {
	Model          string         `json:"model"`
	Messages       []wireMessage  `json:"messages"`
	Tools          []wireTool     `json:"tools"`
	ToolChoice     any            `json:"tool_choice"`
	Stream         bool           `json:"stream"`
	StreamOptions  *streamOptions `json:"stream_options"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

// streamOptions is the stream_options object of a request.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireMessage is a message of a request.
type wireMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	Name         string          `json:"name"`
	ToolCalls    []wireToolCall  `json:"tool_calls"`
	ToolCallID   string          `json:"tool_call_id"`
	FunctionCall *wireFunction   `json:"function_call"`
}

// wireTool is a tool definition of a request.
type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  any    `json:"parameters"`
		Strict      bool   `json:"strict"`
	} `json:"function"`
}

// wireToolCall is a complete tool call (in requests and non-streamed
// responses).
type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

// wireFunction is the function of a tool call.
type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// decodeRequest decodes and converts a request body.
func decodeRequest(body []byte) (*wireRequest, []llms.MessageContent, error) {
	var wr wireRequest
	if err := decodeStrictJSON(body, &wr); err != nil {
		return nil, nil, err
	}
	if wr.Messages == nil {
		return nil, nil, errors.New("missing required field 'messages'")
	}
	msgs, err := convertMessages(wr.Messages)
	if err != nil {
		return nil, nil, err
	}
	return &wr, msgs, nil
}

// convertMessages converts wire messages into llms messages.
func convertMessages(in []wireMessage) ([]llms.MessageContent, error) {
	out := make([]llms.MessageContent, 0, len(in))
	names := map[string]string{} // tool call id → tool name
	for i, wm := range in {
		var m llms.MessageContent
		switch wm.Role {
		case "system", "developer":
			m.Role = llms.ChatMessageTypeSystem
		case "user":
			m.Role = llms.ChatMessageTypeHuman
		case "assistant":
			m.Role = llms.ChatMessageTypeAI
		case "tool":
			m.Role = llms.ChatMessageTypeTool
		case "function":
			m.Role = llms.ChatMessageTypeFunction
		default:
			return nil, fmt.Errorf("messages[%d]: unsupported role %q", i, wm.Role)
		}
		parts, err := contentParts(wm.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i, err)
		}
		switch m.Role {
		case llms.ChatMessageTypeTool, llms.ChatMessageTypeFunction:
			text, err := contentString(wm.Content)
			if err != nil {
				return nil, fmt.Errorf("messages[%d]: %w", i, err)
			}
			name := wm.Name
			if name == "" {
				name = names[wm.ToolCallID]
			}
			m.Parts = []llms.ContentPart{llms.ToolCallResponse{ToolCallID: wm.ToolCallID, Name: name, Content: text}}
		case llms.ChatMessageTypeAI:
			if len(parts) > 0 && !(len(wm.ToolCalls) > 0 && isEmptyText(parts)) {
				m.Parts = parts
			}
			for _, tc := range wm.ToolCalls {
				typ := tc.Type
				if typ == "" {
					typ = "function"
				}
				m.Parts = append(m.Parts, llms.ToolCall{
					ID:           tc.ID,
					Type:         typ,
					FunctionCall: &llms.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments},
				})
				names[tc.ID] = tc.Function.Name
			}
			if len(m.Parts) == 0 {
				m.Parts = []llms.ContentPart{llms.TextContent{}}
			}
		default:
			m.Parts = parts
			if len(m.Parts) == 0 {
				m.Parts = []llms.ContentPart{llms.TextContent{}}
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// isEmptyText reports whether parts is a single empty text part.
func isEmptyText(parts []llms.ContentPart) bool {
	t, ok := parts[0].(llms.TextContent)
	return len(parts) == 1 && ok && t.Text == ""
}

// contentParts decodes a message's content: absent or null (no parts), a
// string (one text part) or an array of typed parts.
func contentParts(raw json.RawMessage) ([]llms.ContentPart, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("content: %w", err)
		}
		return []llms.ContentPart{llms.TextContent{Text: s}}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("content must be a string, an array of parts or null: %w", err)
	}
	parts := make([]llms.ContentPart, 0, len(items))
	for j, item := range items {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			return nil, fmt.Errorf("content[%d]: %w", j, err)
		}
		var (
			p   llms.ContentPart
			err error
		)
		switch head.Type {
		case "text":
			var t llms.TextContent
			err = json.Unmarshal(item, &t)
			p = t
		case "image_url":
			var u llms.ImageURLContent
			err = json.Unmarshal(item, &u)
			p = u
		case "binary":
			var b llms.BinaryContent
			err = json.Unmarshal(item, &b)
			p = b
		default:
			return nil, fmt.Errorf("content[%d]: unsupported part type %q", j, head.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("content[%d]: %w", j, err)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// contentString decodes the content of a tool or function message: a
// string, null, or an array of text parts (joined).
func contentString(raw json.RawMessage) (string, error) {
	parts, err := contentParts(raw)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	for _, p := range parts {
		t, ok := p.(llms.TextContent)
		if !ok {
			return "", fmt.Errorf("content of a tool message must be text, got %T", p)
		}
		b.WriteString(t.Text)
	}
	return b.String(), nil
}

// convertTools converts wire tool definitions.
func convertTools(in []wireTool) []llms.Tool {
	if len(in) == 0 {
		return nil
	}
	out := make([]llms.Tool, len(in))
	for i, t := range in {
		out[i] = llms.Tool{Type: t.Type, Function: &llms.FunctionDefinition{
			Name:        t.Function.Name,
			Description: t.Function.Description,
			Parameters:  t.Function.Parameters,
			Strict:      t.Function.Strict,
		}}
	}
	return out
}

// wireUsage is the usage object of a response.
type wireUsage struct {
	PromptTokens            int                      `json:"prompt_tokens"`
	CompletionTokens        int                      `json:"completion_tokens"`
	TotalTokens             int                      `json:"total_tokens"`
	CompletionTokensDetails *completionTokensDetails `json:"completion_tokens_details,omitempty"`
	PromptTokensDetails     *promptTokensDetails     `json:"prompt_tokens_details,omitempty"`
}

// promptTokensDetails is the breakdown of the prompt tokens.
type promptTokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// completionTokensDetails is the breakdown of the completion tokens.
type completionTokensDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// usageOf returns the wire usage of r, with the reasoning tokens' details
// when withDetails is set.
func usageOf(r *resolved, withDetails bool) *wireUsage {
	u := &wireUsage{
		PromptTokens:     r.Usage.PromptTokens,
		CompletionTokens: r.Usage.CompletionTokens,
		TotalTokens:      r.totalTokens,
	}
	if withDetails {
		u.CompletionTokensDetails = &completionTokensDetails{ReasoningTokens: r.reasoningTokens}
		u.PromptTokensDetails = &promptTokensDetails{CachedTokens: r.Usage.CacheReadTokens}
	}
	return u
}

// wireResponse is a non-streamed chat completion.
type wireResponse struct {
	ID                string       `json:"id"`
	Object            string       `json:"object"`
	Created           int64        `json:"created"`
	Model             string       `json:"model"`
	Choices           []wireChoice `json:"choices"`
	Usage             *wireUsage   `json:"usage"`
	SystemFingerprint string       `json:"system_fingerprint"`
}

// wireChoice is a choice of a non-streamed completion.
type wireChoice struct {
	Index        int             `json:"index"`
	Message      responseMessage `json:"message"`
	FinishReason string          `json:"finish_reason"`
}

// responseMessage is the message of a non-streamed choice. Content is null
// when the message has tool calls and no text, as OpenAI sends it.
type responseMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
	ReasoningContent string         `json:"reasoning_content,omitempty"`
}

// wireChunk is one chunk of a streamed completion.
type wireChunk struct {
	ID                string        `json:"id"`
	Object            string        `json:"object"`
	Created           int64         `json:"created"`
	Model             string        `json:"model"`
	Choices           []chunkChoice `json:"choices"`
	Usage             *wireUsage    `json:"usage,omitempty"`
	SystemFingerprint string        `json:"system_fingerprint"`
}

// chunkChoice is the choice of a stream chunk; FinishReason is null until
// the finish chunk.
type chunkChoice struct {
	Index        int     `json:"index"`
	Delta        delta   `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

// delta is the delta of a stream chunk.
type delta struct {
	Role             string          `json:"role,omitempty"`
	Content          *string         `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []deltaToolCall `json:"tool_calls,omitempty"`
}

// deltaToolCall is a streamed tool-call delta. The first delta of a call
// has Index, ID, Type "function", the name and empty arguments; the later
// ones only Index and an arguments fragment (no type, which the OpenAI
// client would take for a new call).
type deltaToolCall struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function deltaFunction `json:"function"`
}

// deltaFunction is the function of a tool-call delta.
type deltaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// wireError is an OpenAI error body.
type wireError struct {
	Error wireErrorDetail `json:"error"`
}

// wireErrorDetail is the error object of an OpenAI error body.
type wireErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// errorKind returns the OpenAI error type and code for an HTTP status.
func errorKind(status int) (typ string, code *string) {
	str := func(s string) *string { return &s }
	switch {
	case status == 401:
		return "invalid_request_error", str("invalid_api_key")
	case status == 404:
		return "invalid_request_error", str("model_not_found")
	case status == 429:
		return "requests", str("rate_limit_exceeded")
	case status >= 500:
		return "server_error", nil
	default:
		return "invalid_request_error", nil
	}
}
