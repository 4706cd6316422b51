package pgstore

import "testing"

// TestFirstSchema reads the first schema of search_path settings as
// PostgreSQL does.
func TestFirstSchema(t *testing.T) {
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"myapp", "myapp", true},
		{" MyApp , public", "myapp", true},
		{"myapp,public", "myapp", true},
		{`"My App", public`, "My App", true},
		{`"a""b"`, `a"b`, true},
		{"Ünï", "Ünï", true}, // only ASCII letters are folded
		{`"$user", public`, "", false},
		{"$user", "", false},
		{"", "", false},
		{"  ", "", false},
		{"pg_temp, myapp", "", false},
		{"pg_catalog", "", false},
		{`"unterminated`, "", false},
	} {
		got, ok := firstSchema(tc.path)
		if got != tc.want || ok != tc.ok {
			t.Errorf("firstSchema(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}
