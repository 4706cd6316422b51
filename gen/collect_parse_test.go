package gen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// parseLine parses text as the only comment of a small file, on line 1, and
// runs parseDirective on it.
func parseLine(t *testing.T, text string) (fset *token.FileSet, d directive, ok bool, diags []string) {
	t.Helper()
	fset = token.NewFileSet()
	f, err := parser.ParseFile(fset, "a.go", text+"\npackage p\n", parser.ParseComments)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	if len(f.Comments) != 1 || len(f.Comments[0].List) != 1 {
		t.Fatalf("want one comment in %q", text)
	}
	var ds Diagnostics
	d, ok = parseDirective(fset, f.Comments[0].List[0], &ds)
	return fset, d, ok, diagStrings(ds)
}

// diagStrings formats diagnostics as "line:col: message", with related
// positions on tab-indented lines.
func diagStrings(ds Diagnostics) []string {
	var out []string
	for _, d := range ds.sorted() {
		s := fmt.Sprintf("%d:%d: ", d.Pos.Line, d.Pos.Column)
		if d.Pos.Filename != "a.go" {
			s = fmt.Sprintf("%s:%s", d.Pos.Filename, s)
		}
		if d.Severity == Warning {
			s += "warning: "
		}
		s += d.Message
		for _, r := range d.Related {
			s += fmt.Sprintf("\n\t%d:%d: %s", r.Pos.Line, r.Pos.Column, r.Message)
		}
		out = append(out, s)
	}
	return out
}

