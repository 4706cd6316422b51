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
