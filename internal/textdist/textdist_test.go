package textdist

import "testing"

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"route", "rout", 1}, {"route", "roote", 1},
		{"kitten", "sitting", 3}, {"héllo", "hello", 1}, {"dsek", "desk", 1}, {"ab", "ba", 1}, {"abc", "ca", 3},
	}
	for _, tt := range tests {
		if got := Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
