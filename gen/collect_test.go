package gen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strings"
	"testing"
)

// collectSources parses the named sources (name, source, name, source...)
// and collects their directives.
func collectSources(t *testing.T, namesAndSources ...string) ([]*annotated, []string) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for i := 0; i < len(namesAndSources); i += 2 {
		f, err := parser.ParseFile(fset, namesAndSources[i], namesAndSources[i+1], parser.ParseComments)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		files = append(files, f)
	}
	var diags Diagnostics
	anns := collect(fset, files, &diags)
	return anns, diagStrings(diags)
}

// summarize renders annotated declarations as "target Recv.Name: directives".
func summarize(anns []*annotated) []string {
	var out []string
	for _, a := range anns {
		name := a.name
		if a.recv != "" {
			name = a.recv + "." + name
		}
		var ds []string
		for _, d := range a.directives {
			ds = append(ds, d.common().spec.Name)
		}
		out = append(out, fmt.Sprintf("%s %s: %s", a.target, name, strings.Join(ds, " ")))
	}
	return out
}

func TestCollect(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		want  []string // summaries
		diags []string
	}{
		{
			name: "targets",
			src: `package p

// Counter counts.
//
//chat:scoped
type Counter struct{ n int }

// Smith is an AI service.
//
//chat:ai
//chat:system You are a smith.
//chat:system Be brief.
//chat:tools Forge
type Smith interface {
	// Ask asks.
	//
	//chat:route ask default
	//chat:user {{.q}}
	Ask(q string) string

	// Plain has no directive.
	Plain()
}

// Kind is an event type.
//
//chat:event weapon-kind
type Kind string

// Forge is a tool box.
type Forge struct{}

// Heat heats.
//
//chat:tool immediate
//chat:param degrees how hot
//chat:param minutes how long
func (f *Forge) Heat(degrees, minutes int) {}

// Menu is a route func.
//
//chat:route menu
//chat:event MenuShown
func Menu() string { return "" }

// Oops handles errors.
//
//chat:catch route=menu
func Oops(err error) string { return "" }

// Stack is generic.
type Stack[T any] struct{}

// Push pushes.
//
//chat:route push
func (s *Stack[T]) Push(v T) {}

// Pair is generic.
type Pair[K, V any] struct{}

// Get gets.
//
//chat:route get
func (p Pair[K, V]) Get() {}
`,
			want: []string{
				"struct type Counter: scoped",
				"interface type Smith: ai system system tools",
				"interface method Smith.Ask: route user",
				"non-struct, non-interface type Kind: event",
				"method Forge.Heat: tool param param",
				"func Menu: route event",
				"func Oops: catch",
				"method Stack.Push: route",
				"method Pair.Get: route",
			},
		},
		{
			name: "wrong targets",
			src: `package p

//chat:tool
type I interface{}

//chat:ai
//chat:scoped
type S struct{}

//chat:scoped
type N string

//chat:catch
func (S) M() {}

//chat:user hello
func F() {}

type J interface {
	//chat:tool
	//chat:scoped
	M()
}
`,
			want: []string{"struct type S: scoped"},
			diags: []string{
				"3:1: //chat:tool cannot annotate an interface type; it applies to methods",
				"6:1: //chat:ai cannot annotate a struct type; it applies to interface types",
				"10:1: //chat:scoped cannot annotate a non-struct, non-interface type; it applies to struct types or interface types",
				"13:1: //chat:catch cannot annotate a method; it applies to funcs",
				"16:1: //chat:user cannot annotate a func; it applies to interface methods",
				"20:2: //chat:tool cannot annotate an interface method; it applies to methods",
				"21:2: //chat:scoped cannot annotate an interface method; it applies to struct types or interface types",
			},
		},
		{
			name: "duplicates",
			src: `package p

type S struct{}

//chat:route a
//chat:route b
//chat:tool
//chat:tool immediate
//chat:param x first
//chat:param y second
//chat:param x again
func (S) M(x, y int) {}

//chat:scoped
//chat:scoped per-chat
type T struct{}

//chat:ai
//chat:system one
//chat:system two
type A interface {
	//chat:user one
	//chat:user two
	//chat:route r
	//chat:route r
	M()
}
`,
			want: []string{
				"method S.M: route tool param param",
				"struct type T: scoped",
				"interface type A: ai system system",
				"interface method A.M: user user route",
			},
			diags: []string{
				"6:1: duplicate //chat:route\n\t5:1: previous //chat:route here",
				"8:1: duplicate //chat:tool\n\t7:1: previous //chat:tool here",
				"11:1: duplicate //chat:param x\n\t9:1: previous //chat:param x here",
				"15:1: duplicate //chat:scoped\n\t14:1: previous //chat:scoped here",
				"25:2: duplicate //chat:route\n\t24:2: previous //chat:route here",
			},
		},
		{
			name: "not attached",
			src: `package p

//chat:scoped

type S struct {
	// F is a field.
	//
	//chat:route f
	F int
	G int //chat:ai
}

//chat:route v
var V = 1

type T struct{} //chat:scoped

// Grouped declarations document their specs one by one.
//
//chat:scoped
type (
	A struct{}
	B struct{}
)

func F() {
	//chat:route inner
	x := 1
	_ = x

	// Local is local.
	//
	//chat:scoped
	type Local struct{}
}

type I interface {
	// Embedded interfaces are not methods.
	//
	//chat:route e
	fmt.Stringer
}

//chat:rout typo

//chat:route
`,
			diags: []string{
				"3:1: //chat:scoped is not attached to a declaration it can annotate; put it at the end of the doc comment of a struct type or interface type",
				"8:2: //chat:route is not attached to a declaration it can annotate; put it at the end of the doc comment of a method, interface method or func",
				"10:8: //chat:ai is not attached to a declaration it can annotate; put it at the end of the doc comment of an interface type",
				"13:1: //chat:route is not attached to a declaration it can annotate; put it at the end of the doc comment of a method, interface method or func",
				"16:17: //chat:scoped is not attached to a declaration it can annotate; put it at the end of the doc comment of a struct type or interface type",
				"20:1: //chat:scoped is not attached to a declaration it can annotate; put it at the end of the doc comment of a struct type or interface type",
				"27:2: //chat:route is not attached to a declaration it can annotate; put it at the end of the doc comment of a method, interface method or func",
				"33:2: //chat:scoped is not attached to a declaration it can annotate; put it at the end of the doc comment of a struct type or interface type",
				"40:2: //chat:route is not attached to a declaration it can annotate; put it at the end of the doc comment of a method, interface method or func",
				"44:1: unknown directive //chat:rout; did you mean //chat:route?",
				"46:1: //chat:route is not attached to a declaration it can annotate; put it at the end of the doc comment of a method, interface method or func",
				"46:1: //chat:route needs a NAME",
			},
		},
		{
			name: "near misses are reported and stand in for the directive they mean",
			src: `package p

// S is a bean.
//
// chat:scoped
type S struct{}

//chat: route menu
func A() {}

//Chat:route menu
func B() {}

//CHAT:route menu
func C() {}

//+chat:route menu
func D() {}

//chat:Route menu
func E() {}

//  chat:rout menu
func F() {}

// + chat:tool
func G() {}

// chat: this is about chats, not a directive.
// Chat: a i, user-facing prose.
// chat:scopes are nested.
// chat:x
/* chat:route menu */
/*
chat:route menu
*/
// chatter:route
// chat :route
func H() {}
`,
			want: []string{
				"struct type S: scoped",
				"func A: route", "func B: route", "func C: route", "func D: route", "func E: route", "func F: route",
			},
			diags: []string{
				`5:1: "// chat:scoped" is not a directive (no space allowed after //); did you mean //chat:scoped?`,
				`8:1: "//chat: route" is not a directive (no space allowed after the colon); did you mean //chat:route?`,
				`11:1: "//Chat:route" is not a directive (directives are lower case); did you mean //chat:route?`,
				`14:1: "//CHAT:route" is not a directive (directives are lower case); did you mean //chat:route?`,
				`17:1: "//+chat:route" is not a directive (no "+" allowed after //); did you mean //chat:route?`,
				`20:1: "//chat:Route" is not a directive (directives are lower case); did you mean //chat:route?`,
				`23:1: "//  chat:rout" is not a directive (no space allowed after //); did you mean //chat:route?`,
				`26:1: "// + chat:tool" is not a directive (no space allowed after //; no "+" allowed after //); did you mean //chat:tool?`,
				`31:1: "// chat:scopes" is not a directive (no space allowed after //); did you mean //chat:scoped?`,
			},
		},
		{
			name: "grouped type declarations",
			src: `package p

// Group doc without directives.
type (
	// A is scoped.
	//
	//chat:scoped
	A struct{}

	// B is an AI service.
	//
	//chat:ai
	B interface {
		// M is a route.
		//
		//chat:route m
		M()
	}

	C struct{}
)

// One is alone in its group.
//
//chat:scoped invocation
type (
	One struct{}
)

//chat:scoped
type (
	// Two has its own doc.
	Two struct{}
)
`,
			want: []string{
				"struct type A: scoped",
				"interface type B: ai",
				"interface method B.M: route",
				"struct type One: scoped",
			},
			diags: []string{
				"30:1: //chat:scoped is not attached to a declaration it can annotate; put it at the end of the doc comment of a struct type or interface type",
			},
		},
		{
			name: "malformed directives are reported, and left out without their required arguments",
			src: `package p

type S struct{}

//chat:route menu defualt
//chat:route "main menu"
//chat:tool
//chat:param x
//chat:param x described
func (S) M(x int) {}

//chat:ai
//chat:tools
type A interface{}

//chat:tool name=1
type B interface{}
`,
			want: []string{"method S.M: route tool param", "interface type A: ai"},
			diags: []string{
				`5:19: unexpected argument "defualt" for //chat:route; did you mean "default"?`,
				"6:1: duplicate //chat:route\n\t5:1: previous //chat:route here",
				`6:14: invalid NAME "main menu" for //chat:route: use only letters, digits, '-', '_', '.' and '/'`,
				"8:1: //chat:param needs TEXT after NAME",
				"9:1: duplicate //chat:param x\n\t8:1: previous //chat:param x here",
				"13:1: //chat:tools needs a TYPE",
				"16:1: //chat:tool cannot annotate an interface type; it applies to methods",
				`16:18: invalid value "1" for key "name" in //chat:tool: not a Go identifier`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			anns, diags := collectSources(t, "a.go", tt.src)
			if got := summarize(anns); !slices.Equal(got, tt.want) {
				t.Errorf("annotated:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.want, "\n\t"))
			}
			if !slices.Equal(diags, tt.diags) {
				t.Errorf("diagnostics:\n%s\nwant:\n%s", strings.Join(diags, "\n"), strings.Join(tt.diags, "\n"))
			}
		})
	}
}

