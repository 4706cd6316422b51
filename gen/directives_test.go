package gen

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirectiveTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range DirectiveSpecs() {
		t.Run(s.Name, func(t *testing.T) {
			if s.Name == "" || seen[s.Name] {
				t.Fatalf("empty or duplicate name %q", s.Name)
			}
			seen[s.Name] = true
			if s.Usage != "//chat:"+s.Name && !strings.HasPrefix(s.Usage, "//chat:"+s.Name+" ") {
				t.Errorf("Usage %q does not start with //chat:%s", s.Usage, s.Name)
			}
			if s.Doc == "" || s.Example == "" || s.Quarkus == "" {
				t.Errorf("Doc, Example and Quarkus must be set")
			}
			if s.Targets == 0 {
				t.Errorf("no Targets")
			}
			if sum := summary(s.Doc); len(plainText(sum)) > 100 || !strings.HasSuffix(sum, ".") {
				t.Errorf("summary %q: want one sentence of at most 100 characters", sum)
			}
			if !strings.Contains(s.Example, "//chat:"+s.Name) {
				t.Errorf("Example does not show //chat:%s", s.Name)
			}
			if s.Text && s.TextDoc == "" {
				t.Errorf("Text directive without TextDoc")
			}
			for i, a := range s.Args {
				if a.Name == "" || a.Doc == "" || strings.ToUpper(a.Name) != a.Name {
					t.Errorf("arg %d: want an upper-case Name and a Doc: %+v", i, a)
				}
				if a.Variadic && (i != len(s.Args)-1 || s.Text) {
					t.Errorf("arg %s: only the last argument of a non-Text directive may be variadic", a.Name)
				}
				if !strings.Contains(s.Usage, a.Name) {
					t.Errorf("Usage %q does not show %s", s.Usage, a.Name)
				}
			}
			names := map[string]bool{}
			for _, f := range s.Flags {
				if f.Name == "" || f.Doc == "" || names[f.Name] || strings.Contains(f.Name, "=") {
					t.Errorf("bad flag %+v", f)
				}
				names[f.Name] = true
				if !strings.Contains(s.Usage, f.Name) {
					t.Errorf("Usage %q does not show flag %s", s.Usage, f.Name)
				}
			}
			for _, k := range s.Keys {
				if k.Name == "" || k.Doc == "" || names[k.Name] || !looksLikeKey(k.Name+"=") {
					t.Errorf("bad key %+v", k)
				}
				names[k.Name] = true
				if !strings.Contains(s.Usage, k.Name+"="+keyPlaceholder(k)) {
					t.Errorf("Usage %q does not show %s=%s", s.Usage, k.Name, keyPlaceholder(k))
				}
			}
			if p, ok := lookupSpec(s.Name); !ok || p.Name != s.Name {
				t.Errorf("lookupSpec(%q) = %v, %v", s.Name, p, ok)
			}
		})
	}
	if _, ok := lookupSpec("nope"); ok {
		t.Errorf("lookupSpec(nope) found a spec")
	}
}

// TestDirectiveExamples checks that every example is valid by the rules it
// documents: it parses and collects without a diagnostic.
func TestDirectiveExamples(t *testing.T) {
	for _, s := range DirectiveSpecs() {
		t.Run(s.Name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "example.go", "package p\n\n"+s.Example+"\n", parser.ParseComments)
			if err != nil {
				t.Fatalf("example does not parse: %v", err)
			}
			var diags Diagnostics
			anns := collect(fset, []*ast.File{f}, &diags)
			for _, d := range diags {
				t.Errorf("%s", d.Format(""))
			}
			found := false
			for _, a := range anns {
				found = found || len(a.Lookup(s.Name)) > 0
			}
			if !found {
				t.Errorf("example has no //chat:%s attached to a declaration", s.Name)
			}
		})
	}
}

