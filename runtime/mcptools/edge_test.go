package mcptools_test

import (
	"os"
	"slices"
	"strings"
	"testing"

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
