package gen

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestJSONWalker checks the walker against encoding/json on the types of
// analyze_json_cases_test.go: what json.Marshal writes for each value has the form
// the walker gives its type (the same field names, required fields present,
// the same kinds of values, Marshal failing where the form is
// unsupported), and a document built from the walker's decode form
// unmarshals into the type with unknown fields disallowed (and one where
// the form is unsupported fails to).
func TestJSONWalker(t *testing.T) {
	// The cases file, found by the end of its name.
	names, err := filepath.Glob("*json_cases_test.go")
	if err != nil || len(names) != 1 {
		t.Fatalf("want one file of JSON walker cases, found %q (%v)", names, err)
	}
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, names[0], nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil)}
	pkg, err := conf.Check("gen", fset, []*ast.File{file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range jsonWalkerCases {
		tv, err := types.Eval(fset, pkg, token.NoPos, c.typ)
		if err != nil || !tv.IsType() {
			t.Fatalf("case %d: %s is not a type: %v", i, c.typ, err)
		}
		typ := tv.Type
		ptr := reflect.ValueOf(c.value)
		if ptr.Kind() != reflect.Pointer {
			t.Fatalf("case %d: value %T is not a pointer", i, c.value)
		}
		t.Run(fmt.Sprintf("%d_%s", i, c.typ), func(t *testing.T) {
			// The value as a non-addressable value, then addressable behind
			// its pointer.
			checkMarshal(t, jsonFormOf(typ, jsonEncode), ptr.Elem().Interface())
			checkMarshal(t, jsonFormOf(types.NewPointer(typ), jsonEncode), c.value)
			checkUnmarshal(t, jsonFormOf(typ, jsonDecode), ptr.Type().Elem())
		})
	}
}

// checkMarshal checks that json.Marshal(v) writes JSON of form f.
func checkMarshal(t *testing.T, f jsonForm, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		if !hasUnsupported(f) {
			t.Errorf("json.Marshal(%T) failed: %v; the walker's form %s allows it", v, err, formString(f))
		}
		return
	}
	if f.kind == jsonUnsupported {
		t.Errorf("json.Marshal(%T) wrote %s; the walker's form %s is unsupported", v, b, formString(f))
		return
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var val any
	if err := d.Decode(&val); err != nil {
		t.Fatal(err)
	}
	if problem := matchForm(f, val, "$"); problem != "" {
		t.Errorf("json.Marshal(%T) wrote %s: %s", v, b, problem)
	}
}

// hasUnsupported reports whether f or one of its fields is unsupported,
// which fails Marshal.
func hasUnsupported(f jsonForm) bool {
	if f.kind == jsonUnsupported {
		return true
	}
	for _, jf := range f.fields {
		if ff, _ := fieldForm(jf, jsonEncode); hasUnsupported(ff) {
			return true
		}
	}
	return false
}

// matchForm reports how the JSON value val (decoded with UseNumber) is not
// of form f, or "".
func matchForm(f jsonForm, val any, path string) string {
	if val == nil {
		if f.nullable || f.kind == jsonAny {
			return ""
		}
		return path + " is null, the form is not nullable"
	}
	if f.plainToo != nil {
		if _, ok := val.(string); ok {
			return ""
		}
		return matchForm(plainForm(f.plainToo, jsonEncode), val, path)
	}
	switch f.kind {
	case jsonAny:
		return ""
	case jsonBool:
		if _, ok := val.(bool); ok {
			return ""
		}
	case jsonInteger:
		if n, ok := val.(json.Number); ok && !strings.ContainsAny(n.String(), ".eE") {
			return ""
		}
	case jsonNumber:
		if _, ok := val.(json.Number); ok {
			return ""
		}
	case jsonString:
		s, ok := val.(string)
		if !ok {
			break
		}
		if f.encoding == "base64" {
			if _, err := base64.StdEncoding.DecodeString(s); err != nil {
				return fmt.Sprintf("%s is not base64: %v", path, err)
			}
		}
		if f.format == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
				return fmt.Sprintf("%s is not a date-time: %v", path, err)
			}
		}
		return ""
	case jsonArray:
		a, ok := val.([]any)
		if !ok {
			break
		}
		if f.length >= 0 && int64(len(a)) != f.length {
			return fmt.Sprintf("%s has %d elements, want %d", path, len(a), f.length)
		}
		for i, e := range a {
			if p := matchForm(jsonFormOf(f.elem, jsonEncode), e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	case jsonMap:
		m, ok := val.(map[string]any)
		if !ok {
			break
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if p := matchForm(jsonFormOf(f.elem, jsonEncode), m[k], path+"."+k); p != "" {
				return p
			}
		}
		return ""
	case jsonObject:
		m, ok := val.(map[string]any)
		if !ok {
			break
		}
		var names []string
		for _, jf := range f.fields {
			names = append(names, jf.name)
			ff, optional := fieldForm(jf, jsonEncode)
			v, present := m[jf.name]
			if !present {
				if !optional {
					return fmt.Sprintf("%s has no %q, the walker requires it", path, jf.name)
				}
				continue
			}
			if p := matchForm(ff, v, path+"."+jf.name); p != "" {
				return p
			}
		}
		for k := range m {
			if !slices.Contains(names, k) {
				return fmt.Sprintf("%s has %q, the walker's fields are %q", path, k, names)
			}
		}
		return ""
	}
	return fmt.Sprintf("%s is %T, the form is %s", path, val, formString(f))
}

// checkUnmarshal checks that a document of decode form f unmarshals into a
// new value of type rt, and that one where f is unsupported does not.
func checkUnmarshal(t *testing.T, f jsonForm, rt reflect.Type) {
	t.Helper()
	unmarshal := func(doc string) error {
		d := json.NewDecoder(strings.NewReader(doc))
		d.DisallowUnknownFields()
		return d.Decode(reflect.New(rt).Interface())
	}
	if f.kind == jsonUnsupported {
		for _, doc := range unsupportedDocs {
			if err := unmarshal(doc); err == nil {
				t.Errorf("json.Unmarshal(%s) into %v succeeded; the walker's form is unsupported: %s", doc, rt, f.why)
			}
		}
		return
	}
	doc := sampleDoc(f, 0)
	if err := unmarshal(doc); err != nil {
		t.Errorf("json.Unmarshal(%s) into %v: %v", doc, rt, err)
	}
	if f.kind != jsonObject {
		return
	}
	// Each unsupported field fails, and so does each field the walker
	// leaves out because Unmarshal cannot set it.
	for _, jf := range f.fields {
		if ff, _ := fieldForm(jf, jsonDecode); ff.kind == jsonUnsupported {
			for _, v := range unsupportedDocs {
				doc := fmt.Sprintf("{%q:%s}", jf.name, v)
				if err := unmarshal(doc); err == nil {
					t.Errorf("json.Unmarshal(%s) into %v succeeded; the walker's form of %s is unsupported: %s", doc, rt, jf.name, ff.why)
				}
			}
		}
	}
	st, _ := f.named.Underlying().(*types.Struct)
	if st == nil {
		return
	}
	for _, jf := range jsonFields(st) {
		if !slices.ContainsFunc(f.fields, func(o jsonField) bool { return o.name == jf.name }) {
			doc := fmt.Sprintf("{%q:%s}", jf.name, sampleDoc(jsonFormOf(jf.f.Type(), jsonDecode), 0))
			if err := unmarshal(doc); err == nil {
				t.Errorf("json.Unmarshal(%s) into %v succeeded; the walker leaves %s out", doc, rt, jf.name)
			}
		}
	}
}

// unsupportedDocs are the JSON values (null aside) that Unmarshal must
// refuse for an unsupported form.
var unsupportedDocs = []string{`{"true":1}`, `"x"`, `1`, `[1]`, `true`}

// sampleDoc is a JSON document of decode form f; forms deeper than three
// nullable levels are null.
func sampleDoc(f jsonForm, depth int) string {
	if f.nullable && depth > 3 {
		return "null"
	}
	switch f.kind {
	case jsonAny:
		return `{"any":[1,"two"]}`
	case jsonBool:
		return "true"
	case jsonInteger:
		return "7"
	case jsonNumber:
		return "1.5"
	case jsonString:
		switch {
		case f.encoding == "base64":
			return `"aGk="`
		case f.format == "date-time":
			return `"2024-01-02T03:04:05Z"`
		}
		return `"x"`
	case jsonArray:
		n := f.length
		if n < 0 {
			n = 1
		}
		elems := make([]string, n)
		for i := range elems {
			elems[i] = sampleDoc(jsonFormOf(f.elem, jsonDecode), depth+1)
		}
		return "[" + strings.Join(elems, ",") + "]"
	case jsonMap:
		return `{"1":` + sampleDoc(jsonFormOf(f.elem, jsonDecode), depth+1) + "}"
	case jsonObject:
		var members []string
		for _, jf := range f.fields {
			ff, _ := fieldForm(jf, jsonDecode)
			if ff.kind == jsonUnsupported {
				continue
			}
			var v string
			if jf.quoted {
				v = sampleDoc(jsonFormOf(jf.f.Type(), jsonDecode), depth+1)
				if v != "null" {
					qv, _ := json.Marshal(v)
					v = string(qv)
				}
			} else {
				v = sampleDoc(ff, depth+1)
			}
			members = append(members, fmt.Sprintf("%q:%s", jf.name, v))
		}
		return "{" + strings.Join(members, ",") + "}"
	}
	return "null"
}

// formString describes f for a test failure.
func formString(f jsonForm) string {
	s := [...]string{"any", "bool", "integer", "number", "string", "array", "map", "object", "unsupported"}[f.kind]
	if f.nullable {
		s += " or null"
	}
	if f.kind == jsonObject {
		var names []string
		for _, jf := range f.fields {
			names = append(names, jf.name)
		}
		s += fmt.Sprintf(" %q", names)
	}
	return s
}

// Methods named like marshalers with other signatures (which vet reports,
// so they cannot be compiled into TestJSONWalker) are not marshalers.
func TestJSONWalkerMisnamedMarshalers(t *testing.T) {
	const src = `package p

type T struct{ A int }

func (T) MarshalJSON() string          { return "" }
func (*T) UnmarshalJSON(string) error  { return nil }
func (T) MarshalText() []byte          { return nil }
func (*T) UnmarshalText(b []byte) bool { return false }
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := new(types.Config).Check("p", fset, []*ast.File{file}, nil)
	if err != nil {
		t.Fatal(err)
	}
	typ := pkg.Scope().Lookup("T").Type()
	for _, dir := range []jsonDir{jsonEncode, jsonDecode} {
		if f := jsonFormOf(typ, dir); f.kind != jsonObject || f.marshaler {
			t.Errorf("direction %d: form %s, want the object of T's fields", dir, formString(f))
		}
	}
}
