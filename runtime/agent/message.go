package agent

import (
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// The roles of a [Message].
const (
	roleHuman = "user"
	roleAI    = "assistant"
	roleTool  = "tool"
)

// A Message is a message of the conversation as a hand-off keeps it (in
// the durable state): text, tool calls and tool results.
type Message struct {
	// Role is "user", "assistant" or "tool".
	Role string `json:"role"`
	// Text is the message's text.
	Text string `json:"text,omitempty"`
	// ToolCalls are an assistant message's tool calls.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// Result is a tool message's result.
	Result *ToolResult `json:"result,omitempty"`
}

// A ToolCall is a tool call of a [Message].
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// A ToolResult is a tool's result in a [Message].
type ToolResult struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Content string `json:"content"`
}

// fromLLMs converts a prompt, leaving out its system messages.
func fromLLMs(msgs []llms.MessageContent) []Message {
	out := make([]Message, 0, len(msgs))
	for _, mc := range msgs {
		var m Message
		switch mc.Role {
		case llms.ChatMessageTypeHuman, llms.ChatMessageTypeGeneric:
			m.Role = roleHuman
		case llms.ChatMessageTypeAI:
			m.Role = roleAI
		case llms.ChatMessageTypeTool, llms.ChatMessageTypeFunction:
			m.Role = roleTool
		default:
			continue
		}
		var text []string
		for _, p := range mc.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				text = append(text, p.Text)
			case llms.ToolCall:
				c := ToolCall{ID: p.ID}
				if p.FunctionCall != nil {
					c.Name, c.Arguments = p.FunctionCall.Name, p.FunctionCall.Arguments
				}
				m.ToolCalls = append(m.ToolCalls, c)
			case llms.ToolCallResponse:
				m.Result = &ToolResult{ID: p.ToolCallID, Name: p.Name, Content: p.Content}
			}
		}
		m.Text = strings.Join(text, "")
		out = append(out, m)
	}
	return out
}

// answer converts a model's choice to an assistant message.
func answer(c *llms.ContentChoice) Message {
	m := Message{Role: roleAI, Text: c.Content}
	for _, tc := range c.ToolCalls {
		call := ToolCall{ID: tc.ID}
		if tc.FunctionCall != nil {
			call.Name, call.Arguments = tc.FunctionCall.Name, tc.FunctionCall.Arguments
		}
		m.ToolCalls = append(m.ToolCalls, call)
	}
	return m
}

// toLLMs converts messages back for a prompt.
func toLLMs(msgs []Message) []llms.MessageContent {
	out := make([]llms.MessageContent, 0, len(msgs))
	for _, m := range msgs {
		switch m.Role {
		case roleHuman:
			out = append(out, llms.TextParts(llms.ChatMessageTypeHuman, m.Text))
		case roleAI:
			mc := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			if m.Text != "" {
				mc.Parts = append(mc.Parts, llms.TextContent{Text: m.Text})
			}
			for _, c := range m.ToolCalls {
				mc.Parts = append(mc.Parts, llms.ToolCall{ID: c.ID, Type: "function", FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
			}
			out = append(out, mc)
		case roleTool:
			if m.Result != nil {
				out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: m.Result.ID, Name: m.Result.Name, Content: m.Result.Content}}})
			}
		}
	}
	return out
}