func TestDirectiveSpecsIsACopy(t *testing.T) {
	specs := DirectiveSpecs()
	specs[0].Name = "changed"
	specs[2].Args[0].Name = "changed"
	specs[2].Keys[0].Name = "changed"
	specs[0].Flags[0].Name = "changed"
	again := DirectiveSpecs()
	if again[0].Name == "changed" || again[2].Args[0].Name == "changed" ||
		again[2].Keys[0].Name == "changed" || again[0].Flags[0].Name == "changed" {
		t.Fatal("DirectiveSpecs shares memory with the table")
	}
}

func TestTargetString(t *testing.T) {
	tests := []struct {
		t           Target
		one, plural string
		withArticle string
	}{
		{TargetStruct, "struct type", "struct types", "a struct type"},
		{TargetInterface, "interface type", "interface types", "an interface type"},
		{TargetOtherType, "non-struct, non-interface type", "other types", "a non-struct, non-interface type"},
		{TargetMethod, "method", "methods", "a method"},
		{TargetInterfaceMethod, "interface method", "interface methods", "an interface method"},
		{TargetFunc, "func", "funcs", "a func"},
		{TargetStruct | TargetInterface | TargetMethod, "struct type, interface type or method",
			"struct types, interface types or methods", "a struct type, interface type or method"},
		{TargetStruct | TargetInterface | TargetOtherType | TargetFunc, "type or func", "types or funcs", "a type or func"},
		{0, "nothing", "nothing", "a nothing"},
	}
	for _, tt := range tests {
		if got := tt.t.String(); got != tt.one {
			t.Errorf("%#x.String() = %q, want %q", uint16(tt.t), got, tt.one)
		}
		if got := tt.t.plural(); got != tt.plural {
			t.Errorf("%#x.plural() = %q, want %q", uint16(tt.t), got, tt.plural)
		}
		if got := tt.t.withArticle(); got != tt.withArticle {
			t.Errorf("%#x.withArticle() = %q, want %q", uint16(tt.t), got, tt.withArticle)
		}
	}
}

func TestDirectivesHelp(t *testing.T) {
	help := DirectivesHelp()
	if strings.Contains(help, "`") {
		t.Errorf("help contains Markdown quotes:\n%s", help)
	}
	lines := strings.Split(strings.TrimSuffix(help, "\n"), "\n")
	col := -1
	for _, s := range DirectiveSpecs() {
		i := strings.Index(help, "  "+s.Usage+" ")
		if i < 0 {
			t.Errorf("help lacks usage %q", s.Usage)
			continue
		}
		if !strings.Contains(help, plainText(summary(s.Doc))) {
			t.Errorf("help lacks the summary of //chat:%s", s.Name)
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "  "+s.Usage+" ") {
				c := strings.Index(l, "  on ") + 2
				if col >= 0 && c != col {
					t.Errorf("targets of //chat:%s at column %d, others at %d", s.Name, c, col)
				}
				col = c
				if !strings.HasSuffix(l, "on "+s.Targets.plural()) {
					t.Errorf("line %q does not end with the targets", l)
				}
			}
		}
	}
	if DirectivesHelp() != help {
		t.Error("DirectivesHelp is not deterministic")
	}
}

func TestDirectivesDoc(t *testing.T) {
	path := filepath.Join("..", "docs", "directives.md")
	got := DirectivesMarkdown()
	if !bytes.Equal(got, DirectivesMarkdown()) {
		t.Fatal("DirectivesMarkdown is not deterministic")
	}
	for _, s := range DirectiveSpecs() {
		for _, want := range []string{"## `//chat:" + s.Name + "`", s.Usage, s.Doc, s.Example, "(#chat" + s.Name + ")"} {
			if !bytes.Contains(got, []byte(want)) {
				t.Errorf("markdown lacks %q", want)
			}
		}
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(want, got) {
		t.Fatalf("docs/directives.md is out of date; run: go test ./gen -run TestDirectivesDoc -update")
	}
}
