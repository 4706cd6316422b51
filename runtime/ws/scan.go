package ws

import (
	"encoding/json"
	"errors"
)

var (
	errNotObject   = errors.New("not a JSON object")
	errInvalidJSON = errors.New("invalid JSON")
)

// scanObject calls fn with each key of the JSON object b and the raw bytes
// of its value, in order. b must be valid JSON (checked with json.Valid
// first); keys with escapes are passed undecoded, so callers only match
// plain names. The value slices alias b.
func scanObject(b []byte, fn func(key, val []byte)) error {
	if !json.Valid(b) {
		return errInvalidJSON
	}
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errNotObject
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil
	}
	for i < len(b) {
		// "key"
		end := skipString(b, i)
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		i = skipSpace(b, i+1) // ':'
		vend := skipValue(b, i)
		fn(key, b[i:vend])
		i = skipSpace(b, vend)
		if i >= len(b) || b[i] == '}' {
			return nil
		}
		i = skipSpace(b, i+1) // ','
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the string starting at b[i] (a quote).
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}
