package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/npmtest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/mcpserver"
)

// npmClient returns a directory holding the pinned npm client (see
// internal/npmtest) and its script.
func npmClient(t *testing.T) string {
	t.Helper()
	return npmtest.Client{Name: "mcp-npm", What: "the MCP client of @modelcontextprotocol/sdk", Src: filepath.Join("testdata", "npm"), Scripts: []string{"client.mjs", "boxes.mjs"}}.Dir(t)
}

// npmResult is what client.mjs prints.
type npmResult struct {
	Server struct{ Name, Version string }
	Tools  []struct {
		Name           string
		Type           string
		Compiles       any
		HasDescription bool
	}
	ClientValidates struct{ Good, Bad bool }
	Calls           map[string]npmCall
	Asked           []string
	Second          map[string]npmCall
	FirstAgain      npmCall
}

type npmCall struct {
	Text    string
	IsError bool
	Thrown  string
	Code    *int
}

// runNPMClient runs client.mjs with args and decodes what it printed.
func runNPMClient(t *testing.T, args ...string) npmResult {
	t.Helper()
	var res npmResult
	runNPMScript(t, "client.mjs", &res, args...)
	return res
}

// runNPMScript runs the npm client's script with args and decodes what it
// printed into res.
func runNPMScript(t *testing.T, script string, res any, args ...string) {
	t.Helper()
	dir := npmClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("the npm client: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), res); err != nil {
		t.Fatalf("the npm client's output: %v\n%s\nstderr: %s", err, stdout.String(), stderr.String())
	}
}

