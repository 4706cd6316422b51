package gen

import (
	"cmp"
	"fmt"
	"go/token"
	"path/filepath"
	"slices"
)

// Severity says whether a diagnostic stops generation.
type Severity uint8

const (
	// Error diagnostics stop the run: nothing is written.
	Error Severity = iota
	// Warning diagnostics are printed but do not stop the run.
	Warning
)

// Related is a secondary position attached to a diagnostic, such as the
// place of an earlier, conflicting directive.
type Related struct {
	Pos     token.Position // the secondary position
	Message string         // what is there, such as "first declared here"
}

// A Diagnostic is one positioned problem found in the annotated source.
type Diagnostic struct {
	Pos      token.Position // where the problem is; the column points at the offending argument
	Severity Severity
	Message  string    // one line, without the position
	Related  []Related // other positions involved, if any
}

// Format renders d as "file:line:col: message" (with "warning: " before the
// message of a warning), file names made relative to dir when possible, and
// each related position on its own tab-indented line.
func (d Diagnostic) Format(dir string) string {
	// A problem of the whole run (a pattern matching nothing, say) has no
	// position: it is said as chatgen's own.
	s := "chatgen: "
	if d.Pos.Filename != "" || d.Pos.Line > 0 {
		s = formatPos(d.Pos, dir) + ": "
	}
	if d.Severity == Warning {
		s += "warning: "
	}
	s += d.Message
	for _, r := range d.Related {
		s += fmt.Sprintf("\n\t%s: %s", formatPos(r.Pos, dir), r.Message)
	}
	return s
}

func formatPos(p token.Position, dir string) string {
	name := p.Filename
	if dir != "" && filepath.IsAbs(name) {
		if rel, err := filepath.Rel(dir, name); err == nil {
			name = rel
		}
	}
	name = filepath.ToSlash(name)
	if p.Column > 0 {
		return fmt.Sprintf("%s:%d:%d", name, p.Line, p.Column)
	}
	return fmt.Sprintf("%s:%d", name, p.Line)
}

// Diagnostics is a list of diagnostics. A Result holds them sorted by file,
// line and column, without duplicates.
type Diagnostics []Diagnostic

// errorf appends an error at pos.
func (ds *Diagnostics) errorf(pos token.Position, format string, args ...any) *Diagnostic {
	*ds = append(*ds, Diagnostic{Pos: pos, Severity: Error, Message: fmt.Sprintf(format, args...)})
	return &(*ds)[len(*ds)-1]
}

// warnf appends a warning at pos.
func (ds *Diagnostics) warnf(pos token.Position, format string, args ...any) *Diagnostic {
	*ds = append(*ds, Diagnostic{Pos: pos, Severity: Warning, Message: fmt.Sprintf(format, args...)})
	return &(*ds)[len(*ds)-1]
}

// hasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) hasErrors() bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Severity == Error })
}

// sorted returns the diagnostics sorted by file, line, column and message,
// with exact duplicates removed.
func (ds Diagnostics) sorted() Diagnostics {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.Pos.Filename, b.Pos.Filename),
			cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Column, b.Pos.Column),
			cmp.Compare(a.Severity, b.Severity),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.CompactFunc(out, func(a, b Diagnostic) bool {
		return a.Pos == b.Pos && a.Severity == b.Severity && a.Message == b.Message
	})
}

// comparePos orders two positions of fset by file name, then offset. Raw
// token.Pos values are not enough: go/packages parses files concurrently,
// so the order of the files in the FileSet changes from run to run.
func comparePos(fset *token.FileSet, a, b token.Pos) int {
	pa, pb := fset.Position(a), fset.Position(b)
	return cmp.Or(cmp.Compare(pa.Filename, pb.Filename), cmp.Compare(pa.Offset, pb.Offset))
}
