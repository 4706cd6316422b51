package ai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// withJSONInstruction appends to the system message the instruction to
// answer with JSON conforming to schema.
func withJSONInstruction(system string, schema json.RawMessage) string {
	var b strings.Builder
	if system != "" {
		b.WriteString(system)
		b.WriteString("\n\n")
	}
	b.WriteString("Answer with a single JSON value and nothing else: no explanation, no Markdown code fence.")
	if s := bytes.TrimSpace(schema); len(s) > 0 {
		b.WriteString(" The value must conform to this JSON schema:\n")
		b.Write(s)
	}
	return b.String()
}

// correction is the user message of the corrective retry.
func correction(err error) string {
	return fmt.Sprintf("Your answer could not be used: %v. Answer again with only the JSON value, conforming to the schema, without any other text.", err)
}

// checkJSON accepts an answer that is JSON (possibly in a code fence) and
// returns the JSON text.
func checkJSON(content string) (string, error) {
	var raw json.RawMessage
	return decodeJSON(content, &raw)
}

// decodeJSON decodes the JSON of a model's answer into v and returns the
// JSON text. It tolerates white space and a Markdown code fence (```json …
// ```), also after some text.
func decodeJSON(content string, v any) (string, error) {
	text := strings.TrimSpace(content)
	if text == "" {
		return "", errors.New("the answer is empty, not JSON")
	}
	err := json.Unmarshal([]byte(text), v)
	if err == nil {
		return text, nil
	}
	if inner, ok := fenced(text); ok {
		if err2 := json.Unmarshal([]byte(inner), v); err2 == nil {
			return inner, nil
		} else if strings.HasPrefix(text, "```") {
			err = err2 // the fence was all there was: report what is inside
		}
	}
	return "", fmt.Errorf("the answer is not valid JSON for the result: %w", err)
}

// fenced returns the contents of the first Markdown code fence of text.
func fenced(text string) (string, bool) {
	start := strings.Index(text, "```")
	if start < 0 {
		return "", false
	}
	rest := text[start+3:]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		return "", false
	}
	if lang := strings.TrimSpace(rest[:nl]); strings.ContainsAny(lang, "{[\"") {
		return "", false // not a language tag: no fence here
	}
	rest = rest[nl+1:]
	end := strings.LastIndex(rest, "```")
	if end < 0 {
		return "", false
	}
	return strings.TrimSpace(rest[:end]), true
}

// toolCallDelta is the shape of a streamed tool-call fragment that
// langchaingo's OpenAI client passes to the streaming function as a JSON
// array: [{"id":"call_1","type":"function","function":{"name":"weather","arguments":""}}]
// or [{"type":"","function":{"name":"","arguments":"{\"city\":"}}].
type toolCallDelta struct {
	ID       *string `json:"id"`
	Type     *string `json:"type"`
	Function *struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// isToolCallDelta reports whether a streamed chunk is a tool-call fragment
// rather than text: exactly a JSON array of objects with type and
// function {name, arguments} and no other keys.
func isToolCallDelta(chunk []byte) bool {
	if len(chunk) < 2 || chunk[0] != '[' || chunk[len(chunk)-1] != ']' {
		return false
	}
	var deltas []toolCallDelta
	dec := json.NewDecoder(bytes.NewReader(chunk))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&deltas); err != nil || dec.InputOffset() != int64(len(chunk)) || len(deltas) == 0 {
		return false
	}
	for _, d := range deltas {
		if d.Type == nil || d.Function == nil || d.Function.Name == nil || d.Function.Arguments == nil {
			return false
		}
	}
	return true
}
