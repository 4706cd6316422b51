package tooltext

import "testing"

func TestClip(t *testing.T) {
	for _, c := range []struct {
		text string
		max  int
		want string
	}{
		{"forge", -1, "forge"},
		{"forge", 5, "forge"},
		{"forge", 3, "for\n[the result was cut to 3 of its 5 bytes]"},
		{"éé", 3, "é\n[the result was cut to 2 of its 4 bytes]"}, // not inside a character
		{"é", 1, "\n[the result was cut to 0 of its 2 bytes]"},
	} {
		if got := Clip(c.text, c.max); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.text, c.max, got, c.want)
		}
	}
}
