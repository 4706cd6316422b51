package durable

import (
	"context"
	"errors"
	"fmt"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// EncodeMessages encodes each message on its own, as the JSON object
// [memory.MarshalMessages] writes for it (without the enclosing array), so
// that stores can keep a list as a sequence of elements and change it
// element by element.
func EncodeMessages(msgs []llms.MessageContent) ([][]byte, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	out := make([][]byte, len(msgs))
	for i := range msgs {
		data, err := memory.MarshalMessages(msgs[i : i+1])
		if err != nil {
			return nil, err
		}
		out[i] = data[1 : len(data)-1] // strip "[" and "]"
	}
	return out, nil
}

// DecodeMessages decodes elements written by [EncodeMessages].
func DecodeMessages(elems [][]byte) ([]llms.MessageContent, error) {
	if len(elems) == 0 {
		return nil, nil
	}
	n := 1
	for _, e := range elems {
		n += len(e) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(buf, '[')
	for i, e := range elems {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, e...)
	}
	buf = append(buf, ']')
	msgs, err := memory.UnmarshalMessages(buf)
	if err != nil {
		return nil, err
	}
	if len(msgs) != len(elems) {
		return nil, fmt.Errorf("memory: %d stored messages decode as %d", len(elems), len(msgs))
	}
	return msgs, nil
}

// EncodeChange checks c, a change of the memory id, and encodes the
// messages it adds: what each store's Memories.Apply does before it stages
// or writes the change. Its errors have no store prefix.
func EncodeChange(ctx context.Context, id string, c memory.Change) (head, tail [][]byte, err error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	if id == "" {
		return nil, nil, errors.New("memory id is empty")
	}
	if c.Drop < 0 {
		return nil, nil, fmt.Errorf("memory: change of %q drops %d messages", id, c.Drop)
	}
	if head, err = EncodeMessages(c.Head); err != nil {
		return nil, nil, fmt.Errorf("changing memory %q: %w", id, err)
	}
	if tail, err = EncodeMessages(c.Tail); err != nil {
		return nil, nil, fmt.Errorf("changing memory %q: %w", id, err)
	}
	return head, tail, nil
}
