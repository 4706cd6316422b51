package subagent

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// args are the tool's arguments.
type args struct {
	Task      string `json:"task"`
	SessionID string `json:"session_id"`
}

// decodeArgs decodes the tool's arguments. An object of plain strings
// (no escapes: what models send nearly always) is read in place, without
// allocating; anything else goes through encoding/json.
func decodeArgs(s string) (args, error) {
	if a, ok := plainArgs(s); ok {
		return a, nil
	}
	var a args
	err := json.Unmarshal([]byte(s), &a)
	return a, err
}

// plainArgs reads s when it is a JSON object whose values are strings
// of valid UTF-8 without escapes (its keys too); ok is false for anything else, which encoding/json
// then reads (or rejects).
func plainArgs(s string) (a args, ok bool) {
	i := skip(s, 0)
	if i >= len(s) || s[i] != '{' {
		return a, false
	}
	i = skip(s, i+1)
	if i < len(s) && s[i] == '}' {
		return a, skip(s, i+1) == len(s)
	}
	for {
		key, j, ok := plainString(s, i)
		if !ok {
			return a, false
		}
		i = skip(s, j)
		if i >= len(s) || s[i] != ':' {
			return a, false
		}
		val, j, ok := plainString(s, skip(s, i+1))
		if !ok {
			return a, false
		}
		switch key {
		case "task":
			a.Task = val
		case "session_id":
			a.SessionID = val
		default:
			if strings.EqualFold(key, "task") || strings.EqualFold(key, "session_id") {
				return a, false // encoding/json matches keys without case
			}
		}
		i = skip(s, j)
		if i >= len(s) {
			return a, false
		}
		switch s[i] {
		case ',':
			i = skip(s, i+1)
		case '}':
			return a, skip(s, i+1) == len(s)
		default:
			return a, false
		}
	}
}

// plainString reads the string at s[i:], which must open with a quote and
// hold no escape or control character; it returns the text and the index
// after the closing quote.
func plainString(s string, i int) (string, int, bool) {
	if i >= len(s) || s[i] != '"' {
		return "", 0, false
	}
	end := strings.IndexByte(s[i+1:], '"')
	if end < 0 {
		return "", 0, false
	}
	text := s[i+1 : i+1+end]
	for k := 0; k < len(text); k++ {
		if c := text[k]; c == '\\' || c < 0x20 {
			return "", 0, false
		}
	}
	if !utf8.ValidString(text) {
		return "", 0, false // encoding/json replaces invalid bytes
	}
	return text, i + 2 + end, true
}

// skip returns the index of the first byte of s from i that is not JSON
// white space.
func skip(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}
