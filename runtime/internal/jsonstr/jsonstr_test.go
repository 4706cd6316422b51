package jsonstr

import (
	"encoding/json"
	"testing"
)

// FuzzAppend checks Append against json.Marshal.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \\ back`, "<a href='x'>&</a>", "tab\tnl\ncr\r\b\f\x00\x1f\x7f", "é ü 😀", "\u2028\u2029", "bad \xff\xfe utf-8", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Append([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("Append(%q) = %s, want %s", s, got[1:], want)
		}
	})
}
