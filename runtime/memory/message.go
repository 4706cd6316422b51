package memory

import (
	"bytes"
	"slices"

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
	c := newCopier(msgs, nil)
	return c.appendTo(make([]llms.MessageContent, 0, len(msgs)), msgs)
}

// appendClones appends deep copies of msgs (see cloneMessages) to dst.
func appendClones(dst, msgs []llms.MessageContent) []llms.MessageContent {
	c := newCopier(msgs, nil)
	return c.appendTo(dst, msgs)
}

// cloneMessage returns a deep copy of m (see cloneMessages).
func cloneMessage(m llms.MessageContent) llms.MessageContent {
	var c copier
	c.copy(&m, &m)
	return m
}

// A copier deep-copies messages (see cloneMessages). It takes their parts,
// and their tool calls' function calls, from two arrays it allocates once
// for all the messages of a copy, instead of allocating per message and
// per call; each message gets a capacity-capped window of the parts, so
// appending to one message's parts never spills into the next one. The
// arrays are shared by the messages of one copy (one read, one Add): a
// message kept after the others are dropped keeps them alive, which costs
// at most the size of that copy.
type copier struct {
	parts []llms.ContentPart
	calls []llms.FunctionCall
}

// newCopier returns a copier with room for the parts and function calls of
// the messages of a and b. It copies other messages too, allocating for
// them.
func newCopier(a, b []llms.MessageContent) copier {
	parts, calls := countParts(a)
	p, c := countParts(b)
	parts, calls = parts+p, calls+c
	var cp copier
	if parts > 0 {
		cp.parts = make([]llms.ContentPart, parts)
	}
	if calls > 0 {
		cp.calls = make([]llms.FunctionCall, calls)
	}
	return cp
}

// countParts returns the number of parts of msgs, and how many of them
// are tool calls with a function call.
func countParts(msgs []llms.MessageContent) (parts, calls int) {
	for i := range msgs {
		parts += len(msgs[i].Parts)
		for _, p := range msgs[i].Parts {
			if hasFunctionCall(p) {
				calls++
			}
		}
	}
	return parts, calls
}

// appendTo appends deep copies of msgs to dst.
func (c *copier) appendTo(dst, msgs []llms.MessageContent) []llms.MessageContent {
	n := len(dst)
	dst = slices.Grow(dst, len(msgs))[:n+len(msgs)]
	for i := range msgs {
		c.copy(&dst[n+i], &msgs[i])
	}
	return dst
}

// copy sets *dst to a deep copy of *m (dst may be m).
func (c *copier) copy(dst, m *llms.MessageContent) {
	dst.Role = m.Role
	n := len(m.Parts)
	switch {
	case m.Parts == nil:
		dst.Parts = nil
		return
	case n == 0:
		dst.Parts = []llms.ContentPart{}
		return
	}
	var parts []llms.ContentPart
	if n <= len(c.parts) {
		parts, c.parts = c.parts[:n:n], c.parts[n:]
	} else {
		parts = make([]llms.ContentPart, n)
	}
	for i, p := range m.Parts {
		if _, ok := p.(llms.TextContent); ok {
			parts[i] = p // the common case, without a call
			continue
		}
		parts[i] = c.part(p)
	}
	dst.Parts = parts
}

// part returns a deep copy of p. Pointer parts become values; a nil
// pointer becomes a nil part. Parts that hold only strings (text, image
// URLs, tool results) are immutable inside an interface value and are
// returned as they are, which saves an allocation per part.
func (c *copier) part(p llms.ContentPart) llms.ContentPart {
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
			q.FunctionCall = c.functionCall(q.FunctionCall)
		}
		return q
	case llms.CachedContent:
		q.ContentPart = c.part(q.ContentPart)
		if q.CacheControl != nil {
			cc := *q.CacheControl
			q.CacheControl = &cc
		}
		return q
	default:
		return q // a value made from a pointer part
	}
}

// functionCall returns a fresh copy of fc.
func (c *copier) functionCall(fc *llms.FunctionCall) *llms.FunctionCall {
	if len(c.calls) == 0 {
		cp := *fc
		return &cp
	}
	p := &c.calls[0]
	*p, c.calls = *fc, c.calls[1:]
	return p
}

// hasFunctionCall reports whether p is a tool call (or a pointer to one)
// with a function call: the parts whose copy takes one from a copier.
func hasFunctionCall(p llms.ContentPart) bool {
	switch q := p.(type) {
	case llms.ToolCall:
		return q.FunctionCall != nil
	case *llms.ToolCall:
		return q != nil && q.FunctionCall != nil
	}
	return false
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
