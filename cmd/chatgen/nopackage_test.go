package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run that loads no package is an error that says what to run, never a
// silent success.
func TestNoPackageIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T)
		args  []string
		want  []string
	}{
		{"outside a module", func(t *testing.T) {
			t.Chdir(t.TempDir())
			t.Setenv("GOWORK", "off")
		}, nil, []string{"no Go module", "go mod init", "go get -tool github.com/chatscopes/chatgen/cmd/chatgen"}},
		{"a pattern matching nothing", func(t *testing.T) {
			module(t, "package m\n")
		}, []string{"./nothing/..."}, []string{"chatgen: ", "./nothing/..."}},
		{"no package below", func(t *testing.T) {
			dir := module(t, "package m\n")
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, []string{"./sub/..."}, []string{"no Go package matches ./sub/...", "./..."}},
		{"only test files", func(t *testing.T) {
			dir := module(t, "package m\n")
			if err := os.Rename(filepath.Join(dir, "a.go"), filepath.Join(dir, "a_test.go")); err != nil {
				t.Fatal(err)
			}
		}, nil, []string{"no Go files but tests", "example.com/m"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, &stdout, &stderr)
			if code != 1 {
				t.Errorf("exit %d, want 1; stderr:\n%s", code, stderr.String())
			}
			out := stderr.String()
			if strings.Contains(out, ":0:") {
				t.Errorf("a position-less problem printed as :0:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("stderr lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
