package mcptools_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/mcptools"
)

// TestCommandEnvironment: a server run with Command gets a minimal
// environment, not the application's secrets; a Cmd adds variables, or
// passes the whole environment with InheritEnv.
func TestCommandEnvironment(t *testing.T) {
	leaktest.Check(t)
	t.Setenv("CHATGEN_TEST_OPENAI_API_KEY", "sk-do-not-leak")
	t.Setenv("PATH", os.Getenv("PATH")+":/opt/lore/bin")
	t.Setenv("SHELL", "() { :; }; echo pwned") // a shell function: never passed
	for _, c := range []struct {
		name      string
		transport mcptools.Cmd
		want      []string
		wantNot   []string
	}{
		{"Command", mcptools.Cmd{},
			[]string{"PATH=" + os.Getenv("PATH")},
			[]string{"CHATGEN_TEST_OPENAI_API_KEY=", "SHELL="}},
		{"Env", mcptools.Cmd{Env: []string{"LORE_TOKEN=t0k", "PATH=/only/here"}},
			[]string{"LORE_TOKEN=t0k", "PATH=/only/here"},
			[]string{"CHATGEN_TEST_OPENAI_API_KEY=", "PATH=" + os.Getenv("PATH")}},
		{"InheritEnv", mcptools.Cmd{InheritEnv: true},
			[]string{"CHATGEN_TEST_OPENAI_API_KEY=sk-do-not-leak", "PATH=" + os.Getenv("PATH")},
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			transport := stdio("env")
			if c.name != "Command" {
				c.transport.Path, c.transport.Args = os.Args[0], []string{serverArg, "env"}
				transport = c.transport.Transport
			}
			src := connect(t, &mcptools.Options{Name: "lore", Transport: transport, Logger: discard()})
			f := newFixture(t, llmtest.Sequence(calls(call("get_env", `{}`)), say("ok")), src)
			ex := f.chat(begin(t), "what is your environment?").Executions[0]
			if ex.Err != nil {
				t.Fatal(ex.Err)
			}
			env := strings.Split(ex.Text, "\n")
			for _, w := range c.want {
				if !slices.Contains(env, w) {
					t.Errorf("the server's environment lacks %q:\n%s", w, ex.Text)
				}
			}
			for _, w := range c.wantNot {
				if slices.ContainsFunc(env, func(v string) bool { return strings.HasPrefix(v, w) }) {
					t.Errorf("the server's environment has %q:\n%s", w, ex.Text)
				}
			}
		})
	}
}

// TestClosingADeafServer: ending a scope whose server over stdio ignores
// the end of its input neither waits for the server nor fails: the
// process is signalled in the background (SIGTERM after the Grace, then
// SIGKILL), logged at Debug, and reaped; Source.Close waits for it.
func TestClosingADeafServer(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	t.Run("SIGTERM", func(t *testing.T) {
		// Command's default Grace: the server exits on SIGTERM.
		leaktest.Check(t)
		mark := fmt.Sprintf("deaf-%d", time.Now().UnixNano())
		logs := &logBuffer{}
		src, err := mcptools.PerScope(chat.KindChat, &mcptools.Options{Name: "lore", Transport: stdio("deaf", mark), Logger: logs.logger()})
		if err != nil {
			t.Fatal(err)
		}
		countOnce(t, src)
		if err := src.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if p := processes(mark); len(p) != 0 {
			t.Fatalf("processes after Close: %v", p)
		}
		if l := logs.String(); !strings.Contains(l, "level=DEBUG") || !strings.Contains(l, "signal=SIGTERM") || strings.Contains(l, "level=ERROR") {
			t.Fatalf("logs:\n%s", l)
		}
	})
	t.Run("End does not wait", func(t *testing.T) {
		// A server that ignores SIGTERM too, with an hour's Grace: it
		// outlives chat.End, and exits when the test tells it to.
		leaktest.Check(t)
		mark := fmt.Sprintf("stubborn-%d", time.Now().UnixNano())
		cmd := mcptools.Cmd{Path: os.Args[0], Args: []string{serverArg, "stubborn", mark}, Grace: time.Hour}
		src, err := mcptools.PerScope(chat.KindChat, &mcptools.Options{Name: "lore", Transport: cmd.Transport, Logger: discard()})
		if err != nil {
			t.Fatal(err)
		}
		countOnce(t, src)
		p := processes(mark)
		if len(p) != 1 {
			t.Fatalf("after chat.End: processes %v, want the server's", p)
		}
		pid, _ := strconv.Atoi(p[0])
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
		if err := src.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if p := processes(mark); len(p) != 0 {
			t.Fatalf("processes after Close: %v", p)
		}
	})
	t.Run("SIGKILL", func(t *testing.T) {
		leaktest.Check(t)
		mark := fmt.Sprintf("stubborn-%d", time.Now().UnixNano())
		logs := &logBuffer{}
		cmd := mcptools.Cmd{Path: os.Args[0], Args: []string{serverArg, "stubborn", mark}, Grace: 50 * time.Millisecond}
		src := connect(t, &mcptools.Options{Name: "lore", Transport: cmd.Transport, Logger: logs.logger()})
		if err := src.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if p := processes(mark); len(p) != 0 {
			t.Fatalf("processes after Close: %v", p)
		}
		if l := logs.String(); !strings.Contains(l, "signal=SIGKILL") || strings.Contains(l, "level=ERROR") {
			t.Fatalf("logs:\n%s", l)
		}
	})
}

