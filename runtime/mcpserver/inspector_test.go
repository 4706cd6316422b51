package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/npmtest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/mcpserver"
)

// inspector runs the MCP inspector's CLI (@modelcontextprotocol/inspector,
// pinned by testdata/inspector/package-lock.json) with args and decodes
// the JSON it prints into res.
func inspector(t *testing.T, res any, args ...string) {
	t.Helper()
	dir := npmtest.Client{Name: "mcp-inspector", What: "the MCP inspector CLI @modelcontextprotocol/inspector", Src: filepath.Join("testdata", "inspector")}.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
	cmd := exec.CommandContext(ctx, "node", append([]string{bin, "--cli"}, args...)...)
	cmd.Dir = dir
	// The CLI keeps a catalog of servers: a fresh one, out of $HOME.
	cmd.Env = append(os.Environ(), "MCP_CATALOG_PATH="+filepath.Join(t.TempDir(), "mcp.json"))
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("the inspector %q: %v\n%s\n%s", args, err, out, stderr)
	}
	if err := json.Unmarshal(out, res); err != nil {
		t.Fatalf("the inspector's output: %v\n%s", err, out)
	}
}

// TestInspectorCLI: the MCP inspector's CLI lists the tools (the routes'
// and the tool boxes', with object schemas) and calls a tool box's (its
// argument typed by the schema the CLI read), over stdio
// (the test binary as the server, see TestMain) and streamable HTTP.
func TestInspectorCLI(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(t, &mcpserver.Options{ToolBoxes: testToolBoxes(), Authenticator: func(*http.Request) (chat.Principal, error) {
		return chat.User{ID: "alice", Roles: []string{"admin"}}, nil
	}})
	hs := a.serveHTTP(t)
	for _, target := range [][]string{{exe, stdioBoxesArg}, {hs.URL, "--transport", "http"}} {
		var list struct {
			Tools []struct {
				Name        string
				InputSchema struct{ Type string }
			}
		}
		inspector(t, &list, append(slices.Clone(target), "--method", "tools/list")...)
		var names []string
		for _, tool := range list.Tools {
			names = append(names, tool.Name)
			if tool.InputSchema.Type != "object" {
				t.Errorf("%s: input schema %+v", tool.Name, tool.InputSchema)
			}
		}
		want := append(slices.Clone(allRoutes), "admin.reveal", "count.add", "count.fail", "count.read", "count.reset")
		slices.Sort(want)
		slices.Sort(names)
		if !slices.Equal(names, want) {
			t.Errorf("%s: tools %v, want %v", target[0], names, want)
		}
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"--tool-name", "count.add", "--tool-arg", "by=3"}, `{"n":3}`},
		} {
			var res struct {
				Content []struct{ Type, Text string }
				IsError bool
			}
			inspector(t, &res, append(append(slices.Clone(target), "--method", "tools/call"), c.args...)...)
			if len(res.Content) != 1 || res.Content[0].Text != c.want || res.IsError {
				t.Errorf("%s %v: %+v, want %q", target[0], c.args, res, c.want)
			}
		}
	}
	a.checkReleasedEventually(t)
}
