package gen

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/internal/testmod"
	"golang.org/x/tools/imports"
	"golang.org/x/tools/txtar"
)

// The golden cases live in ../testdata, one txtar archive per case. An
// archive holds the Go files of one package (any name not under want/)
// and the expected outcome: want/chat_gen.go when generation succeeds, and
// want/diagnostics.txt when chatgen reports anything (errors or warnings).
// Run `go test ./gen -run TestGolden -update` to rewrite the want files.

const goldenDir = "../testdata"

// goldenModule is a temporary module holding one directory per case,
// resolving github.com/chatscopes/chatgen to this repository.
type goldenModule struct {
	dir string
	env []string
}

// sharedGoldenModule returns the golden module of the calling test
// function, created on first use. Each test function has its own, so
// packages keep the same import paths (example.com/golden/<case>) in all.
var sharedGoldenModule = func() func(t testing.TB) *goldenModule {
	var (
		mu   sync.Mutex
		mods = map[string]*goldenModule{}
	)
	return func(t testing.TB) *goldenModule {
		t.Helper()
		key, _, _ := strings.Cut(t.Name(), "/")
		mu.Lock()
		defer mu.Unlock()
		if m, ok := mods[key]; ok {
			return m
		}
		m, err := newGoldenModule()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			mu.Lock()
			delete(mods, key)
			mu.Unlock()
			os.RemoveAll(m.dir)
		})
		mods[key] = m
		return m
	}
}()

func newGoldenModule() (*goldenModule, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chatgen-golden-")
	if err != nil {
		return nil, err
	}
	if err := testmod.Write(dir, root, "example.com/golden"); err != nil {
		return nil, err
	}
	env := append(os.Environ(), testmod.Env()...)
	return &goldenModule{dir: dir, env: env}, nil
}

type goldenCase struct {
	name    string
	path    string
	archive *txtar.Archive
}

func readGoldenCases(t testing.TB) []goldenCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(goldenDir, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	for _, p := range paths {
		a, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, goldenCase{name: strings.TrimSuffix(filepath.Base(p), ".txtar"), path: p, archive: a})
	}
	return cases
}

// materialize writes the case's input files into dir (replacing it) and
// returns dir.
func (c goldenCase) materialize(t testing.TB, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range c.archive.Files {
		if strings.HasPrefix(f.Name, "want/") {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (c goldenCase) want(name string) ([]byte, bool) {
	for _, f := range c.archive.Files {
		if f.Name == name {
			return f.Data, true
		}
	}
	return nil, false
}

// outcome is what one run of the generator produced for a case.
type outcome struct {
	output      []byte // chat_gen.go, nil when none
	diagnostics []byte // formatted diagnostics, nil when none
}

func runGenerator(t testing.TB, mod *goldenModule, dir string) outcome {
	t.Helper()
	res, err := Generate(context.Background(), Config{Dir: dir, Env: mod.env})
	if err != nil {
		t.Fatal(err)
	}
	var o outcome
	if len(res.Diagnostics) > 0 {
		var b strings.Builder
		for _, d := range res.Diagnostics {
			b.WriteString(d.Format(dir))
			b.WriteByte('\n')
		}
		o.diagnostics = []byte(b.String())
	}
	for _, f := range res.Files {
		if filepath.Base(f.Path) == outputName && filepath.Dir(f.Path) == dir {
			o.output = f.Content
		}
	}
	if res.Diagnostics.hasErrors() && len(res.Files) > 0 {
		t.Errorf("errors reported but %d files returned for writing", len(res.Files))
	}
	return o
}

func TestGolden(t *testing.T) {
	mod := sharedGoldenModule(t)
	cases := readGoldenCases(t)
	if len(cases) == 0 {
		t.Fatal("no golden cases")
	}
	var (
		mu      sync.Mutex
		passing []string
	)
	t.Run("cases", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				dir := filepath.Join(mod.dir, c.name)
				c.materialize(t, dir)
				got := runGenerator(t, mod, dir)
				if got.output != nil {
					checkGoimportsClean(t, got.output)
				}
				if *update {
					c.update(t, got)
				} else {
					compareWant(t, c, "want/"+outputName, got.output)
					compareWant(t, c, "want/diagnostics.txt", got.diagnostics)
				}
				if got.output != nil {
					if err := os.WriteFile(filepath.Join(dir, outputName), got.output, 0o644); err != nil {
						t.Fatal(err)
					}
					mu.Lock()
					passing = append(passing, "./"+c.name)
					mu.Unlock()
				}
			})
		}
	})
	if testing.Short() || t.Failed() || len(passing) == 0 {
		return
	}
	// Every generated output compiles and vets, in one batched run.
	slices.Sort(passing)
	cmd := exec.Command("go", append([]string{"vet"}, passing...)...)
	cmd.Dir = mod.dir
	cmd.Env = mod.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go vet of the generated outputs failed: %v\n%s", err, out)
	}
}

