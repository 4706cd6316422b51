package ws

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite js/chatscopes.js from js/chatscopes.mjs")

// TestClassicScriptInSync keeps the classic script the exact classic form
// of the module: go test ./runtime/ws -run TestClassicScriptInSync -update
// rewrites it.
func TestClassicScriptInSync(t *testing.T) {
	want := classicScript(moduleSource)
	if *update {
		if err := os.WriteFile("js/chatscopes.js", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(scriptSource, want) {
		t.Fatal("js/chatscopes.js is not the classic form of js/chatscopes.mjs: run go test ./runtime/ws -run TestClassicScriptInSync -update")
	}
	if bytes.Contains(scriptSource, []byte("\nexport ")) || bytes.Contains(scriptSource, []byte("\nimport ")) {
		t.Fatal("the classic script has module syntax")
	}
}

// classicScript returns the classic-script form of the ES module source:
// the same code with its top-level exports turned into global
// declarations. It is how js/chatscopes.js is made.
func classicScript(module []byte) []byte {
	var b strings.Builder
	b.WriteString("// Generated from chatscopes.mjs by runtime/ws (TestClassicScriptInSync -update): do not edit.\n")
	b.WriteString("// The classic-script form of the chat scopes client: ChatScopesClient, SessionBuilder,\n")
	b.WriteString("// Session, ChatFailure and chatRoutesEndpoint become globals, as in Quarkus.\n")
	for _, line := range strings.SplitAfter(string(module), "\n") {
		if rest, ok := strings.CutPrefix(line, "export "); ok {
			line = rest
		}
		b.WriteString(line)
	}
	return []byte(b.String())
}

// TestTypeScriptDeclaresTheModule checks that every export of the module
// is declared in the .d.ts, and the reverse.
func TestTypeScriptDeclaresTheModule(t *testing.T) {
	exports := func(src []byte) map[string]bool {
		m := map[string]bool{}
		for _, line := range strings.Split(string(src), "\n") {
			rest, ok := strings.CutPrefix(line, "export ")
			if !ok {
				continue
			}
			f := strings.Fields(strings.NewReplacer("(", " ", "<", " ", "=", " ").Replace(rest))
			if len(f) >= 2 && (f[0] == "class" || f[0] == "function") {
				m[f[1]] = true
			}
		}
		return m
	}
	mod, dts := exports(moduleSource), exports(typesSource)
	for name := range mod {
		if !dts[name] {
			t.Errorf("%s is exported by the module but not declared", name)
		}
	}
	for name := range dts {
		if !mod[name] {
			t.Errorf("%s is declared but not exported by the module", name)
		}
	}
	if len(mod) < 5 {
		t.Errorf("exports: %v", mod)
	}
}

// TestScriptsParse checks the syntax of both scripts with node, when it is
// installed (the browser test runs them for real).
func TestScriptsParse(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	for _, f := range []string{"js/chatscopes.mjs", "js/chatscopes.js"} {
		if out, err := exec.Command(node, "--check", f).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", f, err, out)
		}
	}
}
