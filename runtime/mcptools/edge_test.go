package mcptools_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/mcptools"
)

// TestCommandEnvironment: a server run with Command gets a minimal
// environment, not the application's secrets; a Cmd adds variables, or
// passes the whole environment with InheritEnv.
func TestCommandEnvironment(t *testing.T) {
	checkGoroutines(t)
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
		checkGoroutines(t)
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
		checkGoroutines(t)
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
		checkGoroutines(t)
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
