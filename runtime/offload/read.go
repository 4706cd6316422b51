package offload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// A Range is the part of a result to read: bytes from Offset (Length of
// them; 0 means as many as one read returns), or, when Line is set, lines
// from Line, counted from 1 (Lines of them; 0 means as many as fit).
type Range struct {
	Offset int `json:"offset,omitempty"`
	Length int `json:"length,omitempty"`
	Line   int `json:"line,omitempty"`
	Lines  int `json:"lines,omitempty"`
}

// A Part is what a read returns: Text, the bytes [Offset, End) of the
// result (and, for a read by lines, its lines [Line, Line+Count)), and
// the size of the whole.
type Part struct {
	ID     string `json:"id"`
	Offset int    `json:"offset"`
	End    int    `json:"end"`
	Bytes  int    `json:"bytes"`
	Line   int    `json:"line,omitempty"`
	Count  int    `json:"line_count,omitempty"`
	Lines  int    `json:"lines"`
	// More reports that the result goes on after End.
	More bool   `json:"more"`
	Text string `json:"text"`
}

// Read returns a range of the result id offloaded in the chat scope of
// ctx, at most [Options.MaxRead] bytes of it. An id that is not one of
// the scope's fails with [ErrUnknown], one no longer kept with [ErrGone],
// a range outside the result with [ErrRange].
func (o *Offloader) Read(ctx context.Context, id string, r Range) (*Part, error) {
	scope, err := chat.ID(ctx)
	if err != nil {
		return nil, err
	}
	shelf, err := o.bean.Lookup(ctx)
	if err != nil {
		return nil, err
	}
	slot, e, err := shelf.find(scope, id, o.maxResults)
	if err != nil {
		return nil, err
	}
	msgs, err := o.store.Get(ctx, slotKey(scope, slot))
	if err != nil {
		return nil, fmt.Errorf("offload: reading result %s: %w", id, err)
	}
	text, ok := content(msgs, e.ID)
	if !ok {
		return nil, fmt.Errorf("%w: %s (the scope's memory was wiped since)", ErrGone, id)
	}
	return o.cut(e, text, r)
}

// find returns the slot and entry of id in the shelf of scope.
func (s *Shelf) find(scope, id string, maxResults int) (int, Entry, error) {
	n, ok := parseID(scope, id)
	if !ok {
		return 0, Entry{}, fmt.Errorf("%w: %q", ErrUnknown, id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n > s.Next {
		return 0, Entry{}, fmt.Errorf("%w: %q", ErrUnknown, id)
	}
	slot := (n - 1) % maxResults
	if slot >= len(s.Entries) || s.Entries[slot].ID != id {
		return 0, Entry{}, fmt.Errorf("%w: %s (only the last %d results are kept)", ErrGone, id, maxResults)
	}
	return slot, s.Entries[slot], nil
}

// parseID returns n of an id made by idOf(scope, n).
func parseID(scope, id string) (int, bool) {
	tag, num, ok := strings.Cut(id, "-")
	if !ok || len(num) == 0 || len(num) > 9 || idOf(scope, 1) != tag+"-1" {
		return 0, false
	}
	n := 0
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n > 0
}

// content returns the text of the stored result id.
func content(msgs []llms.MessageContent, id string) (string, bool) {
	if len(msgs) != 1 || len(msgs[0].Parts) != 1 {
		return "", false
	}
	r, ok := msgs[0].Parts[0].(llms.ToolCallResponse)
	if !ok || r.ToolCallID != id {
		return "", false
	}
	return r.Content, true
}

// cut returns the range r of text, the result e.
func (o *Offloader) cut(e Entry, text string, r Range) (*Part, error) {
	p := &Part{ID: e.ID, Bytes: len(text), Lines: e.Lines}
	switch {
	case r.Offset < 0 || r.Length < 0 || r.Line < 0 || r.Lines < 0:
		return nil, fmt.Errorf("%w: negative offset, length, line or lines", ErrRange)
	case r.Line > 0 && r.Offset > 0:
		return nil, fmt.Errorf("%w: give an offset or a line, not both", ErrRange)
	case r.Line > 0:
		if r.Line > e.Lines {
			return nil, fmt.Errorf("%w: line %d of a result of %d lines", ErrRange, r.Line, e.Lines)
		}
		start := 0
		for l := 1; l < r.Line; l++ {
			start += strings.IndexByte(text[start:], '\n') + 1
		}
		end, count := start, 0
		for end < len(text) && (r.Lines == 0 || count < r.Lines) {
			next := len(text)
			if i := strings.IndexByte(text[end:], '\n'); i >= 0 {
				next = end + i + 1
			}
			if next-start > o.maxRead {
				if count == 0 { // one line longer than a read: its first bytes
					next = start + len(prefix(text[start:], o.maxRead))
					count = 1
					end = next
				}
				break
			}
			end = next
			count++
		}
		p.Offset, p.End, p.Line, p.Count = start, end, r.Line, count
	default:
		if r.Offset > len(text) || (r.Offset == len(text) && len(text) > 0) {
			return nil, fmt.Errorf("%w: offset %d of a result of %d bytes", ErrRange, r.Offset, len(text))
		}
		start := r.Offset
		for start > 0 && start < len(text) && !utf8.RuneStart(text[start]) {
			start-- // back to the start of the character the offset is in
		}
		n := r.Length
		if n == 0 || n > o.maxRead {
			n = o.maxRead
		}
		end := start + len(prefix(text[start:], n))
		p.Offset, p.End = start, end
	}
	p.Text = text[p.Offset:p.End]
	p.More = p.End < len(text)
	return p, nil
}

// readTool runs read_result.
func (o *Offloader) readTool(ctx context.Context, arguments string) (any, error) {
	var args struct {
		ID string `json:"id"`
		Range
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return nil, &ai.ArgumentsError{Err: err}
	}
	if args.ID == "" {
		return nil, &ai.ArgumentsError{Err: errors.New("id is empty")}
	}
	return o.Read(ctx, args.ID, args.Range)
}
