package gen

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkGenerate runs the generator over one package with 100 annotated
// types (scoped beans with methods, a third of them with routes): one load,
// analysis and rendering per iteration.
func BenchmarkGenerate(b *testing.B) {
	mod, dir := benchModule(b, "big", bigPackage())
	defer os.RemoveAll(mod.dir)
	ctx := context.Background()
	for b.Loop() {
		res, err := Generate(ctx, Config{Dir: dir, Env: mod.env})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Diagnostics) > 0 || len(res.Files) != 1 {
			b.Fatalf("diagnostics %v, %d files", res.Diagnostics, len(res.Files))
		}
	}
}

// BenchmarkGeneratePeers runs two commands, as go generate does, in one
// run so that their ratio is measured on the same machine state: chatgen
// over the package of BenchmarkGenerate, and stringer (the peer: a small
// generator built on the same go/packages load) over a package of 100
// enum types of three constants each. Each writes its output before the
// timed runs, which find it up to date and load it with the package (the
// steady state of go generate).
func BenchmarkGeneratePeers(b *testing.B) {
	mod, chatDir := benchModule(b, "big", bigPackage())
	defer os.RemoveAll(mod.dir)
	var enums strings.Builder
	var names []string
	enums.WriteString("package enums\n\n")
	for i := range 100 {
		fmt.Fprintf(&enums, "// T%d is an enum.\ntype T%d int\n\nconst (\n\tA%d T%d = iota\n\tB%d\n\tC%d\n)\n\n", i, i, i, i, i, i)
		names = append(names, fmt.Sprintf("T%d", i))
	}
	stringerDir := filepath.Join(mod.dir, "enums")
	writeBenchPackage(b, stringerDir, "enums.go", enums.String())

	bin := b.TempDir()
	chatgen, stringer := filepath.Join(bin, "chatgen"), filepath.Join(bin, "stringer")
	for _, build := range [][]string{
		{"build", "-o", chatgen, "github.com/chatscopes/chatgen/cmd/chatgen"},
		{"build", "-o", stringer, "golang.org/x/tools/cmd/stringer"},
	} {
		if out, err := exec.Command("go", build...).CombinedOutput(); err != nil {
			b.Fatalf("go %s: %v\n%s", strings.Join(build, " "), err, out)
		}
	}
	run := func(b *testing.B, dir string, name string, args ...string) {
		once := func() {
			cmd := exec.Command(name, args...)
			cmd.Dir, cmd.Env = dir, mod.env
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s: %v\n%s", name, err, out)
			}
		}
		once() // writes the output: the go command then builds the package once
		for b.Loop() {
			once()
		}
	}
	b.Run("chatgen", func(b *testing.B) { run(b, chatDir, chatgen) })
	b.Run("stringer", func(b *testing.B) { run(b, stringerDir, stringer, "-type="+strings.Join(names, ",")) })
}

// bigPackage is the source of BenchmarkGenerate's package.
func bigPackage() string {
	var src strings.Builder
	src.WriteString("package big\n\nimport \"context\"\n\n")
	for i := range 100 {
		kind := []string{"", " per-chat", " invocation"}[i%3]
		fmt.Fprintf(&src, "// T%d is annotated.\n//\n//chat:scoped%s\ntype T%d struct{ n int }\n\n", i, kind, i)
		fmt.Fprintf(&src, "func (t *T%d) Get() int { return t.n }\n\n", i)
		fmt.Fprintf(&src, "func (t *T%d) Add(ctx context.Context, d int) (int, error) { t.n += d; return t.n, nil }\n\n", i)
		if i%3 == 0 {
			fmt.Fprintf(&src, "//chat:route r%d\nfunc (t *T%d) Chat(ctx context.Context, msg string, n int) (string, error) { return msg, nil }\n\n", i, i)
		}
	}
	return src.String()
}

// benchModule returns a golden module with the package name holding src,
// and the package's directory.
func benchModule(b *testing.B, name, src string) (*goldenModule, string) {
	b.Helper()
	mod, err := newGoldenModule()
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(mod.dir, name)
	writeBenchPackage(b, dir, name+".go", src)
	return mod, dir
}

func writeBenchPackage(b *testing.B, dir, file, src string) {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(src), 0o644); err != nil {
		b.Fatal(err)
	}
}
