package agui_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/agui"
)

// The npm client: @ag-ui/client at the version
// testdata/npm/package-lock.json pins, installed with npm ci once into the
// user's cache directory (os.UserCacheDir()/chatgen/agui-npm-<hash of the
// lock>), as internal/tsctest installs the TypeScript compiler. Without
// npm or node, or when the registry cannot be reached, the tests skip;
// under CI (the CI environment variable set) they fail instead.

// npmUnavailable skips the test, or fails it under CI.
func npmUnavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format+" (CI needs node, npm and the npm registry to run the AG-UI client @ag-ui/client)", args...)
	}
	t.Skipf(format+"; skipping the npm AG-UI client test", args...)
}

// npmClient returns the directory holding the installed client and its
// script, installing it on first use.
func npmClient(t *testing.T) string {
	t.Helper()
	npm, err := exec.LookPath("npm")
	if err != nil {
		npmUnavailable(t, "npm is not installed")
	}
	if _, err := exec.LookPath("node"); err != nil {
		npmUnavailable(t, "node is not installed")
	}
	src := filepath.Join("testdata", "npm")
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(lock, runtime.GOOS+"/"+runtime.GOARCH...))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	parent := filepath.Join(base, "chatgen")
	dir := filepath.Join(parent, "agui-npm-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "installed")); err != nil {
		install(t, npm, src, parent, dir)
	}
	// The scripts are written next to their node_modules at every run:
	// they change without the lock changing.
	run := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "node_modules"), filepath.Join(run, "node_modules")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"client.mjs", "tools.mjs", "package.json"} {
		b := mustRead(t, filepath.Join(src, name))
		if err := os.WriteFile(filepath.Join(run, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// install runs npm ci of the pinned packages into dir, through a
// directory of its own renamed into place: test binaries may install at
// the same time.
func install(t *testing.T, npm, src, parent, dir string) {
	t.Helper()
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(parent, "agui-npm-install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range []string{"package.json", "package-lock.json"} {
		if err := os.WriteFile(filepath.Join(tmp, name), mustRead(t, filepath.Join(src, name)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline",
		"--fetch-retries=1", "--fetch-retry-mintimeout=1000", "--fetch-retry-maxtimeout=5000")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		if len(out) > 1500 {
			out = out[len(out)-1500:]
		}
		npmUnavailable(t, "npm ci of the pinned AG-UI client failed: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(tmp, "installed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "installed")); serr != nil {
			t.Fatalf("installing the AG-UI client into %s: %v", dir, err)
		}
	}
}

// nodeRun runs the script of dir against a and returns its output lines.
func nodeRun(t *testing.T, dir, script string, a *app) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, a.srv.URL)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, out, stderr)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// TestNPMClientToolRound: @ag-ui/client's HttpAgent runs a front-end tool
// round: the first run's tool call (a client-run tool of the route)
// passes the client's schemas and verifier and becomes a tool call of an
// assistant message; the tool message of the second run answers it.
func TestNPMClientToolRound(t *testing.T) {
	dir := npmClient(t)
	a := newApp(t, &agui.Options{Route: "locate"})
	lines := nodeRun(t, dir, "tools.mjs", a)
	if len(lines) != 2 {
		t.Fatalf("output: %q", lines)
	}
	type call struct {
		ID       string
		Function struct{ Name, Arguments string }
	}
	var res [2]struct {
		Types []string
		Said  string
		Calls []call
	}
	for i := range res {
		if err := json.Unmarshal([]byte(lines[i]), &res[i]); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
	if !slices.Equal(res[0].Types, want) || res[0].Said != "let me see" || len(res[0].Calls) != 1 ||
		res[0].Calls[0].ID != "ct-x" || res[0].Calls[0].Function.Name != "Locate" || res[0].Calls[0].Function.Arguments != `{"precision":"city"}` {
		t.Fatalf("the first run: %+v", res[0])
	}
	want = []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	if !slices.Equal(res[1].Types, want) || res[1].Said != `located ct-x: {"city":"Lyon","precision":"city"}` {
		t.Fatalf("the second run: %+v", res[1])
	}
}

// TestNPMClientRuns: @ag-ui/client's HttpAgent (pinned by
// testdata/npm/package-lock.json) runs two runs of one thread: each
// validates every event against @ag-ui/core's schemas and its verifier,
// the events come in order, and the second run continues the thread.
func TestNPMClientRuns(t *testing.T) {
	dir := npmClient(t)
	a := newApp(t, &agui.Options{ShowScope: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", a.srv.URL)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node client.mjs: %v\n%s\n%s", err, out, stderr)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("output: %s", out)
	}
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "STATE_SNAPSHOT", "RUN_FINISHED"}
	for i, said := range []string{"first: count is 1", "second: count is 2"} {
		var res struct {
			Types    []string
			Said     string
			Messages int
		}
		if err := json.Unmarshal([]byte(lines[i]), &res); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Types, want) || res.Said != said {
			t.Errorf("run %d: %+v, want %v %q", i, res, want, said)
		}
	}
}