// checkGoimportsClean fails when goimports would change src: the
// generator formats its output once, and must still match goimports
// (gofmt, plus standard-library imports grouped apart).
func checkGoimportsClean(t *testing.T, src []byte) {
	t.Helper()
	want, err := imports.Process(outputName, src, &imports.Options{FormatOnly: true, Comments: true, TabIndent: true, TabWidth: 8})
	if err != nil {
		t.Fatalf("goimports: %v", err)
	}
	if !bytes.Equal(src, want) {
		t.Errorf("the output is not goimports-clean:\n%s", lineDiff(string(want), string(src)))
	}
}

func compareWant(t *testing.T, c goldenCase, name string, got []byte) {
	t.Helper()
	want, ok := c.want(name)
	switch {
	case !ok && got == nil:
	case !ok:
		t.Errorf("%s: unexpected %s:\n%s", c.path, name, got)
	case got == nil:
		t.Errorf("%s: no %s produced; want:\n%s", c.path, name, want)
	case !bytes.Equal(got, want):
		t.Errorf("%s: %s differs (run go test ./gen -run TestGolden -update to accept)\n%s", c.path, name, lineDiff(string(want), string(got)))
	}
}

func (c goldenCase) update(t *testing.T, got outcome) {
	t.Helper()
	var files []txtar.File
	for _, f := range c.archive.Files {
		if !strings.HasPrefix(f.Name, "want/") {
			files = append(files, f)
		}
	}
	if got.output != nil {
		files = append(files, txtar.File{Name: "want/" + outputName, Data: got.output})
	}
	if got.diagnostics != nil {
		files = append(files, txtar.File{Name: "want/diagnostics.txt", Data: got.diagnostics})
	}
	a := &txtar.Archive{Comment: c.archive.Comment, Files: files}
	if err := os.WriteFile(c.path, txtar.Format(a), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lineDiff is a small line-oriented diff for failure messages.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	i, j := 0, 0
	for i < len(w) || j < len(g) {
		switch {
		case i < len(w) && j < len(g) && w[i] == g[j]:
			i++
			j++
		case j < len(g) && !slices.Contains(w[i:], g[j]):
			fmt.Fprintf(&b, "+ %s\n", g[j])
			j++
		case i < len(w):
			fmt.Fprintf(&b, "- %s\n", w[i])
			i++
		default:
			fmt.Fprintf(&b, "+ %s\n", g[j])
			j++
		}
	}
	return b.String()
}

// TestDeterministicAndIdempotent regenerates every passing case with its
// files written in reverse order and after its own output was written:
// the bytes never change, and a second write changes nothing.
func TestDeterministicAndIdempotent(t *testing.T) {
	mod := sharedGoldenModule(t)
	for _, c := range readGoldenCases(t) {
		if _, ok := c.want("want/" + outputName); !ok {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(mod.dir, c.name)
			rev := c
			rev.archive = &txtar.Archive{Files: slices.Clone(c.archive.Files)}
			slices.Reverse(rev.archive.Files)
			rev.materialize(t, dir)
			first := runGenerator(t, mod, dir)
			res := []File{{Path: filepath.Join(dir, outputName), Content: first.output}}
			if changed, err := WriteFiles(res); err != nil || len(changed) != 1 {
				t.Fatalf("first write: changed %v, err %v", changed, err)
			}
			second := runGenerator(t, mod, dir)
			if !bytes.Equal(first.output, second.output) {
				t.Fatalf("output changed after regenerating over its own output:\n%s", lineDiff(string(first.output), string(second.output)))
			}
			if changed, err := WriteFiles([]File{{Path: filepath.Join(dir, outputName), Content: second.output}}); err != nil || len(changed) != 0 {
				t.Fatalf("second write: changed %v, err %v; want no change", changed, err)
			}
			if want, _ := c.want("want/" + outputName); !*update && !bytes.Equal(first.output, want) {
				t.Fatalf("reversed file order changed the output:\n%s", lineDiff(string(want), string(first.output)))
			}
		})
	}
}

