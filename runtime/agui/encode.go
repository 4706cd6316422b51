package agui

import (
	"unicode/utf8"
)

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
		frame = appendJSONString(frame, kv[i])
		frame = append(frame, ':')
		frame = appendJSONString(frame, kv[i+1])
	}
	frame = append(frame, "}\n\n"...)
	e.out.Send(frame)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s to b as a JSON string, as encoding/json
// writes it: control characters, '"', '\\', '<', '>', '&', U+2028 and
// U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
