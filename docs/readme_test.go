package docs

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/tools/imports"
)

// TestReadmeTastePrintsWhatItSays runs the README's taste as a program in a
// fresh module, set up as docs/module.md says, and compares what it prints
// with the output the README shows.
func TestReadmeTastePrintsWhatItSays(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module outside the repository")
	}
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := sectionBlocks(t, string(raw), "A taste")
	if len(blocks) != 3 || blocks[0][0] != "go" || blocks[1][0] != "go" || blocks[2][0] != "text" {
		t.Fatalf("the taste changed shape: %d blocks", len(blocks))
	}
	decls := blocks[0][1]
	body := strings.ReplaceAll(strings.TrimRight(blocks[1][1], "\n"), "\n", "\n\t")
	src := "package main\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\t\"log\"\n\t\"strings\"\n\n\t\"github.com/chatscopes/chatgen/runtime/chat\"\n)\n\n" +
		decls + "\nfunc main() {\n\tif err := run(context.Background()); err != nil {\n\t\tlog.Fatal(err)\n\t}\n}\n\n" +
		"func run(ctx context.Context) error {\n\t" + body + "\n}\n"
	formatted, err := imports.Process("main.go", []byte(src), nil)
	if err != nil {
		t.Fatalf("the taste does not parse as a program: %v\n%s", err, src)
	}

	// module.md's commands, go run . last.
	mod, err := os.ReadFile("module.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := strings.Split(strings.TrimSpace(generateAndRun(t, string(mod))[1][1]), "\n")
	sh := newModule(t, string(formatted))
	for _, c := range cmds[:len(cmds)-1] {
		sh(c)
	}
	out := sh(cmds[len(cmds)-1])
	if got, want := out, blocks[2][1]; got != want {
		t.Errorf("the taste printed\n%s\nthe README says\n%s", got, want)
	}
}
