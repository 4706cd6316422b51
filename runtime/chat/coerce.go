package chat

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strings"
)

// coerce rewrites raw, a request data value that does not decode into v,
// as a browser form sends what a typed parameter means, as the Jackson
// binding of the Quarkus server accepts it:
//
//   - a JSON string holding a number, for a numeric parameter ("42" → 42);
//   - a JSON number or boolean, for a string parameter (42 → "42",
//     true → "true").
//
// Nothing else is coerced, and neither is a type with its own JSON or text
// decoding. It reports false when no coercion applies.
func coerce(raw json.RawMessage, v any) (json.RawMessage, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, false
	}
	switch v.(type) {
	case json.Unmarshaler, encoding.TextUnmarshaler:
		return nil, false
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, false
	}
	switch rv.Elem().Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		if raw[0] != '"' {
			return nil, false
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		s = strings.TrimSpace(s)
		if !isJSONNumber(s) {
			return nil, false
		}
		return json.RawMessage(s), true
	case reflect.String:
		if !isJSONNumber(string(raw)) && !bytes.Equal(raw, []byte("true")) && !bytes.Equal(raw, []byte("false")) {
			return nil, false
		}
		quoted, err := json.Marshal(string(raw))
		if err != nil {
			return nil, false
		}
		return quoted, true
	}
	return nil, false
}

// isJSONNumber reports whether s is a JSON number literal.
func isJSONNumber(s string) bool {
	if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil && json.Valid([]byte(s))
}

// decodeCoerced decodes raw into v, with the coercions of [coerce] when
// raw does not decode as it is.
func decodeCoerced(raw json.RawMessage, v any) error {
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	if c, ok := coerce(raw, v); ok && json.Unmarshal(c, v) == nil {
		return nil
	}
	return err
}
