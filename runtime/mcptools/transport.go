package mcptools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Command returns the [Options.Transport] of a server that runs as a
// command and talks MCP over its stdin and stdout: Cmd{Path: name, Args:
// args}.Transport. The server gets a minimal environment
// ([DefaultEnv]); use a [Cmd] to give it more.
func Command(name string, args ...string) func(context.Context) (mcp.Transport, error) {
	return Cmd{Path: name, Args: args}.Transport
}

// A Cmd is a server that runs as a command and talks MCP over its stdin
// and stdout. Its Transport method is an [Options.Transport]:
//
//	Transport: mcptools.Cmd{Path: "lore-server", Env: []string{"LORE_TOKEN=" + token}}.Transport,
//
// Each session starts the command, and closing the session closes the
// command's stdin and waits for it to exit (signalling it after a few
// seconds). The process lives as long as its session, not as the context
// that opened it. What it writes to its stderr is logged by the source at
// Debug level, line by line, and its last lines end the error of a
// session that fails to open.
//
// The server does not inherit the application's environment, where API
// keys and other secrets often live: it gets the variables of
// [DefaultEnv] (PATH, HOME and the like, as MCP's TypeScript and Python
// SDKs do), then Env. InheritEnv gives it the whole environment instead.
type Cmd struct {
	// Path is the command: a name looked up in PATH, or a path.
	Path string
	// Args are its arguments, after the command's name.
	Args []string
	// Env lists more variables, "KEY=value", for the server; they win
	// over the inherited ones.
	Env []string
	// InheritEnv gives the server the application's whole environment
	// (os.Environ) rather than DefaultEnv's variables.
	InheritEnv bool
	// Dir is the server's working directory; "" means the application's.
	Dir string
}

// Transport returns the transport of a new session: a new process.
func (c Cmd) Transport(context.Context) (mcp.Transport, error) {
	if c.Path == "" {
		return nil, errors.New("mcptools: the Cmd has no Path")
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	if c.InheritEnv {
		cmd.Env = append(os.Environ(), c.Env...)
	} else {
		cmd.Env = append(DefaultEnv(), c.Env...)
	}
	// A process the server started may hold its stderr open: do not
	// wait for it long once the server has exited.
	cmd.WaitDelay = time.Second
	return &commandTransport{&mcp.CommandTransport{Command: cmd}}, nil
}

// DefaultEnv returns the variables of the application's environment a
// [Cmd] passes to its server, "KEY=value": on Windows APPDATA, HOMEDRIVE,
// HOMEPATH, LOCALAPPDATA, PATH, PROCESSOR_ARCHITECTURE, PROGRAMFILES,
// SYSTEMDRIVE, SYSTEMROOT, TEMP, USERNAME and USERPROFILE, elsewhere HOME,
// LOGNAME, PATH, SHELL, TERM and USER — the list of MCP's TypeScript SDK
// (getDefaultEnvironment). Like it, it leaves out a value starting with
// "()", a shell function.
func DefaultEnv() []string {
	keys := []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"}
	if runtime.GOOS == "windows" {
		keys = []string{"APPDATA", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATH", "PROCESSOR_ARCHITECTURE",
			"PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "USERNAME", "USERPROFILE"}
	}
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		if v, ok := os.LookupEnv(k); ok && !strings.HasPrefix(v, "()") {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// commandTransport is the transport Command makes: the SDK's, whose
// process's stderr the source reads (see stderrTail).
type commandTransport struct {
	*mcp.CommandTransport
}

// stderrTail is the stderr of a server's process: it logs each line and
// keeps the last ones for errors.
type stderrTail struct {
	log func(line string)

	mu      sync.Mutex
	partial []byte   // the line being written
	lines   []string // the last lines, at most tailBytes in all
	size    int      // their bytes
}

const (
	tailBytes    = 256  // what the error of a session shows of the stderr
	maxLineBytes = 4096 // a longer line is logged in pieces
)

// Write implements io.Writer.
func (w *stderrTail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			if len(w.partial) >= maxLineBytes {
				w.line()
			}
			break
		}
		w.partial = append(w.partial, p[:i]...)
		w.line()
		p = p[i+1:]
	}
	return n, nil
}

// line ends the partial line: logs it and keeps it.
func (w *stderrTail) line() {
	line := strings.TrimRight(string(w.partial), "\r")
	w.partial = w.partial[:0]
	if line == "" {
		return
	}
	w.log(line)
	w.lines = append(w.lines, line)
	w.size += len(line) + 1
	for len(w.lines) > 1 && w.size > tailBytes {
		w.size -= len(w.lines[0]) + 1
		w.lines = w.lines[1:]
	}
}

// suffix returns what ends an error of the session: " (its stderr ends:
// "…")", or "" when the process wrote nothing.
func (w *stderrTail) suffix() string {
	if w == nil {
		return ""
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := w.lines
	if p := strings.TrimSpace(string(w.partial)); p != "" {
		lines = append(slices.Clip(lines), p)
	}
	if len(lines) == 0 {
		return ""
	}
	tail := strings.Join(lines, "\n")
	if len(tail) > tailBytes {
		tail = "…" + strings.ToValidUTF8(tail[len(tail)-tailBytes:], "")
	}
	return fmt.Sprintf(" (its stderr ends: %q)", tail)
}

// StreamableHTTP returns the [Options.Transport] of a server at endpoint
// over MCP's streamable HTTP transport. client nil means
// http.DefaultClient; give one with a Transport that adds credentials
// when the server needs them.
func StreamableHTTP(endpoint string, client *http.Client) func(context.Context) (mcp.Transport, error) {
	return func(context.Context) (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}, nil
	}
}
