package subagent

import (
	"encoding/json"
	"testing"
)

// The in-place reading of the arguments agrees with encoding/json, and
// hands what it cannot read to it.
func TestDecodeArgs(t *testing.T) {
	for _, in := range []string{
		`{"task":"a"}`,
		` { "task" : "a b" , "session_id" : "research-1" } `,
		`{"session_id":"s","task":"t","other":"x"}`,
		`{}`,
		`{"task":"say \"hi\"\n"}`,
		`{"task":"é ✓"}`,
		`{"task":3}`,
		`{"task":"a",}`,
		`{"task":"a"} x`,
		`{"task":"a"`,
		`{"task":null,"session_id":"s"}`,
		`[]`,
		``,
		`{"task":"a","n":{"deep":"x"}}`,
	} {
		var want args
		werr := json.Unmarshal([]byte(in), &want)
		got, err := decodeArgs(in)
		if (err != nil) != (werr != nil) || err == nil && got != want {
			t.Errorf("decodeArgs(%q) = %+v, %v; encoding/json: %+v, %v", in, got, err, want, werr)
		}
	}
}

func FuzzDecodeArgs(f *testing.F) {
	f.Add(`{"task":"a","session_id":"b"}`)
	f.Add(`{"task":"a\u0041"}`)
	f.Fuzz(func(t *testing.T, in string) {
		var want args
		werr := json.Unmarshal([]byte(in), &want)
		got, err := decodeArgs(in)
		if (err != nil) != (werr != nil) || err == nil && got != want {
			t.Errorf("decodeArgs(%q) = %+v, %v; encoding/json: %+v, %v", in, got, err, want, werr)
		}
	})
}