func TestCollectNodes(t *testing.T) {
	anns, diags := collectSources(t, "a.go", `package p

//chat:ai
type A interface {
	//chat:route m
	M()
}

type S struct{}

//chat:route s
func (s *S) R() {}
`)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if len(anns) != 3 {
		t.Fatalf("got %d annotated, want 3", len(anns))
	}
	if ts, ok := anns[0].node.(*ast.TypeSpec); !ok || ts.Name.Name != "A" || anns[0].target != targetInterface {
		t.Errorf("anns[0] = %+v", anns[0])
	}
	if f, ok := anns[1].node.(*ast.Field); !ok || f.Names[0].Name != "M" || anns[1].recv != "A" {
		t.Errorf("anns[1] = %+v", anns[1])
	}
	if fd, ok := anns[2].node.(*ast.FuncDecl); !ok || fd.Name.Name != "R" || anns[2].recv != "S" {
		t.Errorf("anns[2] = %+v", anns[2])
	}
	if d, ok := first[*routeDirective](anns[2]); !ok || d.name.value != "s" {
		t.Errorf("first route = %+v, %v", d, ok)
	}
	if _, ok := first[*toolDirective](anns[2]); ok || all[*toolDirective](anns[2]) != nil {
		t.Errorf("found a tool directive")
	}
	if _, ok := first[*routeDirective](nil); ok || all[*routeDirective](nil) != nil {
		t.Errorf("found a directive on a nil declaration")
	}
}

