package gen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// usedNames returns the identifiers the package's own files name: its
// syntax (chatgen's earlier output is parsed to its package clause only,
// so it names nothing) and every other .go file of its directory, its
// tests and files left out by build constraints included. chatgen writes
// the scope proxy and the accessor of a bean only when they are named here
// (or asked for with //chat:scoped proxy), so a package that never uses
// them does not carry them. Files that cannot be read or parsed are
// skipped: the compiler reports them.
func usedNames(pkg *packages.Package, dir string) map[string]bool {
	names := map[string]bool{}
	collectIdents := func(f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok {
				names[id.Name] = true
			}
			return true
		})
	}
	for _, f := range pkg.Syntax {
		collectIdents(f)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return names
	}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if e.IsDir() || !strings.HasSuffix(name, ".go") || name == outputName ||
			slices.Contains(pkg.GoFiles, path) || slices.Contains(pkg.CompiledGoFiles, path) {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			continue
		}
		collectIdents(f)
	}
	return names
}
