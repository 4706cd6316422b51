package memory

import "github.com/tmc/langchaingo/llms"

// A Tokenizer counts the tokens of one message, for [TokenWindow]. It must
// be deterministic (the same message always counts the same) and safe for
// concurrent use. Counts below zero are taken as zero, and counts above
// math.MaxInt32 as math.MaxInt32.
//
// To count with a real tokenizer, wrap it in a [TokenizerFunc], for example
// with langchaingo's llms.CountTokens (tiktoken, which needs its BPE files).
type Tokenizer interface {
	CountTokens(msg llms.MessageContent) int
}

// TokenizerFunc adapts a function to a [Tokenizer].
type TokenizerFunc func(msg llms.MessageContent) int

// CountTokens returns f(msg).
func (f TokenizerFunc) CountTokens(msg llms.MessageContent) int { return f(msg) }

// Constants of [EstimateTokens].
const (
	// BytesPerToken is the number of bytes of text taken as one token.
	BytesPerToken = 4
	// MessageOverheadTokens is added to every message for its role and
	// framing, as chat APIs do (OpenAI counts 3 to 4 per message).
	MessageOverheadTokens = 4
)

// EstimateTokens is the default token counter of [TokenWindow]: a
// deterministic, offline estimate of
//
//	ceil(bytes / BytesPerToken) + MessageOverheadTokens
//
// where bytes sums, over the message's parts, the text of a text part; the
// URL and detail of an image URL; the MIME type and data length of binary
// content; the id, type, function name and arguments of a tool call; the
// tool call id, name and content of a tool result; and the inner part of
// cached content. It is close to real counts for English text and JSON, and
// errs high for other scripts; use a real tokenizer where precision matters.
func EstimateTokens(msg llms.MessageContent) int {
	n := 0
	for _, p := range msg.Parts {
		n += partBytes(p)
	}
	return (n+BytesPerToken-1)/BytesPerToken + MessageOverheadTokens
}

func partBytes(p llms.ContentPart) int {
	switch p := derefPart(p).(type) {
	case llms.TextContent:
		return len(p.Text)
	case llms.ImageURLContent:
		return len(p.URL) + len(p.Detail)
	case llms.BinaryContent:
		return len(p.MIMEType) + len(p.Data)
	case llms.ToolCall:
		n := len(p.ID) + len(p.Type)
		if p.FunctionCall != nil {
			n += len(p.FunctionCall.Name) + len(p.FunctionCall.Arguments)
		}
		return n
	case llms.ToolCallResponse:
		return len(p.ToolCallID) + len(p.Name) + len(p.Content)
	case llms.CachedContent:
		return partBytes(p.ContentPart)
	}
	return 0
}
