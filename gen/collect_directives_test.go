package gen

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/tools/txtar"
)

func TestDirectiveTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range directiveTable {
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
				if k.Name == "" || k.Doc == "" || k.Kind == 0 || names[k.Name] || !looksLikeKey(k.Name+"=") {
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

// TestDirectiveTableSetters checks that every directive has its own typed
// value and that every argument, flag, key and text of the table reaches
// it: a directive with one more flag or key parses to a different value.
func TestDirectiveTableSetters(t *testing.T) {
	types := map[reflect.Type]string{}
	for _, s := range directiveTable {
		t.Run(s.Name, func(t *testing.T) {
			d := s.New()
			if d == nil || d == s.New() {
				t.Fatalf("New returns %v, not a fresh value", d)
			}
			if prev, dup := types[reflect.TypeOf(d)]; dup {
				t.Fatalf("//chat:%s and //chat:%s share the type %T", prev, s.Name, d)
			}
			types[reflect.TypeOf(d)] = s.Name
			if s.Text != (s.SetText != nil) {
				t.Fatalf("Text is %v but SetText is %v", s.Text, s.SetText != nil)
			}
			base := "//chat:" + s.Name
			for _, a := range s.Args {
				if a.Required {
					base += " Abc"
				}
			}
			if s.Text {
				base += " some text"
			}
			want := describe(parseValid(t, base))
			for _, a := range s.Args {
				if a.Required && !strings.Contains(want, `"Abc"`) {
					t.Errorf("%q: %s is not in %s", base, a.Name, want)
				}
				if a.Variadic {
					if got := describe(parseValid(t, base+" Def")); got == want || !strings.Contains(got, `"Def"`) {
						t.Errorf("%q + Def: %s", base, got)
					}
				}
			}
			if s.Text && !strings.Contains(want, `"some text"`) {
				t.Errorf("%q: the text is not in %s", base, want)
			}
			seen := map[string]string{}
			defaults := 0
			for _, f := range s.Flags {
				if f.Set == nil {
					t.Fatalf("flag %s has no Set", f.Name)
				}
				got := describe(parseValid(t, base+" "+f.Name))
				if prev, dup := seen[got]; dup {
					t.Errorf("flags %s and %s give the same value %s", prev, f.Name, got)
				}
				seen[got] = f.Name
				if got == want {
					defaults++ // only one of exclusive flags may name the default
					if !s.ExclusiveFlags || defaults > 1 {
						t.Errorf("flag %s does not reach the value", f.Name)
					}
				}
			}
			for _, k := range s.Keys {
				if k.Set == nil {
					t.Fatalf("key %s has no Set", k.Name)
				}
				value := map[keyKind]string{keyList: "a,b", keyPath: "a.txt", keyDuration: "5s", keyCount: "3"}[k.Kind]
				if value == "" {
					value = "Abc"
				}
				line := base + " " + k.Name + "=" + value
				if s.Text {
					line = "//chat:" + s.Name + " " + k.Name + "=" + value // TEXT or the key
				}
				if got := describe(parseValid(t, line)); got == want {
					t.Errorf("key %s does not reach the value: %s", k.Name, got)
				}
			}
		})
	}
}

// parseValid parses a directive that must be valid.
func parseValid(t *testing.T, text string) (*token.FileSet, directive) {
	t.Helper()
	fset, d, ok, diags := parseLine(t, text)
	if !ok || d == nil || len(diags) > 0 {
		t.Fatalf("%q: %v, %v", text, ok, diags)
	}
	return fset, d
}

// TestDirectiveExamples checks that every example is valid by the rules it
// documents: it parses and collects without a diagnostic.
func TestDirectiveExamples(t *testing.T) {
	for _, s := range directiveTable {
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
				for _, d := range a.directives {
					found = found || d.common().spec.Name == s.Name
				}
			}
			if !found {
				t.Errorf("example has no //chat:%s attached to a declaration", s.Name)
			}
		})
	}
}

func TestTargetString(t *testing.T) {
	tests := []struct {
		t           target
		one, plural string
		withArticle string
	}{
		{targetStruct, "struct type", "struct types", "a struct type"},
		{targetInterface, "interface type", "interface types", "an interface type"},
		{targetOtherType, "non-struct, non-interface type", "other types", "a non-struct, non-interface type"},
		{targetMethod, "method", "methods", "a method"},
		{targetInterfaceMethod, "interface method", "interface methods", "an interface method"},
		{targetFunc, "func", "funcs", "a func"},
		{targetStruct | targetInterface | targetMethod, "struct type, interface type or method",
			"struct types, interface types or methods", "a struct type, interface type or method"},
		{targetStruct | targetInterface | targetOtherType | targetFunc, "type or func", "types or funcs", "a type or func"},
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
	for _, s := range directiveTable {
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
	got := directivesMarkdown()
	if !bytes.Equal(got, directivesMarkdown()) {
		t.Fatal("directivesMarkdown is not deterministic")
	}
	for _, s := range directiveTable {
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

// TestDirectiveDocAccessor checks the accessor signature the //chat:scoped
// documentation shows against the one the generator writes (golden case
// scoped_chat).
func TestDirectiveDocAccessor(t *testing.T) {
	spec, _ := lookupSpec("scoped")
	m := regexp.MustCompile("`(\\w+)From\\(ctx\\) ([^`]+)`").FindStringSubmatch(spec.Doc)
	if m == nil {
		t.Fatal("the //chat:scoped doc shows no accessor XFrom(ctx) ...")
	}
	a, err := txtar.ParseFile(filepath.Join(goldenDir, "scoped_chat.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	want := "func " + m[1] + "From(ctx context.Context) " + m[2] + " {"
	for _, f := range a.Files {
		if f.Name == "want/"+outputName && bytes.Contains(f.Data, []byte("\n"+want+"\n")) {
			return
		}
	}
	t.Errorf("the doc shows %q, but the golden output of scoped_chat has no %q", m[0], want)
}