// checkNPMResult checks the flows of client.mjs: initialize, the list
// with schemas the SDK's own validator compiles, a call of each tool,
// the unknown tool and wrong arguments refused, two sessions isolated,
// and a confirmation asked through elicitation (and refused to the client
// without it).
func checkNPMResult(t *testing.T, res npmResult) {
	t.Helper()
	if res.Server.Name != "chatgen" {
		t.Errorf("server info %+v", res.Server)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Type != "object" || tool.Compiles != true || !tool.HasDescription {
			t.Errorf("tool %+v", tool)
		}
	}
	if len(names) != len(allRoutes) {
		t.Errorf("tools %v, want %v", names, allRoutes)
	}
	if !res.ClientValidates.Good || res.ClientValidates.Bad {
		t.Errorf("the client's validation of the count schema: %+v", res.ClientValidates)
	}
	want := map[string]npmCall{
		"count1":          {Text: "hi: count is 2"},
		"count2":          {Text: "again: count is 3"},
		"admin":           {Text: "the secret is alice"},
		"item":            {Text: `{"type":"Object","data":{"name":"rope","qty":4}}`},
		"stream":          {Text: "onetwothree"},
		"boom":            {Text: "Failed: ServerError", IsError: true},
		"guardedApproved": {Text: "let me check|deleted"},
		"guardedDeclined": {Text: "let me check|kept: the user declined"},
	}
	for name, w := range want {
		if got := res.Calls[name]; got.Text != w.Text || got.IsError != w.IsError || got.Thrown != "" {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
	if u := res.Calls["unknown"]; u.Thrown == "" || u.Code == nil || *u.Code != -32602 {
		t.Errorf("unknown tool: %+v", u)
	}
	for _, name := range []string{"wrongArgs", "extraArgs"} {
		if got := res.Calls[name]; !got.IsError || !bytes.HasPrefix([]byte(got.Text), []byte("BadRequest: the arguments do not match")) {
			t.Errorf("%s: %+v", name, got)
		}
	}
	if len(res.Asked) != 2 {
		t.Errorf("asked %q", res.Asked)
	}
	if got := res.Second["count"]; got.Text != "other: count is 1" {
		t.Errorf("the second session: %+v", got)
	}
	if got := res.Second["guarded"]; !got.IsError || got.Text != "let me check|Refused: the tool deleteItem needs the user's confirmation, and this MCP client does not support elicitation, so it cannot ask: the call was denied|kept: the user's MCP client cannot confirm tool calls (no elicitation)" {
		t.Errorf("the second session, without elicitation: %+v", got)
	}
	if res.FirstAgain.Text != "back: count is 4" {
		t.Errorf("the first session after the second: %+v", res.FirstAgain)
	}
}

// TestNPMClientHTTP: the npm client over streamable HTTP; when it
// terminates its sessions, their conversations end.
func TestNPMClientHTTP(t *testing.T) {
	a := newApp(t, &mcpserver.Options{Authenticator: func(*http.Request) (chat.Principal, error) {
		return chat.User{ID: "alice", Roles: []string{"admin"}}, nil
	}})
	hs := a.serveHTTP(t)
	checkNPMResult(t, runNPMClient(t, "http", hs.URL))
	a.ledger.waitClosed(t, 2)
	a.checkReleasedEventually(t)
}

// TestNPMClientStdio: the npm client runs the server over stdio (the test
// binary, see TestMain), one process per session. (The release at the end
// of a stdio session is checked by TestServeStdio, which sees the exit.)
func TestNPMClientStdio(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	checkNPMResult(t, runNPMClient(t, "stdio", exe, stdioArg))
}

// npmBoxes is what boxes.mjs prints.
type npmBoxes struct {
	Tools []struct {
		Name           string
		Type           string
		Compiles       any
		HasDescription bool
	}
	Calls  map[string]npmCall
	Asked  []string
	Second map[string]npmCall
}

// checkNPMBoxes checks the flows of boxes.mjs: the tools of the tool
// boxes listed with schemas the SDK compiles, called on the session's
// conversation, a confirmed one asked through elicitation and refused to
// the client without it, two sessions isolated.
func checkNPMBoxes(t *testing.T, res npmBoxes) {
	t.Helper()
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if tool.Type != "object" || tool.Compiles != true || !tool.HasDescription {
			t.Errorf("tool %+v", tool)
		}
	}
	if strings.Join(names, " ") != "admin.reveal count.add count.fail count.read count.reset" {
		t.Errorf("tool box tools %v", names)
	}
	want := map[string]npmCall{
		"add":           {Text: `{"n":4}`},
		"route":         {Text: "then: count is 5"},
		"read":          {Text: "the count is 5"},
		"resetDeclined": {Text: "Denied: the user did not confirm the call of count.reset (the user declined)", IsError: true},
		"resetApproved": {Text: "done"},
		"readAfter":     {Text: "the count is 0"},
		"reveal":        {Text: "revealed to alice"},
	}
	for name, w := range want {
		if got := res.Calls[name]; got.Text != w.Text || got.IsError != w.IsError || got.Thrown != "" {
			t.Errorf("%s: %+v, want %+v", name, got, w)
		}
	}
	if got := res.Calls["wrongArgs"]; !got.IsError || !strings.HasPrefix(got.Text, "BadRequest: the arguments do not match") {
		t.Errorf("wrongArgs: %+v", got)
	}
	if len(res.Asked) != 2 || res.Asked[0] != "Allow the tool count.reset to run with the arguments {}?" {
		t.Errorf("asked %q", res.Asked)
	}
	if got := res.Second["read"]; got.Text != "the count is 0" || got.IsError {
		t.Errorf("the second session: %+v", got)
	}
	if got := res.Second["reset"]; !got.IsError || !strings.Contains(got.Text, "does not support elicitation") {
		t.Errorf("the second session, without elicitation: %+v", got)
	}
}

// TestNPMClientToolBoxes: the npm client calls the tools of the tool
// boxes over streamable HTTP and over stdio.
func TestNPMClientToolBoxes(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		a := newApp(t, &mcpserver.Options{ToolBoxes: testToolBoxes(), Authenticator: func(*http.Request) (chat.Principal, error) {
			return chat.User{ID: "alice", Roles: []string{"admin"}}, nil
		}})
		hs := a.serveHTTP(t)
		var res npmBoxes
		runNPMScript(t, "boxes.mjs", &res, "http", hs.URL)
		checkNPMBoxes(t, res)
		a.checkReleasedEventually(t)
	})
	t.Run("stdio", func(t *testing.T) {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		var res npmBoxes
		runNPMScript(t, "boxes.mjs", &res, "stdio", exe, stdioBoxesArg)
		checkNPMBoxes(t, res)
	})
}
