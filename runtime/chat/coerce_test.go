package chat_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// level has its own JSON decoding: it is never coerced.
type level int

func (l *level) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*l = level(n)
	return nil
}

// Route parameters accept what a browser form sends, as the Quarkus
// server's Jackson binding does: a string holding a number for a numeric
// parameter, a number or boolean for a string parameter. Anything else is
// still BadRequest.
func TestBrowserFormCoercions(t *testing.T) {
	req, err := chat.NewDataRequest(json.RawMessage(`{
		"userMessage": 42,
		"damage": "40", "ratio": " 1.5 ", "count": "7",
		"name": 7, "flag": true, "neg": -3.25,
		"half": "4.5", "word": "forty", "list": [1], "obj": {"a": 1}, "lvl": "3", "dur": "5"
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := req.UserMessage(); got != "42" {
		t.Errorf("UserMessage() = %q, want \"42\" (chat(42) in the JavaScript client)", got)
	}
	var (
		damage int
		ratio  float64
		count  uint8
		name   string
		flag   string
		neg    string
	)
	for key, v := range map[string]any{"damage": &damage, "ratio": &ratio, "count": &count, "name": &name, "flag": &flag, "neg": &neg} {
		if err := req.Decode(key, v); err != nil {
			t.Errorf("Decode(%s): %v", key, err)
		}
	}
	if damage != 40 || ratio != 1.5 || count != 7 || name != "7" || flag != "true" || neg != "-3.25" {
		t.Errorf("decoded damage %d, ratio %v, count %d, name %q, flag %q, neg %q", damage, ratio, count, name, flag, neg)
	}

	var (
		i   int
		s   string
		lvl level
		dur time.Duration
	)
	for _, tc := range []struct {
		key string
		v   any
	}{
		{"half", &i},  // not an integer
		{"word", &i},  // not a number
		{"list", &s},  // an array is no string
		{"obj", &s},   // nor an object
		{"lvl", &lvl}, // its own decoding says no
		{"flag", &i},  // a boolean is no number
	} {
		err := req.Decode(tc.key, tc.v)
		var bad *chat.BadRequestError
		if !errors.As(err, &bad) || bad.Param != tc.key {
			t.Errorf("Decode(%s into %T) = %v, want a BadRequestError naming it", tc.key, tc.v, err)
		}
	}
	if err := req.Decode("dur", &dur); err != nil || dur != 5 {
		t.Errorf("Decode(dur) = %v, %v; a numeric string is a number of a numeric kind", dur, err)
	}
}
