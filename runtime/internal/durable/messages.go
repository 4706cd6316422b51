package durable

import (
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
