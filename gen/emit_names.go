package gen

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dave/jennifer/jen"
)

// The names of the output: package-level identifiers the emitter declares
// on top of those the analysis reserved, and the locals of each generated
// function.

// reservedNames returns the identifiers no generated local may take: the
// packages the output may refer to, the package's own declarations, the
// identifiers chatgen generates, the predeclared identifiers and the
// keywords. A local taking one of them could hide what the function refers
// to.
func reservedNames(m *pkgModel) map[string]bool {
	r := map[string]bool{}
	for _, n := range []string{"chat", "context", "ai", "json", "llms", "template", "iter", "markdown", "slices"} {
		r[n] = true
	}
	for _, p := range m.pkg.Types.Imports() {
		r[p.Name()] = true
	}
	for _, n := range m.pkg.Types.Scope().Names() {
		r[n] = true
	}
	for n := range m.generated {
		r[n] = true
	}
	for _, n := range types.Universe.Names() {
		r[n] = true
	}
	for t := token.BREAK; t <= token.VAR; t++ {
		if t.IsKeyword() {
			r[t.String()] = true
		}
	}
	return r
}

// topName returns a package-level identifier for a declaration the
// analysis does not reserve (route and catch functions, method
// descriptors): base, or base followed by the first number from 2 that is
// free.
func (e *emitter) topName(base string) string {
	n := base
	for i := 2; e.reserved[n]; i++ {
		n = fmt.Sprintf("%s%d", base, i)
	}
	e.reserved[n] = true
	return n
}

// funcNames hands out the local identifiers of one generated function:
// they clash neither with each other nor with the reserved names.
type funcNames struct {
	reserved map[string]bool
	used     map[string]bool
}

// names returns the allocator of a function whose parameters are params
// (kept as they are: they are declared already).
func (e *emitter) names(params ...string) *funcNames {
	n := &funcNames{reserved: e.reserved, used: map[string]bool{}}
	for _, p := range params {
		n.used[p] = true
	}
	return n
}

func (n *funcNames) taken(name string) bool { return n.reserved[name] || n.used[name] }

// fresh returns base, or base followed by the first number that makes it
// free, and marks it used.
func (n *funcNames) fresh(base string) string {
	name := base
	for i := 0; n.taken(name); i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	n.used[name] = true
	return name
}

// forType returns a local for a value of the type called typeName:
// "workbench" for Workbench, "urlFetcher" for URLFetcher; the type's
// initial when that is taken ("a" for the unexported type anvil, which
// the local would hide).
func (n *funcNames) forType(typeName string) string {
	if name := lowerInitialism(typeName); !n.taken(name) {
		n.used[name] = true
		return name
	}
	r, _ := utf8.DecodeRuneInString(typeName)
	return n.fresh(string(unicode.ToLower(r)))
}

// typeNameFor returns the name of t's type (through pointers and
// aliases), for naming a value of it; "v" for unnamed types.
func typeNameFor(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if obj, _ := typeNameOf(t); obj != nil {
		return obj.Name()
	}
	return "v"
}

// lowerInitialism lowers the leading upper-case letters of name, keeping
// the last of a run that starts a word: URLFetcher gives urlFetcher, Anvil
// anvil, HTTP http.
func lowerInitialism(name string) string {
	runes := []rune(name)
	i := 0
	for i < len(runes) && unicode.IsUpper(runes[i]) {
		i++
	}
	switch {
	case i == 0:
		return name
	case i > 1 && i < len(runes) && unicode.IsLower(runes[i]):
		i-- // URLFetcher: the F starts the next word
	}
	for j := range i {
		runes[j] = unicode.ToLower(runes[j])
	}
	return string(runes)
}

// routeIdent turns a route name (letters, digits, -, _, . and /) into the
// part of a Go identifier: "weapon-builder" gives WeaponBuilder.
func routeIdent(route string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(route, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		b.WriteString(upperFirst(part))
	}
	return b.String()
}

// zero renders the zero value of t as a literal: 0, "", false, nil or
// T{}.
func (e *emitter) zero(t types.Type) jen.Code {
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Info()&types.IsBoolean != 0:
			return jen.False()
		case u.Info()&types.IsString != 0:
			return jen.Lit("")
		case u.Info()&types.IsNumeric != 0:
			return jen.Lit(0)
		}
		return jen.Nil() // unsafe.Pointer
	case *types.Struct, *types.Array:
		return jen.Add(e.typ(t)).Values()
	}
	return jen.Nil()
}
