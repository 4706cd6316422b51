package agui

import (
	"encoding/json"
	"testing"
)

// TestAppendJSONString: the direct encoding of strings writes what
// encoding/json writes.
func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " and \ back`, "line\nfeed\r\ttab\x00\x1f", "<b>&amp;</b>", "héllo wörld ✓ 😀", "bad \xff utf-8 \xc3", "sep\u2028ar\u2029ate", "\x7f del"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

// FuzzAppendJSONString: the direct encoding of any string is what
// encoding/json writes.
func FuzzAppendJSONString(f *testing.F) {
	f.Add("a\"b\\c\n<\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	})
}
