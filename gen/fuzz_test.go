package gen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

// FuzzParseDirective parses "//chat:" + input as a lone comment and as the
// doc comment of every kind of declaration, checking that nothing panics,
// that every diagnostic is positioned, and that a directive without a spec
// comes with an error. It also checks the argument scanner against
// ast.Directive.ParseArgs and the near-miss detector on spoilt prefixes.
func FuzzParseDirective(f *testing.F) {
	for _, s := range directiveTable {
		f.Add(strings.TrimPrefix(s.Usage, "//chat:"))
		for _, line := range strings.Split(s.Example, "\n") {
			line = strings.TrimSpace(line)
			if rest, ok := strings.CutPrefix(line, "//chat:"); ok {
				f.Add(rest)
			}
		}
	}
	for _, s := range []string{
		"", " ", "=", "route", "route ", "route =", "route a==b", "route a roles=", "route a roles=,",
		`route a roles="a,b"`, `route a roles="a b"`, "route a roles=`x`", `route a roles="`, `route a roles="\"`,
		`route "a`, `route "a"b`, `route a "" ""`, "route\ta\u00a0b\u2003c", "route a\x00b", "route \xff\xfe",
		`event "\u00e9v\u00e9nement"`, `event "\xff"`, "event 事件", "system", "system file=", `system file="a b"`,
		`system file="a`, "system fil=a", "system file=a b", "system x=\"", "param", "param x", `param "x" y`,
		"param x\ty", "scoped chat chat", "scoped chat per-chat invocation", "tools A A", "tools 1", "tool name=1",
		"catch route=", "catch route=a/b.c-d_e", "rout", "ROUTE", "route\nroute x", "route a\r", "unknown x=y",
		"ai" + strings.Repeat(" x", 50), strings.Repeat("a", 300), "route " + strings.Repeat(`"`, 7),
		"route a " + strings.Repeat("=", 10), "user {{.x}}", "user `", "route -", "route a default=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		text := "//chat:" + input

		fset := token.NewFileSet()
		file := fset.AddFile("fuzz.go", -1, len(text)+1)
		var diags Diagnostics
		d, ok := parseDirective(fset, &ast.Comment{Slash: file.Pos(0), Text: text}, &diags)
		checkPositions(t, diags)
		switch {
		case !ok && (d != nil || len(diags) > 0):
			t.Errorf("ok = false with directive %v and diagnostics %v", d, diags)
		case ok && d == nil && !diags.hasErrors():
			t.Errorf("unknown directive in %q without an error", text)
		case ok && d != nil:
			checkDirective(t, fset, d, text)
		}
		compareWithParseArgs(t, input)
		for _, prefix := range []string{"// chat:", "//chat: ", "//+chat:", "//CHAT:", "//"} {
			c := prefix + input
			if nm, ok := nearMiss(c); ok {
				if _, known := lookupSpec(nm.name); !known || !strings.HasPrefix(c, nm.shown) || nm.reason == "" {
					t.Errorf("nearMiss(%q) = %+v", c, nm)
				}
			}
		}

		// The same comment on every kind of declaration, and its near
		// miss, which stands in for the directive it means.
		for _, prefix := range []string{"//chat:", "// chat:"} {
			checkCollect(t, prefix+input)
		}
	})
}

// checkCollect collects the comment text on every kind of declaration and
// checks what is kept.
func checkCollect(t *testing.T, text string) {
	t.Helper()
	src := "package p\n\n" + text + "\ntype T struct{}\n\ntype I interface {\n\t" + text + "\n\tM()\n}\n\n" +
		text + "\nfunc (T) M() {}\n\n" + text + "\nfunc F() {}\n\n" + text + "\nvar V int\n"
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, "fuzz.go", src, parser.ParseComments)
	if err != nil {
		return
	}
	var diags Diagnostics
	for _, a := range collect(fset, []*ast.File{af}, &diags) {
		if a.target == 0 || a.target&(a.target-1) != 0 || a.node == nil || len(a.directives) == 0 {
			t.Errorf("bad annotated %+v", a)
		}
		for _, d := range a.directives {
			dc := d.common()
			if dc.spec.Targets&a.target == 0 || dc.incomplete {
				t.Errorf("directive %s on %s (incomplete: %v)", d, a.target, dc.incomplete)
				continue
			}
			if dc.malformed {
				// Kept for the checks of its declaration, which
				// never generate: an error must have been reported.
				if !diags.hasErrors() {
					t.Errorf("malformed directive %s kept without an error", d)
				}
				checkRequired(t, d)
				continue
			}
			checkComplete(t, d)
		}
	}
	checkPositions(t, diags)
}

// checkPositions checks that every diagnostic has a file, line and column.
func checkPositions(t *testing.T, diags Diagnostics) {
	t.Helper()
	for _, d := range diags {
		ok := d.Pos.Filename != "" && d.Pos.Line > 0 && d.Pos.Column > 0 && d.Message != ""
		for _, r := range d.Related {
			ok = ok && r.Pos.Filename != "" && r.Pos.Line > 0 && r.Pos.Column > 0
		}
		if !ok {
			t.Errorf("diagnostic without a valid position: %+v", d)
		}
	}
}

// checkDirective checks that the positions of a parsed directive lie
// within its comment text, and that its free text comes from it.
func checkDirective(t *testing.T, fset *token.FileSet, d directive, text string) {
	t.Helper()
	within := func(what string, p token.Pos) {
		if pos := fset.Position(p); !pos.IsValid() || pos.Offset >= len(text) {
			t.Errorf("%s at %v, outside %q", what, pos, text)
		}
	}
	within("directive", d.common().pos)
	for _, f := range directiveFields(d) {
		if f.pos.IsValid() {
			within(f.name, f.pos)
		}
	}
	var free string
	switch d := d.(type) {
	case *systemDirective:
		free = d.text
	case *userDirective:
		free = d.text
	case *paramDirective:
		free = d.text
	}
	if !strings.Contains(text, free) {
		t.Errorf("text %q is not in %q", free, text)
	}
}

// checkRequired checks that a directive kept malformed has the required
// arguments that identify it.
func checkRequired(t *testing.T, d directive) {
	t.Helper()
	ok := true
	switch d := d.(type) {
	case *routeDirective:
		ok = d.name.value != ""
	case *toolsDirective:
		ok = len(d.types) > 0
	case *paramDirective:
		ok = d.param.value != ""
	case *eventDirective:
		ok = d.typ.value != ""
	}
	if !ok {
		t.Errorf("malformed directive %s lacks a required argument: %+v", d, d)
	}
}

// checkComplete checks that a well-formed directive has what its usage
// requires.
func checkComplete(t *testing.T, d directive) {
	t.Helper()
	ok := true
	switch d := d.(type) {
	case *routeDirective:
		ok = d.name.value != ""
	case *systemDirective:
		ok = (d.text == "") != (d.file.value == "")
	case *userDirective:
		ok = d.text != ""
	case *toolsDirective:
		ok = len(d.types) > 0
	case *paramDirective:
		ok = d.param.value != "" && d.text != ""
	case *eventDirective:
		ok = d.typ.value != ""
	}
	if !ok {
		t.Errorf("directive %s is incomplete: %+v", d, d)
	}
}
