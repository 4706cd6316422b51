// Package tsctest type-checks TypeScript in tests with the TypeScript
// compiler from npm, at the version pinned by npm/package-lock.json: the
// tests of the route declarations runtime/jsroutes writes, and of those
// runtime/ws serves, use it.
//
// The compiler is installed with npm ci once, into the user's cache
// directory (os.UserCacheDir()/chatgen/tsc-<hash of the lock>), and
// reused by every later test run. Without npm, or when the registry
// cannot be reached, the calling test is skipped; it fails instead when
// the CI environment variable is set.
package tsctest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

//go:embed npm/package.json npm/package-lock.json
var npmFiles embed.FS

// unavailable skips the test, or fails it under CI.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI needs npm and the npm registry to type-check the TypeScript declarations)", msg)
	}
	t.Skipf("%s; skipping the TypeScript check (it runs with npm and the npm registry reachable)", msg)
}

// Compiler returns the path of tsc, installing it on first use.
func Compiler(t testing.TB) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		unavailable(t, "npm is not installed")
	}
	lock, err := npmFiles.ReadFile("npm/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(lock, runtime.GOOS+"/"+runtime.GOARCH...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	parent := filepath.Join(base, "chatgen")
	dir := filepath.Join(parent, "tsc-"+hex.EncodeToString(sum[:8]))
	tsc := filepath.Join(dir, "node_modules", ".bin", "tsc")
	if _, err := os.Stat(filepath.Join(dir, "installed")); err == nil {
		return tsc
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	// Install into a directory of its own, then rename it into place:
	// test binaries of several packages may install at the same time.
	tmp, err := os.MkdirTemp(parent, "tsc-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := npmFiles.ReadFile("npm/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Few retries: offline, the test is skipped in seconds, not minutes.
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline",
		"--fetch-retries=1", "--fetch-retry-mintimeout=1000", "--fetch-retry-maxtimeout=5000")
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	if err != nil {
		unavailable(t, "npm ci of the pinned TypeScript compiler failed: %v\n%s", err, tail(out, 1500))
	}
	if err := os.WriteFile(filepath.Join(tmp, "installed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test binary installed it first.
		if _, serr := os.Stat(filepath.Join(dir, "installed")); serr != nil {
			t.Fatalf("installing tsc into %s: %v", dir, err)
		}
	}
	return tsc
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// ansi matches the colour codes of tsc's pretty output.
var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// Result is the outcome of a type check.
type Result struct {
	// OK reports that tsc found no error.
	OK bool
	// Output is what tsc printed, with related information ("The
	// expected type comes from property 'damage'…") and without colours.
	Output string
}

// Errors returns the lines of the output that report an error in file.
func (r Result) Errors(file string) []string {
	var out []string
	for _, line := range strings.Split(r.Output, "\n") {
		if strings.HasPrefix(line, file+":") && strings.Contains(line, " error TS") {
			out = append(out, line)
		}
	}
	return out
}

// Check type-checks the files (name → content, in one directory) with
// tsc --strict --noEmit, as ES2022 modules for the browser. paths maps
// module specifiers to files, as tsconfig's compilerOptions.paths does.
func Check(t testing.TB, files map[string]string, paths map[string]string) Result {
	t.Helper()
	tsc := Compiler(t)
	dir := t.TempDir()
	var roots []string
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".ts") && !strings.HasSuffix(name, ".d.ts") {
			roots = append(roots, name)
		}
	}
	slices.Sort(roots)
	mapped := map[string][]string{}
	for spec, file := range paths {
		mapped[spec] = []string{"./" + file}
	}
	config := map[string]any{
		"compilerOptions": map[string]any{
			"strict":           true,
			"noEmit":           true,
			"target":           "es2022",
			"module":           "es2022",
			"moduleResolution": "bundler",
			"lib":              []string{"es2022", "dom"},
			"types":            []string{},
			"paths":            mapped,
		},
		"files": roots,
	}
	b, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tsc, "-p", dir, "--pretty", "true")
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running tsc: %v\n%s", err, out.Bytes())
	}
	return Result{OK: err == nil, Output: ansi.ReplaceAllString(out.String(), "")}
}
