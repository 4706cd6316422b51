package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fencedBlock matches a fenced code block and its language.
var fencedBlock = regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```")

// sectionBlocks returns the code blocks of the "## title" section of doc,
// in order, as language and text.
func sectionBlocks(t *testing.T, doc, title string) [][2]string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("no section %q", title)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	var blocks [][2]string
	for _, m := range fencedBlock.FindAllStringSubmatch(rest, -1) {
		blocks = append(blocks, [2]string{m[1], m[2]})
	}
	return blocks
}

// newModule makes a fresh module outside the repository set up as
// module.md's "From a local checkout" says, with main.go holding src, and
// returns a func running shell commands in it (failing the test on an
// error) and returning their output.
func newModule(t *testing.T, src string) (sh func(script string) string) {
	t.Helper()
	raw, err := os.ReadFile("module.md")
	if err != nil {
		t.Fatal(err)
	}
	recipe := sectionBlocks(t, string(raw), "From a local checkout")
	if len(recipe) != 1 || recipe[0][0] != "sh" {
		t.Fatalf("module.md changed shape: the recipe has %d blocks", len(recipe))
	}
	// The layout the doc assumes: the checkout in ../chatgen.
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(root, filepath.Join(dir, "chatgen")); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(dir, "hello")
	if err := os.Mkdir(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	sh = func(script string) string {
		t.Helper()
		cmd := exec.Command("sh", "-e", "-c", script)
		cmd.Dir, cmd.Env = mod, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s\n%s: %v", script, out, err)
		}
		return string(out)
	}
	// In the doc's order: the module, the recipe, then main.go.
	sh("go mod init example.com/hello")
	sh(recipe[0][1])
	if err := os.WriteFile(filepath.Join(mod, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return sh
}

// generateAndRun returns the blocks of module.md's "Generate and run": the
// program, the commands and their output.
func generateAndRun(t *testing.T, doc string) [][2]string {
	t.Helper()
	run := sectionBlocks(t, doc, "Generate and run")
	if len(run) != 3 || run[0][0] != "go" || run[1][0] != "sh" {
		t.Fatalf("module.md changed shape: run has %d blocks", len(run))
	}
	return run
}

// TestUseInYourModule follows docs/module.md verbatim on a fresh module
// outside this repository: the local-checkout recipe, go generate, go
// build, go vet, and the program's output.
func TestUseInYourModule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module outside the repository")
	}
	raw, err := os.ReadFile("module.md")
	if err != nil {
		t.Fatal(err)
	}
	run := generateAndRun(t, string(raw))
	sh := newModule(t, run[0][1])

	// The commands of the doc, the last one (go run .) printing the
	// doc's output.
	cmds := strings.Split(strings.TrimSpace(run[1][1]), "\n")
	for _, c := range cmds[:len(cmds)-1] {
		sh(c)
	}
	if out := sh("test -f chat_gen.go && echo yes || echo no"); out != "yes\n" {
		t.Fatal("go generate wrote no chat_gen.go")
	}
	got := sh(cmds[len(cmds)-1])
	if want := run[2][1]; got != want {
		t.Errorf("%s printed\n%s\nwant\n%s", cmds[len(cmds)-1], got, want)
	}

	// go mod tidy keeps the generator's dependencies: generating again
	// after a tidy still works.
	sh("go mod tidy && go generate ./... && go build ./...")

	// The check of "Check that chat_gen.go is current": quiet on the
	// fresh output, failing and naming the file once it is stale.
	check := sectionBlocks(t, string(raw), "Check that chat_gen.go is current (CI and pre-commit)")
	if len(check) != 3 || check[0][0] != "sh" || check[1][0] != "" {
		t.Fatalf("module.md changed shape: the check has %d blocks", len(check))
	}
	sh(check[0][1])
	// A new route that the old output still compiles with: without the
	// check, the route would silently not exist.
	sh(`printf '\n//chat:route bye\nfunc Bye() string { return "bye" }\n' >> main.go && go build ./...`)
	out := sh("! " + strings.TrimSpace(check[0][1]) + " 2>&1")
	if out != check[1][1] {
		t.Errorf("the check printed\n%s\nmodule.md shows\n%s", out, check[1][1])
	}
}
