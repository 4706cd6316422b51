package agui

import "github.com/chatscopes/chatgen/runtime/internal/jsonstr"

// emitStrings sends one AG-UI event whose fields are all strings, given
// as key, value pairs (the type first): encoded directly into its SSE
// frame, one allocation, as the events of a streamed answer are many.
func (e *encoder) emitStrings(kv ...string) {
	n := len("data: {}\n\n")
	for _, s := range kv {
		n += len(s) + len(`"":,`)
	}
	frame := make([]byte, 0, n+n/16)
	frame = append(frame, "data: {"...)
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			frame = append(frame, ',')
		}
		frame = jsonstr.Append(frame, kv[i])
		frame = append(frame, ':')
		frame = jsonstr.Append(frame, kv[i+1])
	}
	frame = append(frame, "}\n\n"...)
	e.out.Send(frame)
}