// describe renders a directive compactly: its name, then each field set,
// with the column of the values that keep their position.
func describe(fset *token.FileSet, d directive) string {
	col := func(p token.Pos) int { return fset.Position(p).Column }
	parts := []string{fmt.Sprintf("%s@%d", d.common().spec.Name, col(d.common().pos))}
	for _, f := range directiveFields(d) {
		s := f.name + "=" + f.text
		if f.pos.IsValid() {
			s += fmt.Sprintf("@%d", col(f.pos))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

// directiveField is one field of a typed directive, for tests.
type directiveField struct {
	name string    // the Go field name
	text string    // the value: Go-quoted strings, true, a list or a kind
	pos  token.Pos // the position of an arg value; NoPos for the others
}

// directiveFields lists the fields of d that are set, in declaration order;
// an []arg field gives one entry per element.
func directiveFields(d directive) []directiveField {
	v := reflect.ValueOf(d).Elem()
	var out []directiveField
	for i := range v.NumField() {
		f, sf := v.Field(i), v.Type().Field(i)
		if sf.Anonymous || f.IsZero() {
			continue
		}
		argField := func(a reflect.Value) directiveField {
			return directiveField{name: sf.Name, text: strconv.Quote(a.FieldByName("value").String()), pos: token.Pos(a.FieldByName("pos").Int())}
		}
		switch {
		case sf.Type == reflect.TypeFor[arg]():
			out = append(out, argField(f))
		case sf.Type == reflect.TypeFor[[]arg]():
			for j := range f.Len() {
				out = append(out, argField(f.Index(j)))
			}
		case sf.Type == reflect.TypeFor[time.Duration]():
			out = append(out, directiveField{name: sf.Name, text: time.Duration(f.Int()).String()})
		case sf.Type == reflect.TypeFor[beanKind]():
			out = append(out, directiveField{name: sf.Name, text: beanKind(f.Uint()).ident()})
		case sf.Type == reflect.TypeFor[[]string]():
			var elems []string
			for j := range f.Len() {
				elems = append(elems, strconv.Quote(f.Index(j).String()))
			}
			out = append(out, directiveField{name: sf.Name, text: "[" + strings.Join(elems, " ") + "]"})
		case f.Kind() == reflect.String:
			out = append(out, directiveField{name: sf.Name, text: strconv.Quote(f.String())})
		case f.Kind() == reflect.Bool:
			out = append(out, directiveField{name: sf.Name, text: "true"})
		case f.Kind() == reflect.Int:
			out = append(out, directiveField{name: sf.Name, text: strconv.FormatInt(f.Int(), 10)})
		default:
			panic(fmt.Sprintf("directiveFields: field %s of %T has an unexpected type", sf.Name, d))
		}
	}
	return out
}

func TestParseDirectiveValid(t *testing.T) {
	tests := []struct {
		text string
		want string
	}{
		{"//chat:scoped", "scoped@1"},
		{"//chat:scoped per-chat", `scoped@1 kind=KindPerChat`},
		{"//chat:scoped   invocation  ", `scoped@1 kind=KindInvocation`},
		{"//chat:scoped durable", `scoped@1 durable=true`},
		{"//chat:scoped durable per-chat", `scoped@1 kind=KindPerChat durable=true`},
		{"//chat:ai", "ai@1"},
		{"//chat:route menu", `route@1 name="menu"@14`},
		{"//chat:route\tmenu", `route@1 name="menu"@14`},
		{"//chat:route menu default roles=a,b user=text",
			`route@1 name="menu"@14 isDefault=true roles=["a" "b"] user="text"@42`},
		{"//chat:route default menu", `route@1 name="menu"@22 isDefault=true`},
		{`//chat:route menu roles="admin, ops"`, `route@1 name="menu"@14 roles=["admin" "ops"]`},
		{"//chat:route menu roles=`a,b`", `route@1 name="menu"@14 roles=["a" "b"]`},
		{`//chat:route "main/menu.v2"`, `route@1 name="main/menu.v2"@14`},
		{"//chat:route 菜单", `route@1 name="菜单"@14`},
		{"//chat:system You are a {{.kind}} smith: \"quoted\" `raw` a=b  ", "system@1 text=\"You are a {{.kind}} smith: \\\"quoted\\\" `raw` a=b\""},
		{"//chat:system \"unbalanced", `system@1 text="\"unbalanced"`},
		{"//chat:system file=prompts/a.txt", `system@1 file="prompts/a.txt"@20`},
		{`//chat:system file="my prompts/a.txt"`, `system@1 file="my prompts/a.txt"@20`},
		{"//chat:system tone=friendly and warm", `system@1 text="tone=friendly and warm"`},
		{"//chat:system a=b", `system@1 text="a=b"`},
		{"//chat:system x=\"unbalanced", `system@1 text="x=\"unbalanced"`},
		{"//chat:user Invent a name for a {{.kind}}.", `user@1 text="Invent a name for a {{.kind}}."`},
		{"//chat:user file=x.txt", `user@1 text="file=x.txt"`},
		{"//chat:param size the size, in cm", `param@1 param="size"@14 text="the size, in cm"`},
		{"//chat:param size   spaced  out ", `param@1 param="size"@14 text="spaced  out"`},
		{"//chat:tools Forge", `tools@1 types="Forge"@14`},
		{"//chat:tools Forge Inventory _x", `tools@1 types="Forge"@14 types="Inventory"@20 types="_x"@30`},
		{"//chat:tool", "tool@1"},
		{"//chat:tool immediate name=set_material", `tool@1 immediate=true name="set_material"`},
		{"//chat:tool timeout=1m30s immediate", `tool@1 immediate=true timeout=1m30s`},
		{"//chat:event BuildProgress", `event@1 typ="BuildProgress"@14`},
		{`//chat:event "weapon updated"`, `event@1 typ="weapon updated"@14`},
		{"//chat:event `raw`", `event@1 typ="raw"@14`},
		{"//chat:event événement", `event@1 typ="événement"@14`},
		{"//chat:catch", "catch@1"},
		{"//chat:catch route=build", `catch@1 route="build"@20`},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			fset, d, ok, diags := parseLine(t, tt.text)
			if !ok {
				t.Fatalf("ok = false")
			}
			if len(diags) > 0 {
				t.Fatalf("unexpected diagnostics:\n%s", strings.Join(diags, "\n"))
			}
			if got := describe(fset, d); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseDirectiveNotOurs(t *testing.T) {
	for _, text := range []string{
		"// plain prose",
		"//go:generate chatgen",
		"// chat:route menu",
		"//chat: route menu",
		"//Chat:route menu",
		"//chat:Route menu",
		"//+chat:route menu",
		"//chatty:route menu",
		"//chat:",
		"/* chat:route menu */",
		"/*chat:route menu*/",
	} {
		t.Run(text, func(t *testing.T) {
			_, d, ok, diags := parseLine(t, text)
			if ok || d != nil || len(diags) > 0 {
				t.Errorf("got %v, %v, %q; want nil, false and no diagnostics", d, ok, diags)
			}
		})
	}
}

func TestParseDirectiveErrors(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		// Names.
		{"//chat:rout menu", []string{"1:1: unknown directive //chat:rout; did you mean //chat:route?"}},
		{"//chat:routes menu", []string{"1:1: unknown directive //chat:routes; did you mean //chat:route?"}},
		{"//chat:rOUTE menu", []string{"1:1: unknown directive //chat:rOUTE; did you mean //chat:route?"}},
		{"//chat:sys hi", []string{"1:1: unknown directive //chat:sys; did you mean //chat:system?"}},
		{"//chat:scope", []string{"1:1: unknown directive //chat:scope; did you mean //chat:scoped?"}},
		{"//chat:aiservice", []string{"1:1: unknown directive //chat:aiservice; did you mean //chat:ai?"}},
		{"//chat:frobnicate x", []string{"1:1: unknown directive //chat:frobnicate"}},

		// Keys and flags.
		{"//chat:route menu rols=a", []string{`1:19: unknown key "rols" for //chat:route; did you mean "roles"?`}},
		{"//chat:route menu colour=red", []string{`1:19: unknown key "colour" for //chat:route`}},
		{"//chat:route menu defualt", []string{`1:19: unexpected argument "defualt" for //chat:route; did you mean "default"?`}},
		{"//chat:route menu roles", []string{`1:19: unexpected argument "roles" for //chat:route; did you mean "roles=a,b"?`}},
		{"//chat:route menu extra", []string{`1:19: unexpected argument "extra" for //chat:route; usage: //chat:route NAME [default] [roles=a,b] [user=PARAM]`}},
		{`//chat:route menu "default"`, []string{`1:19: unexpected argument "default" for //chat:route; usage: //chat:route NAME [default] [roles=a,b] [user=PARAM]`}},
		{"//chat:ai now", []string{`1:11: unexpected argument "now" for //chat:ai; usage: //chat:ai`}},
		{"//chat:ai x=y", []string{`1:11: unknown key "x" for //chat:ai`}},
		{"//chat:scoped perchat", []string{`1:15: unexpected argument "perchat" for //chat:scoped; did you mean "per-chat"?`}},
		{"//chat:route menu default default", []string{`1:27: duplicate flag "default" in //chat:route`}},
		{"//chat:route menu roles=a roles=b", []string{`1:27: duplicate key "roles" in //chat:route`}},
		{"//chat:scoped chat invocation", []string{"1:20: //chat:scoped takes at most one of chat, per-chat, invocation"}},
		{"//chat:scoped per-chat chat per-chat", []string{
			"1:24: //chat:scoped takes at most one of chat, per-chat, invocation",
			`1:29: duplicate flag "per-chat" in //chat:scoped`,
		}},
		{"//chat:scoped durable chat invocation", []string{"1:28: //chat:scoped takes at most one of chat, per-chat, invocation"}},
		{"//chat:scoped durable chat durable", []string{`1:28: duplicate flag "durable" in //chat:scoped`}},
		{"//chat:route menu =x", []string{`1:19: missing key before "=" in //chat:route`}},
		{`//chat:route menu ="x"`, []string{`1:19: missing key before "=" in //chat:route`}},

		// Positional arguments.
		{"//chat:route", []string{"1:1: //chat:route needs a NAME"}},
		{"//chat:route default", []string{"1:1: //chat:route needs a NAME"}},
		{"//chat:route roles=a", []string{"1:1: //chat:route needs a NAME"}},
		{`//chat:route "main menu"`, []string{`1:14: invalid NAME "main menu" for //chat:route: use only letters, digits, '-', '_', '.' and '/'`}},
		{`//chat:route menu!`, []string{`1:14: invalid NAME "menu!" for //chat:route: use only letters, digits, '-', '_', '.' and '/'`}},
		{`//chat:route ""`, []string{`1:14: empty NAME for //chat:route`}},
		{"//chat:tools", []string{"1:1: //chat:tools needs a TYPE"}},
		{"//chat:tools Forge 1Box", []string{`1:20: invalid TYPE "1Box" for //chat:tools: not a Go identifier`}},
		{"//chat:tools Forge func", []string{`1:20: invalid TYPE "func" for //chat:tools: not a Go identifier`}},
		{"//chat:tools Forge Forge", []string{`1:20: duplicate TYPE "Forge" in //chat:tools`}},
		{"//chat:tools Forge a=b", []string{`1:20: unknown key "a" for //chat:tools`}},
		{"//chat:event", []string{"1:1: //chat:event needs a TYPE"}},
		{`//chat:event ""`, []string{"1:14: empty TYPE for //chat:event"}},
		{`//chat:event A B`, []string{`1:16: unexpected argument "B" for //chat:event; usage: //chat:event TYPE`}},

		// Values.
		{"//chat:route menu roles=", []string{`1:25: empty value for key "roles" in //chat:route`}},
		{`//chat:route menu roles=""`, []string{`1:25: empty value for key "roles" in //chat:route`}},
		{"//chat:route menu roles=a,,b", []string{`1:25: empty element in roles list "a,,b" in //chat:route`}},
		{"//chat:route menu roles=a,", []string{`1:25: empty element in roles list "a," in //chat:route`}},
		{`//chat:route menu roles="a b"`, []string{`1:25: invalid element "a b" in roles list in //chat:route: no spaces allowed`}},
		{"//chat:route menu user=1x", []string{`1:24: invalid value "1x" for key "user" in //chat:route: not a Go identifier`}},
		{"//chat:tool name=set-material", []string{`1:18: invalid value "set-material" for key "name" in //chat:tool: not a Go identifier`}},
		{"//chat:tool timeout=soon", []string{`1:21: invalid value "soon" for key "timeout" in //chat:tool: not a duration; write one such as 10s, 1m30s or 500ms`}},
		{"//chat:tool timeout=-1s", []string{`1:21: invalid value "-1s" for key "timeout" in //chat:tool: the duration must be positive`}},
		{`//chat:catch route="a b"`, []string{`1:20: invalid value "a b" for key "route" in //chat:catch: use only letters, digits, '-', '_', '.' and '/'`}},
		{"//chat:catch route=", []string{`1:20: empty value for key "route" in //chat:catch`}},

		// Quoting.
		{`//chat:event "unterminated`, []string{`1:14: invalid quoted string in //chat:event: "unterminated`}},
		{`//chat:event "a"b`, []string{`1:14: invalid quoted string in //chat:event: "a"b`}},
		{"//chat:event `raw", []string{"1:14: invalid quoted string in //chat:event: `raw"}},
		{`//chat:event "bad \q escape"`, []string{`1:14: invalid quoted string in //chat:event: "bad \q escape"`}},
		{`//chat:route menu roles="a,b`, []string{`1:25: invalid quoted string in //chat:route: "a,b`}},
		{`//chat:route menu roles="a"b`, []string{`1:25: invalid quoted string in //chat:route: "a"b`}},
		{`//chat:route "menu`, []string{`1:14: invalid quoted string in //chat:route: "menu`}},

		// Text directives.
		{"//chat:system", []string{"1:1: //chat:system needs TEXT or file=PATH"}},
		{"//chat:system   ", []string{"1:1: //chat:system needs TEXT or file=PATH"}},
		{"//chat:user", []string{"1:1: //chat:user needs TEXT"}},
		{"//chat:param", []string{"1:1: //chat:param needs a NAME"}},
		{"//chat:param size", []string{"1:1: //chat:param needs TEXT after NAME"}},
		{"//chat:param 9size the size", []string{`1:14: invalid NAME "9size" for //chat:param: not a Go identifier`}},
		{`//chat:param "size the size`, []string{`1:14: invalid quoted string in //chat:param: "size the size`}},
		{"//chat:system file=a.txt and more", []string{"1:15: //chat:system takes either TEXT or file=PATH, not both"}},
		{"//chat:system fil=a.txt", []string{`1:15: unknown key "fil" for //chat:system; did you mean "file"?`}},
		{"//chat:system file=", []string{`1:20: empty value for key "file" in //chat:system`}},
		{`//chat:system file="a.txt`, []string{`1:20: invalid quoted string in //chat:system: "a.txt`}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			_, _, ok, diags := parseLine(t, tt.text)
			if !ok {
				t.Fatalf("ok = false, want a directive")
			}
			if !slices.Equal(diags, tt.want) {
				t.Errorf("got:\n\t%s\nwant:\n\t%s", strings.Join(diags, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
		})
	}
}

func TestParseDirectiveUnknownIsNil(t *testing.T) {
	_, d, ok, diags := parseLine(t, "//chat:rout menu")
	if !ok || d != nil || len(diags) != 1 {
		t.Fatalf("got %+v, %v, %q", d, ok, diags)
	}
}

func TestTypedDirectives(t *testing.T) {
	_, d, _, diags := parseLine(t, `//chat:route menu default roles=" a , b "`)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	r, ok := d.(*routeDirective)
	if !ok || r.name.value != "menu" || !r.isDefault || !slices.Equal(r.roles, []string{"a", "b"}) || r.user != (arg{}) {
		t.Errorf("got %T %+v", d, d)
	}
	if d.String() != "//chat:route" || d.common().spec.Name != "route" {
		t.Errorf("String() = %q, spec %q", d.String(), d.common().spec.Name)
	}
	_, d, _, _ = parseLine(t, "//chat:tools A B")
	if tools, ok := d.(*toolsDirective); !ok || len(tools.types) != 2 || tools.types[0].value != "A" || tools.types[1].value != "B" {
		t.Errorf("got %T %+v", d, d)
	}
	_, d, _, _ = parseLine(t, "//chat:scoped invocation")
	if sc, ok := d.(*scopedDirective); !ok || sc.kind != kindInvocation {
		t.Errorf("got %T %+v", d, d)
	}
}

// TestParseDirectiveSynthesized checks comments that a parser never makes:
// several lines, and no position.
func TestParseDirectiveSynthesized(t *testing.T) {
	fset := token.NewFileSet()
	var diags Diagnostics
	d, ok := parseDirective(fset, &ast.Comment{Text: "//chat:route menu\nextra"}, &diags)
	if r, isRoute := d.(*routeDirective); !ok || !isRoute || r.name.value != "menu" || r.malformed || len(diags) != 0 {
		t.Errorf("got %+v, %v, %v", d, ok, diags)
	}
	d, ok = parseDirective(fset, &ast.Comment{Text: "//chat:route"}, &diags)
	if !ok || d == nil || !d.common().malformed || len(diags) != 1 {
		t.Errorf("got %+v, %v, %v", d, ok, diags)
	}
}

func TestArgScannerMatchesParseArgs(t *testing.T) {
	for _, args := range []string{
		"", "a", "a b  c", `"x y" z`, "`raw str` b", `"unterminated`, `"a"b`, "a\u00a0b", `a"b c"`,
		`"\u00e9" \x`, "é ü", "`a\"b` \"c`d\"",
	} {
		compareWithParseArgs(t, args)
	}
}

// compareWithParseArgs checks that argScanner splits the arguments of
// "//chat:x ARGS" as ast.Directive.ParseArgs does, when they hold no "=".
func compareWithParseArgs(t *testing.T, args string) {
	t.Helper()
	pd, ok := ast.ParseDirective(1, "//chat:x "+args)
	if !ok || strings.Contains(pd.Args, "=") {
		return
	}
	want, wantErr := pd.ParseArgs()
	sc := &argScanner{str: pd.Args, pos: pd.ArgsPos}
	var got []ast.DirectiveArg
	var gotErr error
	for sc.skipSpace(); !sc.done(); sc.skipSpace() {
		tok, err := sc.next()
		if err != nil {
			gotErr = err
			break
		}
		got = append(got, ast.DirectiveArg{Arg: tok.value, Pos: tok.pos})
	}
	if (gotErr != nil) != (wantErr != nil) || wantErr == nil && !slices.Equal(got, want) {
		t.Errorf("args %q: argScanner gave %v, %v; ParseArgs gave %v, %v", args, got, gotErr, want, wantErr)
	}
}
