package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// modulePath is the import path of the module the docs describe.
const modulePath = "github.com/chatscopes/chatgen"

// layer is one row of architecture.md's "## Layers" table: a runtime
// package, the module's packages its non-test files may import, and what
// its tests may import besides. Paths are relative to the module.
type layer struct {
	pkg     string
	imports []string
	tests   []string
}

// backticked matches a name in backticks in a cell of the table.
var backticked = regexp.MustCompile("`([^`]+)`")

// readLayers parses the table of architecture.md's "## Layers" section, in
// order: the rows are the one source of the layer list.
func readLayers(t *testing.T) []layer {
	t.Helper()
	raw, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Layers\n")
	if !ok {
		t.Fatal("architecture.md has no section \"## Layers\"")
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	cells := func(cell string) []string {
		var names []string
		for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
			names = append(names, m[1])
		}
		return names
	}
	var layers []layer
	for line := range strings.Lines(section) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "| `") {
			continue // prose, the header or the separator row
		}
		cols := strings.Split(strings.Trim(line, "|"), "|")
		if len(cols) != 3 {
			t.Fatalf("architecture.md: a row of the layer table has %d columns, want 3: %s", len(cols), line)
		}
		pkg := cells(cols[0])
		if len(pkg) != 1 {
			t.Fatalf("architecture.md: a row of the layer table names %d packages in its first column, want 1: %s", len(pkg), line)
		}
		layers = append(layers, layer{pkg: pkg[0], imports: cells(cols[1]), tests: cells(cols[2])})
	}
	if len(layers) == 0 {
		t.Fatal("architecture.md: the section \"## Layers\" has no table rows")
	}
	return layers
}

// listedPackage is what go list tells of a package of the module.
type listedPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// goList runs go list with args in the module's root and decodes the
// packages it prints as JSON.
func goList(t *testing.T, args ...string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list %s: %v", strings.Join(args, " "), err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// moduleRel returns path relative to the module, and whether it is one of
// the module's packages.
func moduleRel(path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, modulePath+"/")
	return rel, ok
}

// TestLayers checks every import between the module's packages made by a
// runtime package, its tests included, against the layer table of
// architecture.md, and the table against the packages that exist.
func TestLayers(t *testing.T) {
	layers := readLayers(t)
	row := map[string]int{} // package → its row
	for i, l := range layers {
		if _, dup := row[l.pkg]; dup {
			t.Errorf("architecture.md: %s has two rows in the layer table", l.pkg)
		}
		row[l.pkg] = i
	}
	for i, l := range layers {
		if !strings.HasPrefix(l.pkg, "runtime/") {
			t.Errorf("architecture.md: the layer table has a row for %s, which is not a runtime package", l.pkg)
		}
		for _, dep := range slices.Concat([]string{l.pkg}, l.imports, l.tests) {
			if !isPackageDir(filepath.Join("..", filepath.FromSlash(dep))) {
				t.Errorf("architecture.md: the layer table names %s, which is no package of the module", dep)
			}
		}
		for _, dep := range l.imports {
			if j, ok := row[dep]; ok && j >= i {
				t.Errorf("architecture.md: %s may import %s, whose row is not above its own: the table must list lower layers first", l.pkg, dep)
			} else if !ok && strings.HasPrefix(dep, "runtime/") {
				t.Errorf("architecture.md: %s may import %s, which has no row", l.pkg, dep)
			}
		}
	}

	for _, p := range goList(t, "-e", "-json=ImportPath,Imports,TestImports,XTestImports", "./runtime/...") {
		pkg, _ := moduleRel(p.ImportPath)
		i, ok := row[pkg]
		if !ok {
			t.Errorf("%s has no row in architecture.md's layer table", pkg)
			continue
		}
		l := layers[i]
		check := func(imports []string, allowed []string, what string) {
			for _, imp := range imports {
				dep, ok := moduleRel(imp)
				if !ok || dep == pkg || slices.Contains(allowed, dep) {
					continue
				}
				t.Errorf("%s imports %s (%s), which architecture.md's layer table does not allow", pkg, dep, what)
			}
		}
		check(p.Imports, l.imports, "non-test file")
		tests := slices.Concat(l.imports, l.tests)
		check(p.TestImports, tests, "in-package test")
		check(p.XTestImports, tests, "_test package")
	}
}

// isPackageDir reports whether dir holds a Go file.
func isPackageDir(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	return len(files) > 0
}

// TestCoreStaysThin checks that an application of routes and beans links
// none of the big dependencies the optional runtime packages bring, and
// that no runtime package links the OpenTelemetry SDK (the application
// installs one, or not).
func TestCoreStaysThin(t *testing.T) {
	heavy := func(path string) bool {
		if strings.HasPrefix(path, "github.com/tmc/langchaingo") || strings.HasPrefix(path, "github.com/modelcontextprotocol/") {
			return true
		}
		return slices.ContainsFunc(strings.Split(path, "/"), func(elem string) bool { return strings.HasPrefix(elem, "a2a") })
	}
	for _, p := range goList(t, "-deps", "-json=ImportPath", "./runtime/chat", "./runtime/ws", "./examples/counter") {
		if heavy(p.ImportPath) {
			t.Errorf("runtime/chat, runtime/ws or examples/counter links %s: the core must stay thin", p.ImportPath)
		}
	}
	for _, p := range goList(t, "-deps", "-json=ImportPath", "./runtime/...") {
		if strings.HasPrefix(p.ImportPath, "go.opentelemetry.io/otel/sdk") {
			t.Errorf("a runtime package links %s: the runtime uses the OpenTelemetry API only", p.ImportPath)
		}
	}
}
