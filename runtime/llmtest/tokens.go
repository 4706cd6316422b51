package llmtest

import (
	"encoding/json"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/memory"
)

// Token estimates of the scripted models.
//
// They are runtime/memory's estimator (memory.EstimateTokens: one token per
// memory.BytesPerToken bytes, rounded up, plus memory.MessageOverheadTokens
// per message), applied to what a provider bills for a message rather than
// to everything the message holds. The difference is deliberate. A memory
// counts every byte it keeps, ids and names and image data included, to
// stay on the safe side of its budget. A scripted model plays a provider:
// it bills the content the model reads, the framing of tool calls (their
// ids and types) being part of the per-message overhead, and it must count
// a conversation the same whether it comes in-process (to a [Model]) or
// over the OpenAI wire (to a [Server]), which carries no tool name on a
// tool result, gives every tool call the type "function", and turns a
// binary part into a data URL. So [EstimateBilledTokens] leaves out tool
// call ids and types and tool result names, and counts an image, whatever
// its size or encoding, as a flat imageTokens, as OpenAI bills a
// low-detail image. For a message of text only the two agree.

// Constants of the token estimates; see also memory.BytesPerToken and
// memory.MessageOverheadTokens.
const (
	// toolOverhead is added for every tool definition.
	toolOverhead = 4
	// imageTokens is counted for an image or binary part.
	imageTokens = 85
)

// EstimateTextTokens estimates the tokens of a text: one token per
// memory.BytesPerToken (4) bytes, rounded up, so any non-empty text counts
// at least 1 and "" counts 0. It is deterministic and cheap, and meant for
// comparing sizes in tests, not for matching a real tokenizer.
func EstimateTextTokens(s string) int {
	return (len(s) + memory.BytesPerToken - 1) / memory.BytesPerToken
}

// EstimateBilledTokens estimates what a provider bills for one message:
// memory.MessageOverheadTokens (4) plus [EstimateTextTokens] of the bytes
// of its texts, of its tool calls' function names and arguments, and of its
// tool results' contents, plus 85 per image or binary part. Tool-call ids
// and types and tool-result names are not counted, so a conversation
// estimates the same in-process and after a round trip over the wire (see
// the comment at the top of this file for how and why it differs from
// memory.EstimateTokens, with which it agrees on messages of text only).
func EstimateBilledTokens(m llms.MessageContent) int {
	bytes, images := 0, 0
	for _, p := range m.Parts {
		b, i := billedPart(p)
		bytes += b
		images += i
	}
	return memory.MessageOverheadTokens + (bytes+memory.BytesPerToken-1)/memory.BytesPerToken + images*imageTokens
}

// billedPart returns the billed bytes of one content part and the number
// of images it is.
func billedPart(p llms.ContentPart) (bytes, images int) {
	switch p := p.(type) {
	case llms.TextContent:
		return len(p.Text), 0
	case llms.ToolCall:
		if p.FunctionCall == nil {
			return 0, 0
		}
		return len(p.FunctionCall.Name) + len(p.FunctionCall.Arguments), 0
	case llms.ToolCallResponse:
		return len(p.Content), 0
	case llms.ImageURLContent, llms.BinaryContent:
		return 0, 1
	case llms.CachedContent:
		return billedPart(p.ContentPart)
	default:
		return 0, 0
	}
}

// EstimatePromptTokens estimates a whole prompt: the sum of
// [EstimateBilledTokens] over messages plus, per tool, an overhead of 4 and
// [EstimateTextTokens] of its name, description and compact JSON
// parameters. [Request.PromptTokens] is computed with it.
func EstimatePromptTokens(messages []llms.MessageContent, tools []llms.Tool) int {
	n := 0
	for _, m := range messages {
		n += EstimateBilledTokens(m)
	}
	for _, t := range tools {
		n += toolOverhead
		if t.Function == nil {
			continue
		}
		n += EstimateTextTokens(t.Function.Name) + EstimateTextTokens(t.Function.Description)
		if t.Function.Parameters != nil {
			if b, err := json.Marshal(t.Function.Parameters); err == nil && string(b) != "null" {
				n += EstimateTextTokens(strings.TrimSpace(string(b)))
			}
		}
	}
	return n
}
