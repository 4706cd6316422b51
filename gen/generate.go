// Package gen is the chatgen generator: it loads Go packages, parses their
// //chat: directives, checks them and emits one chat_gen.go per package.
//
// The library never prints or exits: it returns files and diagnostics, and
// cmd/chatgen decides what to do with them.
package gen

import (
	"context"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// Config says what to generate.
type Config struct {
	// Dir is the directory in which packages are loaded and relative to
	// which diagnostics are printed; "" means the current directory.
	Dir string
	// Patterns are go/packages patterns; none means ".".
	Patterns []string
	// BuildFlags are passed to the go command, such as "-tags=x".
	BuildFlags []string
	// Env is the environment of the go command; nil means the current
	// process's.
	Env []string
}

// A File is one output of a run. A nil Content means the file must be
// removed: its package no longer has any //chat: directive.
type File struct {
	Path    string // absolute: a chat_gen.go in a package directory
	Content []byte // the whole file, gofmt-formatted; nil to remove it
}

// Result is the outcome of a run: files to write and the diagnostics found.
// When Diagnostics has errors, Files is empty: nothing may be written.
type Result struct {
	Files       []File      // one per package with output to write or remove, for WriteFiles
	Diagnostics Diagnostics // every problem found, sorted
}

// Generate loads the packages of cfg and generates their chat_gen.go files.
// Problems in the annotated source are returned as diagnostics, sorted; the
// error is for failures to run at all (the go command failing, for example).
func Generate(ctx context.Context, cfg Config) (*Result, error) {
	pkgs, fset, err := load(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if len(pkgs) == 0 {
		return nil, noPackages(ctx, cfg)
	}
	if err := onlyTests(pkgs); err != nil {
		return nil, err
	}
	res := &Result{}
	var files []File
	for _, pkg := range pkgs {
		var diags Diagnostics
		f, ok := generatePackage(fset, pkg, &diags)
		res.Diagnostics = append(res.Diagnostics, diags...)
		if ok {
			files = append(files, f)
		}
	}
	res.Diagnostics = res.Diagnostics.sorted()
	if !res.Diagnostics.hasErrors() {
		res.Files = files
	}
	return res, nil
}

// generatePackage generates the output of one package. ok is false when the
// package has nothing to write or remove.
func generatePackage(fset *token.FileSet, pkg *packages.Package, diags *Diagnostics) (File, bool) {
	dir := packageDir(pkg)
	if dir == "" {
		for _, e := range pkg.Errors {
			diags.errorf(parsePosition(e.Pos), "%s", e.Msg)
		}
		return File{}, false
	}
	out := filepath.Join(dir, outputName)
	// GoFiles, not CompiledGoFiles only: go list leaves CompiledGoFiles
	// empty when the package does not compile, which a stale output whose
	// annotated types are gone makes it do.
	isOutput := func(f string) bool { return filepath.Base(f) == outputName }
	hadOutput := slices.ContainsFunc(pkg.CompiledGoFiles, isOutput) || slices.ContainsFunc(pkg.GoFiles, isOutput)

	// Syntax errors make the package unusable; list errors too, except the
	// compiler output go list reports when it builds export data: those
	// errors are type errors, handled below.
	hard := false
	broken := map[string]bool{} // the files with syntax errors
	for _, e := range pkg.Errors {
		if e.Kind == packages.ListError && e.Pos == "" && strings.HasPrefix(e.Msg, "# ") {
			continue
		}
		if e.Kind == packages.ListError || e.Kind == packages.ParseError {
			pos := parsePosition(e.Pos)
			diags.errorf(pos, "%s", e.Msg)
			hard = true
			if e.Kind == packages.ParseError {
				broken[pos.Filename] = true
			}
		}
	}
	if hard {
		// The directives of the files that parsed are still checked, so
		// that their mistakes come with the syntax errors in one run; the
		// checks that need the package's types cannot run.
		var parsed []*ast.File
		for _, f := range pkg.Syntax {
			if !broken[fset.Position(f.Pos()).Filename] {
				parsed = append(parsed, f)
			}
		}
		collect(fset, parsed, diags)
		return File{}, false
	}

	anns := collect(fset, pkg.Syntax, diags)
	m := analyze(fset, pkg, anns, diags)
	reportTypeErrors(fset, pkg, anns, m, diags)
	used := usedNames(pkg, dir)
	for _, b := range m.beans {
		b.emitProxy = b.exported || used[b.proxy]
		b.emitAccessor = b.exported || used[b.accessor]
	}
	if diags.hasErrors() {
		return File{}, false
	}
	if m.empty() {
		if hadOutput {
			return File{Path: out}, true
		}
		return File{}, false
	}
	src, err := emit(m)
	if err != nil {
		diags.errorf(token.Position{Filename: out}, "%v", err)
		return File{}, false
	}
	return File{Path: out, Content: src}, true
}

// noPackages is the error of a run whose patterns matched no package,
// saying what to run: go list found no module, or nothing in it matched.
func noPackages(ctx context.Context, cfg Config) error {
	patterns := strings.Join(cfg.Patterns, " ")
	if patterns == "" {
		patterns = "."
	}
	dir := cfg.Dir
	if dir == "" {
		dir = "the current directory"
	}
	cmd := exec.CommandContext(ctx, "go", "env", "GOMOD")
	cmd.Dir, cmd.Env = cfg.Dir, cfg.Env
	if out, err := cmd.Output(); err == nil {
		if gomod := strings.TrimSpace(string(out)); gomod == "" || gomod == os.DevNull {
			return fmt.Errorf("no Go module in %s or its parents: create one with go mod init MODULE-PATH and go get -tool github.com/chatscopes/chatgen/cmd/chatgen, then run go generate ./... in its directory", dir)
		}
	}
	return fmt.Errorf("no Go package matches %s in %s: run chatgen in a package's directory (go generate does), or give patterns that match packages (./... for every package of the module)", patterns, dir)
}

// onlyTests is the error of a run whose packages all have test files
// only (go list reports no error for them): chatgen reads no file, and
// would succeed silently. A test-only package beside others (as ./...
// matches) is skipped like any package without directives.
func onlyTests(pkgs []*packages.Package) error {
	var names []string
	for _, pkg := range pkgs {
		if packageDir(pkg) != "" || len(pkg.Errors) > 0 {
			return nil
		}
		names = append(names, pkg.PkgPath)
	}
	return fmt.Errorf("package %s has no Go files but tests: chatgen reads the //chat: directives of non-test files; run it in a package with Go files (go generate does)", strings.Join(names, ", "))
}

func packageDir(pkg *packages.Package) string {
	for _, f := range pkg.GoFiles {
		return filepath.Dir(f)
	}
	for _, f := range pkg.CompiledGoFiles {
		return filepath.Dir(f)
	}
	return ""
}

// reportTypeErrors reports the type errors that touch an annotated
// declaration, ignoring references to identifiers chatgen itself
// generates (they are undefined until the first run). Other type errors are
// left to the compiler, like stringer does.
func reportTypeErrors(fset *token.FileSet, pkg *packages.Package, anns []*annotated, m *pkgModel, diags *Diagnostics) {
	for _, te := range pkg.TypeErrors {
		if name, ok := strings.CutPrefix(te.Msg, "undefined: "); ok && m.generates(name) {
			continue
		}
		if !insideAny(te.Pos, anns, m) {
			continue
		}
		diags.errorf(fset.Position(te.Pos), "%s", te.Msg)
	}
}

func insideAny(pos token.Pos, anns []*annotated, m *pkgModel) bool {
	for _, a := range anns {
		if a.node.Pos() <= pos && pos < a.node.End() {
			return true
		}
	}
	for _, n := range m.extraNodes {
		if n.Pos() <= pos && pos < n.End() {
			return true
		}
	}
	return false
}

// isContext reports whether t is context.Context.
func isContext(t types.Type) bool {
	n, ok := t.(*types.Named)
	if !ok {
		if a, ok := t.(*types.Alias); ok {
			return isContext(types.Unalias(a))
		}
		return false
	}
	o := n.Obj()
	return o.Pkg() != nil && o.Pkg().Path() == "context" && o.Name() == "Context"
}

// isError reports whether t is the predeclared error type.
func isError(t types.Type) bool {
	return types.Identical(t, types.Universe.Lookup("error").Type())
}
