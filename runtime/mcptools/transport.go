package mcptools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
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
// Each session starts the command; the process lives as long as its
// session, not as the context that opened it. What it writes to its
// stderr is logged by the source at Debug level, line by line, and its
// last lines end the error of a session that fails to open.
//
// Closing the session (its scope ends, or [Source.Close]) closes the
// process's stdin, as MCP's stdio transport says, and returns at once: a
// server still running Grace later gets SIGTERM, and SIGKILL after another
// Grace. The process is reaped in the background; [Source.Close] waits
// for the processes of its sessions. Those signals are not failures: a
// server that needed them is logged at Debug level.
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
	// Grace is how long a closed session's process has to exit after its
	// stdin closed before it gets SIGTERM, and after SIGTERM before
	// SIGKILL; 0 means [DefaultGrace].
	Grace time.Duration
}

// DefaultGrace is a [Cmd]'s Grace when it is 0.
const DefaultGrace = 2 * time.Second

// Transport returns the transport of a new session: a new process.
func (c Cmd) Transport(context.Context) (mcp.Transport, error) {
	if c.Path == "" {
		return nil, errors.New("mcptools: the Cmd has no Path")
	}
	if c.Grace < 0 {
		return nil, fmt.Errorf("mcptools: the Cmd of %s has a negative Grace %v", c.Path, c.Grace)
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
	grace := c.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	return &commandTransport{cmd: cmd, grace: grace}, nil
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

// commandTransport is the transport of a [Cmd]: the process, its pipes
// and its reaping. Unlike the SDK's CommandTransport, whose Close waits
// for the process (5 s before SIGTERM) and returns its exit status,
// closing its connection closes the pipes and returns; the process is
// signalled and reaped in the background.
type commandTransport struct {
	cmd   *exec.Cmd
	grace time.Duration

	// Set by the source before Connect.
	procs *sync.WaitGroup // counts the processes not reaped yet
	log   func(msg string, args ...any)

	stdin     *os.File
	stdout    *os.File // closed once the session closed and the process exited
	outOnce   sync.Once
	exited    chan struct{} // closed when the process has been reaped; nil before it started
	waitErr   error         // the process's exit; set before exited closes
	closing   chan struct{} // closed when the session closed the stdin
	closeOnce sync.Once
}

// Connect implements mcp.Transport: it starts the process.
func (t *commandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	t.cmd.Stdin, t.cmd.Stdout = inR, outW
	err = t.cmd.Start()
	inR.Close() // the child's ends
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	t.stdin, t.stdout = inW, outR
	t.exited, t.closing = make(chan struct{}), make(chan struct{})
	done := func() {}
	if t.procs != nil {
		t.procs.Add(2)
		done = t.procs.Done
	}
	go func() {
		defer done()
		t.waitErr = t.cmd.Wait()
		close(t.exited)
	}()
	go func() {
		defer done()
		t.supervise()
	}()
	// Closing the connection closes stdin, not stdout: a server may
	// still write while it ends (a Go program writing to a closed pipe
	// would die of SIGPIPE).
	return (&mcp.IOTransport{Reader: io.NopCloser(outR), Writer: stdinCloser{t}}).Connect(ctx)
}

// stdinCloser is the process's stdin, whose Close ends the process.
type stdinCloser struct{ t *commandTransport }

func (w stdinCloser) Write(p []byte) (int, error) { return w.t.stdin.Write(p) }

// Close closes the stdin and returns; the process is signalled if it
// does not exit, and reaped, in the background.
func (w stdinCloser) Close() error {
	w.t.shutdown()
	return nil
}

// shutdown closes the process's stdin, once; supervise makes sure it
// ends.
func (t *commandTransport) shutdown() {
	if t.exited == nil {
		return // never started
	}
	t.closeOnce.Do(func() {
		_ = t.stdin.Close()
		close(t.closing)
		select {
		case <-t.exited:
			t.closeStdout() // supervise has returned
		default:
		}
	})
}

// closeStdout closes the read end of the process's stdout.
func (t *commandTransport) closeStdout() {
	t.outOnce.Do(func() { _ = t.stdout.Close() })
}

// supervise runs as long as the process: once the session closes its
// stdin, it waits for the process to exit, signalling it as the grace
// periods end.
func (t *commandTransport) supervise() {
	select {
	case <-t.exited:
		// Before the session closed (the session's watcher tells), or
		// as it closed: then shutdown may have missed the exit.
		select {
		case <-t.closing:
			t.closeStdout()
		default:
		}
		return
	case <-t.closing:
	}
	defer t.closeStdout()
	timer := time.NewTimer(t.grace)
	defer timer.Stop()
	select {
	case <-t.exited:
		t.logExit("")
		return
	case <-timer.C:
	}
	if err := t.cmd.Process.Signal(syscall.SIGTERM); err == nil {
		timer.Reset(t.grace)
		select {
		case <-t.exited:
			t.logExit("SIGTERM")
			return
		case <-timer.C:
		}
	}
	_ = t.cmd.Process.Kill()
	<-t.exited
	t.logExit("SIGKILL")
}

// logExit logs how the process of a closed session ended: after sig
// ("" when it exited on its own).
func (t *commandTransport) logExit(sig string) {
	if t.log == nil {
		return
	}
	switch {
	case sig != "":
		t.log("mcptools: the MCP server did not exit when its session closed its input; it was signalled",
			"signal", sig, "grace", t.grace)
	case t.waitErr != nil:
		t.log("mcptools: the MCP server exited with an error after its session closed", "err", t.waitErr)
	}
}

// wait closes the process's stdin, if it started, and waits until it is
// reaped.
func (t *commandTransport) wait() {
	if t.exited == nil {
		return
	}
	t.shutdown()
	<-t.exited
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