// TestDeterministicAcrossParseOrder regenerates the multi-file cases
// several times: go/packages parses files concurrently, so the order of
// files in the FileSet varies between runs, and the output must not.
func TestDeterministicAcrossParseOrder(t *testing.T) {
	mod := sharedGoldenModule(t)
	for _, c := range readGoldenCases(t) {
		want, ok := c.want("want/" + outputName)
		if !ok {
			continue
		}
		goFiles := 0
		for _, f := range c.archive.Files {
			if strings.HasSuffix(f.Name, ".go") && !strings.HasPrefix(f.Name, "want/") {
				goFiles++
			}
		}
		if goFiles < 3 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(mod.dir, c.name)
			c.materialize(t, dir)
			for i := range 6 {
				if got := runGenerator(t, mod, dir); !bytes.Equal(got.output, want) {
					t.Fatalf("run %d differs:\n%s", i, lineDiff(string(want), string(got.output)))
				}
			}
		})
	}
}

// Every generated file names the generated-code version it needs, in its
// comment and in the runtime constant it references, and both say
// GeneratedCodeVersion.
func TestGoldenOutputsNameTheirVersion(t *testing.T) {
	sentence := regexp.MustCompile(`supports generated code version (\d+)\.`)
	constant := regexp.MustCompile(`chatimpl\.SupportPackageIsVersion(\d+)\b`)
	want := strconv.Itoa(GeneratedCodeVersion)
	for _, c := range readGoldenCases(t) {
		out, ok := c.want("want/" + outputName)
		if !ok {
			continue
		}
		s, k := sentence.FindSubmatch(out), constant.FindSubmatch(out)
		if s == nil || k == nil || string(s[1]) != want || string(k[1]) != want {
			t.Errorf("%s: the version comment says %q and the constant %q; want both %s", c.name, s, k, want)
		}
	}
}

// A generated file imports runtime/agent/subagent only when its package
// offers an agent: an application without agents does not link it.
func TestGoldenOutputsImportSubagentOnlyForAgents(t *testing.T) {
	n := 0
	for _, c := range readGoldenCases(t) {
		out, ok := c.want("want/" + outputName)
		if !ok {
			continue
		}
		agents := false
		for _, f := range c.archive.Files {
			if !strings.HasPrefix(f.Name, "want/") && bytes.Contains(f.Data, []byte("//chat:agent")) {
				agents = true
			}
		}
		imports := bytes.Contains(out, []byte(`"`+subagentPkg+`"`))
		if imports {
			n++
		}
		if imports && !agents {
			t.Errorf("%s: imports %s without a //chat:agent", c.name, subagentPkg)
		}
	}
	if n == 0 {
		t.Error("no golden output imports subagent: the cases of //chat:agent are missing")
	}
}

// A chat_gen.go written for the previous generated-code version fails to
// compile at its version assertion first, under the comment that says to
// re-run go generate: the runtime dropped that version, and the first
// error a user reads names the way out.
func TestPreviousVersionFailsAtTheGuard(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module")
	}
	mod := sharedGoldenModule(t)
	var c goldenCase
	for _, gc := range readGoldenCases(t) {
		if gc.name == "scoped_per_chat" {
			c = gc
		}
	}
	out, ok := c.want("want/" + outputName)
	if !ok {
		t.Fatal("no golden case scoped_per_chat with an output")
	}
	// The version 4 assertion, as version 4 files wrote it: the constant
	// lived in runtime/chat then.
	prev := GeneratedCodeVersion - 1
	cur := fmt.Sprintf("const _ = chatimpl.SupportPackageIsVersion%d", GeneratedCodeVersion)
	old := fmt.Sprintf("const _ = chat.SupportPackageIsVersion%d", prev)
	src := strings.Replace(string(out), cur, old, 1)
	src = strings.Replace(src, fmt.Sprintf("generated code version %d.", GeneratedCodeVersion), fmt.Sprintf("generated code version %d.", prev), 1)
	if src == string(out) || !strings.Contains(src, old) {
		t.Fatalf("the golden output has no line %q", cur)
	}
	guard := 1 + strings.Count(src[:strings.Index(src, old)], "\n")
	dir := filepath.Join(mod.dir, "previous_version")
	c.materialize(t, dir)
	if err := os.WriteFile(filepath.Join(dir, outputName), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "./previous_version")
	cmd.Dir = mod.dir
	cmd.Env = mod.env
	msg, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a file of generated code version %d compiled against this runtime", prev)
	}
	first := regexp.MustCompile(`(?m)^\S*` + regexp.QuoteMeta(outputName) + `:(\d+):\d+: (.*)$`).FindSubmatch(msg)
	if first == nil || string(first[1]) != strconv.Itoa(guard) || !strings.Contains(string(first[2]), fmt.Sprintf("SupportPackageIsVersion%d", prev)) {
		t.Fatalf("the first compile error is not at the version assertion (line %d):\n%s", guard, msg)
	}
	lines := strings.Split(src, "\n")
	if above := lines[guard-2]; !strings.Contains(above, "re-run go generate") {
		t.Errorf("the comment above the version assertion is %q; want it to say to re-run go generate", above)
	}
}
