package gen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkGenerate runs the generator over one package with 100 annotated
// types (scoped beans with methods, a third of them with routes): one load,
// analysis and rendering per iteration.
func BenchmarkGenerate(b *testing.B) {
	mod, err := newGoldenModule()
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(mod.dir)
	dir := filepath.Join(mod.dir, "big")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
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
	if err := os.WriteFile(filepath.Join(dir, "big.go"), []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
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
