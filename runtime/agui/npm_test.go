package agui_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/npmtest"
	"github.com/chatscopes/chatgen/runtime/agui"
)

// npmClient returns a directory holding the pinned npm client (see
// internal/npmtest) and its scripts.
func npmClient(t *testing.T) string {
	t.Helper()
	return npmtest.Client{Name: "agui-npm", What: "the AG-UI client @ag-ui/client", Src: filepath.Join("testdata", "npm"), Scripts: []string{"client.mjs", "tools.mjs", "state.mjs", "browser.mjs", "bundle.mjs"}}.Dir(t)
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
	want := []string{"RUN_STARTED", "STATE_SNAPSHOT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
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
