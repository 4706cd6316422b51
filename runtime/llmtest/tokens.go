package llmtest

import (
	"encoding/json"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Constants of the token estimator.
const (
	// bytesPerToken is the number of bytes counted as one token.
	bytesPerToken = 4
	// messageOverhead is added for every message (role and framing).
	messageOverhead = 4
	// toolOverhead is added for every tool definition.
	toolOverhead = 4
	// imageTokens is counted for an image or binary part.
	imageTokens = 85
)

// EstimateTokens estimates the number of tokens of s: one token per 4 bytes,
// rounded up, so any non-empty string counts at least 1 and "" counts 0.
// It is deterministic and cheap, and meant for comparing sizes in tests, not
// for matching a real tokenizer.
func EstimateTokens(s string) int {
	return (len(s) + bytesPerToken - 1) / bytesPerToken
}

// EstimateMessageTokens estimates the tokens of one message: a fixed
// overhead of 4 per message plus, per part, [EstimateTokens] of its text
// (text parts), of the tool name and arguments (tool calls), or of the
// content (tool results); an image or binary part counts 85. Tool-call ids
// and tool-result names are not counted, so a conversation estimates the
// same in-process and after a round trip over the wire.
func EstimateMessageTokens(m llms.MessageContent) int {
	n := messageOverhead
	for _, p := range m.Parts {
		n += estimatePart(p)
	}
	return n
}

// estimatePart estimates one content part.
func estimatePart(p llms.ContentPart) int {
	switch p := p.(type) {
	case llms.TextContent:
		return EstimateTokens(p.Text)
	case llms.ToolCall:
		if p.FunctionCall == nil {
			return 0
		}
		return EstimateTokens(p.FunctionCall.Name) + EstimateTokens(p.FunctionCall.Arguments)
	case llms.ToolCallResponse:
		return EstimateTokens(p.Content)
	case llms.ImageURLContent, llms.BinaryContent:
		return imageTokens
	case llms.CachedContent:
		return estimatePart(p.ContentPart)
	default:
		return 0
	}
}

// EstimatePromptTokens estimates a whole prompt: the sum of
// [EstimateMessageTokens] over messages plus, per tool, an overhead of 4 and
// [EstimateTokens] of its name, description and compact JSON parameters.
// [Request.PromptTokens] is computed with it.
func EstimatePromptTokens(messages []llms.MessageContent, tools []llms.Tool) int {
	n := 0
	for _, m := range messages {
		n += EstimateMessageTokens(m)
	}
	for _, t := range tools {
		n += toolOverhead
		if t.Function == nil {
			continue
		}
		n += EstimateTokens(t.Function.Name) + EstimateTokens(t.Function.Description)
		if t.Function.Parameters != nil {
			if b, err := json.Marshal(t.Function.Parameters); err == nil && string(b) != "null" {
				n += EstimateTokens(strings.TrimSpace(string(b)))
			}
		}
	}
	return n
}
