package gen

import (
	"strings"
	"testing"
)

func TestSuggest(t *testing.T) {
	tests := []struct {
		word string
		want string
	}{
		{"rout", "route"}, {"Route", "route"}, {"roote", "route"}, {"sys", "system"}, {"tool", "tool"},
		{"toolz", "tools"}, {"eventtype", "event"}, {"x", ""}, {"banana", ""}, {"", ""},
		{"a", "ai"}, {"ia", "ai"}, {"sytsem", "system"}, {"us", "user"}, {"defualt", ""}, {strings.Repeat("x", 100), ""},
		{strings.Repeat("route", 100), "route"},
	}
	for _, tt := range tests {
		got, ok := suggest(tt.word, directiveNames())
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("suggest(%q) = %q, %v; want %q", tt.word, got, ok, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"route", "rout", 1}, {"route", "roote", 1},
		{"kitten", "sitting", 3}, {"héllo", "hello", 1}, {"dsek", "desk", 1}, {"ab", "ba", 1}, {"abc", "ca", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
