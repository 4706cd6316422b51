package mcpserver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioServer is the command that runs the test application's server
// over real stdio (see TestMain).
func stdioServer(t *testing.T) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exec.Command(exe, stdioArg)
}

// TestServeStdio: the go-sdk client runs the server as a child process
// over its stdin and stdout; the session keeps its conversation across
// calls, and when the client closes stdin the server ends it, with every
// scope and bean released, and exits 0.
func TestServeStdio(t *testing.T) {
	cmd := stdioServer(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"x: count is 1", "x: count is 2"} {
		if got, _ := call(t, cs, "count", map[string]any{"userMessage": "x"}); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if got, isErr := call(t, cs, "admin", nil); isErr || got != "the secret is alice" {
		t.Errorf("the configured principal: %q (error %v)", got, isErr)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("closing: %v", err)
	}
	// Close waited for the server to exit.
	if cmd.ProcessState == nil {
		t.Fatal("the server did not exit")
	}
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the server exited %d:\n%s", code, stderr.String())
	}
}

// TestServeStdioBoundsMessages: a 10 MB line on stdin, over the 4 MiB
// bound of Options.MaxMessageBytes, ends the session (ServeStdio fails,
// the server exits 2, not 3: the conversation the session had is
// released).
func TestServeStdioBoundsMessages(t *testing.T) {
	cmd := stdioServer(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = io.Discard
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count","arguments":{"userMessage":"x"}}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"count","arguments":{"userMessage":"` + strings.Repeat("x", 10<<20) + `"}}}` + "\n"
	_, werr := io.Copy(stdin, strings.NewReader(lines))
	_ = stdin.Close()
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("the server: %v (write: %v), want exit 2 (ServeStdio failed)\n%s", err, werr, stderr.String())
	}
	if !strings.Contains(stderr.String(), "ServeStdio") {
		t.Errorf("stderr: %s", stderr.String())
	}
}