func TestCollectFilesAndGenerated(t *testing.T) {
	anns, diags := collectSources(t,
		"b.go", `package p

//chat:route b
func B() {}
`,
		"chat_gen.go", `// Code generated by chatgen. DO NOT EDIT.

package p

//chat:route gen
func Gen() {}

//chat:bogus
// chat:route
var x int
`,
		"other_gen.go", `// Code generated by stringer -type=Kind; DO NOT EDIT.

package p

//chat:route other
func Other() {}
`,
		"notgen.go", `package p

// Code generated by chatgen. DO NOT EDIT.
//
//chat:route late
func Late() {}
`,
		"a.go", `package p

//chat:route a1
func A1() {}

//chat:route a2
func A2() {}
`,
	)
	if len(diags) > 0 {
		t.Errorf("diagnostics: %q", diags)
	}
	// In file-name order, then source order: not the order the files were
	// parsed in (go/packages parses concurrently).
	want := []string{"func A1: route", "func A2: route", "func B: route", "func Late: route", "func Other: route"}
	if got := summarize(anns); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestNearMiss(t *testing.T) {
	tests := []struct {
		text, shown, name string
	}{
		{"// chat:route x", "// chat:route", "route"},
		{"//\tchat:tool", "//\tchat:tool", "tool"},
		{"//chat: ai", "//chat: ai", "ai"},
		{"//chat:Ai", "//chat:Ai", "ai"},
		{"//+chat:param x y", "//+chat:param", "param"},
		{"// chat:evnt", "// chat:evnt", "event"},
		{"// chat:", "", ""},
		{"// chat: rout", "", ""},
		{"// chat: the user", "", ""},
		{"// chat:ia", "", ""},
		{"//chat:route", "", ""},
		{"//chat:rout", "", ""},
		{"//chat:Rout", "//chat:Rout", "route"},
		{"// chats:route", "", ""},
		{"/* chat:route */", "", ""},
		{"", "", ""},
		{"//", "", ""},
		{"// chat", "", ""},
		{"// +chat:tools A", "// +chat:tools", "tools"},
		{"//+ chat:tools A", "//+ chat:tools", "tools"},
		{"//++chat:tools A", "", ""},
	}
	for _, tt := range tests {
		nm, ok := nearMiss(tt.text)
		if ok != (tt.name != "") || nm.shown != tt.shown || nm.name != tt.name {
			t.Errorf("nearMiss(%q) = %+v, %v; want shown %q, name %q", tt.text, nm, ok, tt.shown, tt.name)
		}
	}
}
