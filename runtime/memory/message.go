package memory

import (
	"bytes"

	"github.com/tmc/langchaingo/llms"
)

// cloneMessages returns a deep copy of msgs: the slice, every message's
// parts, binary data, function calls and cache controls are fresh, so
// neither side can change the other by mutating what it holds. Pointer parts
// (such as *llms.TextContent) are copied as values. A nil slice stays nil.
func cloneMessages(msgs []llms.MessageContent) []llms.MessageContent {
	if msgs == nil {
		return nil
	}
	out := make([]llms.MessageContent, len(msgs))
	n := 0
	for i := range msgs {
		n += len(msgs[i].Parts)
	}
	// One backing array for all parts; each message gets a capacity-capped
	// window of it, so appending to one message's parts never spills into
	// the next one.
	parts := make([]llms.ContentPart, n)
	for i, m := range msgs {
		out[i].Role = m.Role
		if m.Parts == nil {
			continue
		}
		p := parts[:len(m.Parts):len(m.Parts)]
		parts = parts[len(m.Parts):]
		for j, part := range m.Parts {
			p[j] = clonePart(part)
		}
		out[i].Parts = p
	}
	return out
}

// cloneMessage returns a deep copy of m (see cloneMessages).
func cloneMessage(m llms.MessageContent) llms.MessageContent {
	if m.Parts == nil {
		return m
	}
	parts := make([]llms.ContentPart, len(m.Parts))
	for i, p := range m.Parts {
		parts[i] = clonePart(p)
	}
	m.Parts = parts
	return m
}

// clonePart returns a deep copy of p. Pointer parts become values; a nil
// pointer becomes a nil part. Parts that hold only strings (text, image
// URLs, tool results) are immutable inside an interface value and are
// returned as they are, which saves an allocation per part.
func clonePart(p llms.ContentPart) llms.ContentPart {
	switch p.(type) {
	case nil, llms.TextContent, llms.ImageURLContent, llms.ToolCallResponse:
		return p
	}
	switch q := derefPart(p).(type) {
	case llms.BinaryContent:
		q.Data = bytes.Clone(q.Data)
		return q
	case llms.ToolCall:
		if q.FunctionCall != nil {
			fc := *q.FunctionCall
			q.FunctionCall = &fc
		}
		return q
	case llms.CachedContent:
		q.ContentPart = clonePart(q.ContentPart)
		if q.CacheControl != nil {
			cc := *q.CacheControl
			q.CacheControl = &cc
		}
		return q
	default:
		return q // a value made from a pointer part
	}
}

// derefPart turns a pointer to one of langchaingo's part types into the
// value it points to (nil for a nil pointer); other parts are returned as is.
func derefPart(p llms.ContentPart) llms.ContentPart {
	switch q := p.(type) {
	case *llms.TextContent:
		if q == nil {
			return nil
		}
		return *q
	case *llms.ImageURLContent:
		if q == nil {
			return nil
		}
		return *q
	case *llms.BinaryContent:
		if q == nil {
			return nil
		}
		return *q
	case *llms.ToolCall:
		if q == nil {
			return nil
		}
		return *q
	case *llms.ToolCallResponse:
		if q == nil {
			return nil
		}
		return *q
	case *llms.CachedContent:
		if q == nil {
			return nil
		}
		return *q
	}
	return p
}

// equalMessages reports whether a and b have the same role and parts, by
// value (pointer parts compare as the values they point to; nil and empty
// part lists and byte slices are equal).
func equalMessages(a, b llms.MessageContent) bool {
	if a.Role != b.Role || len(a.Parts) != len(b.Parts) {
		return false
	}
	for i := range a.Parts {
		if !equalParts(a.Parts[i], b.Parts[i]) {
			return false
		}
	}
	return true
}

func equalParts(a, b llms.ContentPart) bool {
	a, b = derefPart(a), derefPart(b)
	switch x := a.(type) {
	case nil:
		return b == nil
	case llms.TextContent:
		y, ok := b.(llms.TextContent)
		return ok && x == y
	case llms.ImageURLContent:
		y, ok := b.(llms.ImageURLContent)
		return ok && x == y
	case llms.ToolCallResponse:
		y, ok := b.(llms.ToolCallResponse)
		return ok && x == y
	case llms.BinaryContent:
		y, ok := b.(llms.BinaryContent)
		return ok && x.MIMEType == y.MIMEType && bytes.Equal(x.Data, y.Data)
	case llms.ToolCall:
		y, ok := b.(llms.ToolCall)
		if !ok || x.ID != y.ID || x.Type != y.Type || (x.FunctionCall == nil) != (y.FunctionCall == nil) {
			return false
		}
		return x.FunctionCall == nil || *x.FunctionCall == *y.FunctionCall
	case llms.CachedContent:
		y, ok := b.(llms.CachedContent)
		if !ok || (x.CacheControl == nil) != (y.CacheControl == nil) {
			return false
		}
		if x.CacheControl != nil && *x.CacheControl != *y.CacheControl {
			return false
		}
		return equalParts(x.ContentPart, y.ContentPart)
	}
	return false // a part type this package does not know
}

// isSystem reports whether m is a system message.
func isSystem(m llms.MessageContent) bool { return m.Role == llms.ChatMessageTypeSystem }

// isToolResult reports whether m is a tool-result message.
func isToolResult(m llms.MessageContent) bool { return m.Role == llms.ChatMessageTypeTool }