// countOnce runs a conversation of one turn that calls the server's
// "count" tool, and ends it: chat.End must succeed.
func countOnce(t *testing.T, src *mcptools.Source) {
	t.Helper()
	f := newFixture(t, llmtest.Sequence(calls(call("count", `{}`)), say("counted")), src)
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := f.chat(ctx, "count"); len(r.Executions) != 1 || r.Executions[0].Text != "1" {
		t.Fatalf("executions %+v", r.Executions)
	}
	if err := chat.End(ctx); err != nil {
		t.Fatalf("chat.End: %v", err)
	}
}

// startHTTPServer runs the "hard" server over streamable HTTP in a
// process of its own (variant "http-sse" or "http-json") and returns its
// URL.
func startHTTPServer(t *testing.T, variant string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], serverArg, variant)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		_ = cmd.Wait()
	})
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(url)
}

// countingTransport counts the bytes of the response bodies read.
type countingTransport struct {
	base http.RoundTripper
	n    atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err == nil && resp.Body != nil {
		resp.Body = &countingBody{resp.Body, &c.n}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// TestHugeHTTPResult: a 100 MB result (24 MiB with the race detector)
// over streamable HTTP, as a JSON
// response or as an event of a stream, is not read past MaxMessageBytes:
// the call fails with ErrMessageTooLarge, naming the limit, the memory
// stays bounded, and the next call opens a new session.
func TestHugeHTTPResult(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 100 MB")
	}
	for _, variant := range []string{"http-json", "http-sse"} {
		t.Run(variant, func(t *testing.T) {
			leaktest.Check(t)
			url := startHTTPServer(t, variant)
			counter := &countingTransport{base: &http.Transport{}}
			client := &http.Client{Transport: counter}
			t.Cleanup(client.CloseIdleConnections)
			src := connect(t, &mcptools.Options{Name: "lore", Transport: mcptools.StreamableHTTP(url, client), Logger: discard()})
			size := 100_000_000
			if raceEnabled {
				size = 24 << 20 // a server built with the race detector is slow to encode it
			}
			f := newFixture(t, llmtest.Sequence(
				calls(call("tome", fmt.Sprintf(`{"n":%d}`, size))), say("too long"),
				calls(call("tome", `{"n":10}`)), say("short"),
			), src)
			ctx := begin(t)

			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			var peak atomic.Uint64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				var m runtime.MemStats
				for {
					runtime.ReadMemStats(&m)
					if m.HeapAlloc > peak.Load() {
						peak.Store(m.HeapAlloc)
					}
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			}()
			read0 := counter.n.Load()
			ex := f.chat(ctx, "recite").Executions[0]
			close(stop)
			<-sampled
			read := counter.n.Load() - read0
			growth := int64(peak.Load()) - int64(before.HeapAlloc)
			t.Logf("%s: %d bytes read of a %d-byte result, heap growth at most %.1f MiB", variant, read, size, float64(growth)/(1<<20))

			if !errors.Is(ex.Err, mcptools.ErrMessageTooLarge) || !strings.Contains(ex.Err.Error(), fmt.Sprint(mcptools.DefaultMaxMessageBytes)) {
				t.Fatalf("the huge call: %v", ex.Err)
			}
			if read > mcptools.DefaultMaxMessageBytes+2<<20 {
				t.Fatalf("%d bytes read, past the bound of %d", read, mcptools.DefaultMaxMessageBytes)
			}
			if growth > 64<<20 {
				t.Fatalf("the heap grew by %d bytes", growth)
			}
			if ex := f.chat(ctx, "recite less").Executions[0]; ex.Err != nil || ex.Text != "ééééé" {
				t.Fatalf("the next call: %q, %v", ex.Text, ex.Err)
			}
		})
	}
}

// TestTaskOnlyTool: a tool the server lists as callable only as an MCP
// task is not offered to the model (logged once, at Warn, with its name),
// over stdio and streamable HTTP; the server's other tools are; naming it
// in Allow is an error.
func TestTaskOnlyTool(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "tasks")
	srv := newServer("tasks", false)
	hj := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{JSONResponse: true}))
	defer hj.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for name, transport := range map[string]func(context.Context) (mcp.Transport, error){
		"stdio":     stdio("tasks"),
		"http-sse":  h.transport(),
		"http-json": mcptools.StreamableHTTP(hj.URL, client),
	} {
		t.Run(name, func(t *testing.T) {
			if got := mustList(t, transport); !slices.ContainsFunc(got, func(tool *mcp.Tool) bool { return tool.Name == "ritual" }) {
				t.Fatal("the server does not list ritual")
			}
			logs := &logBuffer{}
			src, err := mcptools.PerScope(chat.KindChat, &mcptools.Options{Name: "lore", Transport: transport, Logger: logs.logger()})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			for range 2 { // two scopes, two sessions, one warning
				ctx := begin(t)
				tools, err := src.Tools(ctx)
				if err != nil {
					t.Fatal(err)
				}
				got := names(tools)
				if slices.Contains(got, "ritual") || !slices.Contains(got, "legend") {
					t.Fatalf("tools %v", got)
				}
				if err := chat.End(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if l := logs.String(); strings.Count(l, "level=WARN") != 1 || !strings.Contains(l, "tool=ritual") || !strings.Contains(l, "task") {
				t.Fatalf("logs:\n%s", l)
			}
			_, err = mcptools.Connect(context.Background(), &mcptools.Options{Name: "lore", Transport: transport, Allow: []string{"ritual"}, Logger: discard()})
			if !errors.Is(err, mcptools.ErrUnusableTool) || !strings.Contains(err.Error(), "MCP task") {
				t.Fatalf("Allow ritual: %v", err)
			}
		})
	}
}
