package gen

import (
	"go/types"
	"reflect"
	"slices"
	"strings"
	"unicode"
)

// The walker from Go types to JSON: how encoding/json writes (Marshal) or
// reads (Unmarshal) a value of a Go type, worked out from go/types at
// generate time. Tool parameter and AI result schemas (analyze_schema.go)
// describe what encoding/json reads; the manifest (analyze_manifest.go)
// what it writes. Both render the forms this file computes, one level at a
// time, so that the rules of encoding/json live in one place;
// TestJSONWalker checks them against encoding/json itself.

// jsonDir is the direction of a conversion between Go and JSON.
type jsonDir int

const (
	jsonEncode jsonDir = iota // json.Marshal: what the program writes
	jsonDecode                // json.Unmarshal: what the program reads
)

// jsonKind is the kind of JSON value a Go type is written as or read from.
type jsonKind int

const (
	jsonAny         jsonKind = iota // any JSON value: an interface, or a type with its own MarshalJSON/UnmarshalJSON
	jsonBool                        // true or false
	jsonInteger                     // a number without a fraction
	jsonNumber                      // a number
	jsonString                      // a string
	jsonArray                       // an array of elem
	jsonMap                         // an object of elem values, a map's keys as its names
	jsonObject                      // an object of a struct's fields
	jsonUnsupported                 // encoding/json fails: a func, a channel, a complex number, …
)

// jsonForm is the JSON form of one Go type, one level deep: the element
// type of an array or map and the fields of an object are walked by whoever
// renders the form.
type jsonForm struct {
	kind jsonKind
	// named is the named type whose own structure the form is (a struct, an
	// enum's basic type, a named slice); nil for an unnamed type and when a
	// marshaler or a well-known type decides the form.
	named *types.Named
	// nullable: encoding/json writes a nil value of the type as null (a
	// pointer, slice or map). Unmarshal accepts null for any type.
	nullable bool
	// marshaler: the type's own MarshalJSON/MarshalText (UnmarshalJSON/
	// UnmarshalText) decides the form.
	marshaler bool
	// plainToo is T when only *T has MarshalText: encoding/json writes a
	// string when the value is addressable and the plain form of T
	// otherwise.
	plainToo types.Type

	elem   types.Type  // jsonArray, jsonMap
	length int64       // jsonArray: the length of an array; -1 for a slice
	fields []jsonField // jsonObject

	format      string // jsonString: "date-time" for time.Time
	encoding    string // jsonString: "base64" for a []byte
	description string // "a duration in nanoseconds" for time.Duration
	why         string // jsonUnsupported: what encoding/json rejects
}

// jsonField is one field of a struct's JSON object.
type jsonField struct {
	name      string
	f         *types.Var
	index     []int // the field's index path from the outer struct
	tagged    bool  // the name comes from the json tag
	omitEmpty bool  // ,omitempty
	omitZero  bool  // ,omitzero
	// quoted: ,string applies (the field's type, behind an unnamed
	// pointer, is a bool, number or string kind), so the value is a JSON
	// string holding its JSON text.
	quoted bool
	// embedPtr: the field is promoted through an embedded pointer, which
	// may be nil (then Marshal leaves the field out).
	embedPtr bool
	// unsettable: the field is promoted through an embedded pointer to an
	// unexported struct type, which Unmarshal cannot allocate (it fails).
	unsettable bool
}

// jsonFormOf returns the JSON form of t in direction dir, as encoding/json
// has it.
func jsonFormOf(t types.Type, dir jsonDir) jsonForm {
	t = types.Unalias(t)
	if f, ok := wellKnownForm(t); ok {
		return f
	}
	if isPointer(t) {
		return plainForm(t, dir) // which looks for the pointer's marshalers
	}
	if f, ok := marshalerForm(t, dir); ok {
		return f
	}
	return plainForm(t, dir)
}

// wellKnownForm returns the forms of time.Time (whose MarshalJSON writes
// an RFC 3339 string), time.Duration (an int64 of nanoseconds) and
// json.Number (a string encoding/json writes and reads as a number).
func wellKnownForm(t types.Type) (jsonForm, bool) {
	n, ok := t.(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return jsonForm{}, false
	}
	switch n.Obj().Pkg().Path() + "." + n.Obj().Name() {
	case "time.Time":
		return jsonForm{kind: jsonString, format: "date-time", marshaler: true}, true
	case "time.Duration":
		return jsonForm{kind: jsonInteger, description: "a duration in nanoseconds"}, true
	case "encoding/json.Number":
		return jsonForm{kind: jsonNumber}, true
	}
	return jsonForm{}, false
}

// marshalerForm returns the form of a type with its own marshaler, in the
// order encoding/json looks for them: Marshal tries MarshalJSON on *T
// (when the value is addressable) and on T, then MarshalText on *T and on
// T; Unmarshal takes the address of a named value and tries UnmarshalJSON,
// then UnmarshalText. An interface is written as its dynamic value.
func marshalerForm(t types.Type, dir jsonDir) (jsonForm, bool) {
	if types.IsInterface(t) {
		return jsonForm{}, false
	}
	_, isPtr := t.Underlying().(*types.Pointer)
	if dir == jsonDecode {
		ms := t
		if _, named := t.(*types.Named); named && !isPtr {
			ms = types.NewPointer(t)
		}
		switch {
		case hasMethod(ms, "UnmarshalJSON", false):
			return jsonForm{kind: jsonAny, marshaler: true}, true
		case hasMethod(ms, "UnmarshalText", false):
			return jsonForm{kind: jsonString, marshaler: true}, true
		}
		return jsonForm{}, false
	}
	switch {
	case !isPtr && hasMethod(types.NewPointer(t), "MarshalJSON", true), hasMethod(t, "MarshalJSON", true):
		return jsonForm{kind: jsonAny, marshaler: true}, true
	case hasMethod(t, "MarshalText", true):
		return jsonForm{kind: jsonString, marshaler: true, nullable: isPtr}, true
	case !isPtr && hasMethod(types.NewPointer(t), "MarshalText", true):
		return jsonForm{kind: jsonString, marshaler: true, plainToo: t}, true
	}
	return jsonForm{}, false
}

// hasMethod reports whether the method set of t has the method of
// json.Marshaler or encoding.TextMarshaler (marshal) or of json.Unmarshaler
// or encoding.TextUnmarshaler (!marshal) called name, with its signature.
func hasMethod(t types.Type, name string, marshal bool) bool {
	sel := types.NewMethodSet(t).Lookup(nil, name)
	if sel == nil {
		return false
	}
	sig, ok := sel.Type().(*types.Signature)
	if !ok {
		return false
	}
	isBytes := func(t types.Type) bool {
		s, ok := types.Unalias(t).(*types.Slice)
		return ok && types.Identical(s.Elem(), types.Typ[types.Byte])
	}
	if marshal { // func() ([]byte, error)
		return sig.Params().Len() == 0 && sig.Results().Len() == 2 && isBytes(sig.Results().At(0).Type()) && isError(sig.Results().At(1).Type())
	}
	// func([]byte) error
	return sig.Params().Len() == 1 && !sig.Variadic() && isBytes(sig.Params().At(0).Type()) && sig.Results().Len() == 1 && isError(sig.Results().At(0).Type())
}

// hasMarshaler reports whether *t has a marshaler of direction dir (which
// covers t's own).
func hasMarshaler(t types.Type, dir jsonDir) bool {
	p := types.NewPointer(t)
	if dir == jsonDecode {
		return hasMethod(p, "UnmarshalJSON", false) || hasMethod(p, "UnmarshalText", false)
	}
	return hasMethod(p, "MarshalJSON", true) || hasMethod(p, "MarshalText", true)
}

// plainForm is the form encoding/json gives t by its kind, when no
// marshaler of t's decides it.
func plainForm(t types.Type, dir jsonDir) jsonForm {
	f := plainKindForm(t, dir)
	if n, ok := t.(*types.Named); ok && f.kind != jsonUnsupported && !isPointer(t) {
		f.named = n
	}
	return f
}

func plainKindForm(t types.Type, dir jsonDir) jsonForm {
	switch u := t.Underlying().(type) {
	case *types.Basic:
		info := u.Info()
		switch {
		case info&types.IsBoolean != 0:
			return jsonForm{kind: jsonBool}
		case info&types.IsInteger != 0:
			return jsonForm{kind: jsonInteger}
		case info&types.IsFloat != 0:
			return jsonForm{kind: jsonNumber}
		case info&types.IsString != 0:
			return jsonForm{kind: jsonString}
		case info&types.IsComplex != 0:
			return jsonForm{kind: jsonUnsupported, why: "is a complex number"}
		}
		return jsonForm{kind: jsonUnsupported, why: "has no JSON form"}
	case *types.Pointer:
		// Behind a pointer the value is addressable: the methods of the
		// pointer decide (T's own are among them).
		f, ok := wellKnownForm(types.Unalias(u.Elem()))
		if !ok {
			f, ok = marshalerForm(types.NewPointer(u.Elem()), dir)
		}
		if !ok {
			f = jsonFormOf(u.Elem(), dir)
		}
		if f.kind != jsonUnsupported {
			f.nullable = true
		}
		return f
	case *types.Slice:
		// A slice of bytes is base64, unless Marshal finds a marshaler on
		// *elem; Unmarshal reads base64 into any slice of byte kind.
		if e, ok := u.Elem().Underlying().(*types.Basic); ok && e.Kind() == types.Byte && (dir == jsonDecode || !hasMarshaler(u.Elem(), jsonEncode)) {
			return jsonForm{kind: jsonString, encoding: "base64", nullable: true}
		}
		return jsonForm{kind: jsonArray, elem: u.Elem(), length: -1, nullable: true}
	case *types.Array:
		return jsonForm{kind: jsonArray, elem: u.Elem(), length: u.Len()}
	case *types.Map:
		if !jsonKeyType(u.Key(), dir) {
			return jsonForm{kind: jsonUnsupported, why: "has map keys that are neither strings, integers nor text marshalers"}
		}
		return jsonForm{kind: jsonMap, elem: u.Elem(), nullable: true}
	case *types.Struct:
		fields := jsonFields(u)
		if dir == jsonDecode {
			fields = slices.DeleteFunc(fields, func(jf jsonField) bool { return jf.unsettable })
		}
		return jsonForm{kind: jsonObject, fields: fields}
	case *types.Interface:
		if dir == jsonDecode && !u.Empty() {
			return jsonForm{kind: jsonUnsupported, why: "is an interface with methods"}
		}
		return jsonForm{kind: jsonAny}
	case *types.Signature:
		return jsonForm{kind: jsonUnsupported, why: "is a func"}
	case *types.Chan:
		return jsonForm{kind: jsonUnsupported, why: "is a channel"}
	}
	return jsonForm{kind: jsonUnsupported, why: "has no JSON form"}
}

// jsonKeyType reports whether encoding/json writes (reads) a map with keys
// of type k: keys of string or integer kind, or that are text marshalers
// (Marshal: k's own methods; Unmarshal: *k's).
func jsonKeyType(k types.Type, dir jsonDir) bool {
	if b, ok := k.Underlying().(*types.Basic); ok && b.Info()&(types.IsString|types.IsInteger) != 0 {
		return true
	}
	if dir == jsonDecode {
		return hasMethod(types.NewPointer(k), "UnmarshalText", false)
	}
	return hasMethod(k, "MarshalText", true)
}

// fieldForm returns the form of a struct field in direction dir, with its
// json tag's options applied, and whether Marshal may leave the field out.
func fieldForm(jf jsonField, dir jsonDir) (f jsonForm, optional bool) {
	t := jf.f.Type()
	f = jsonFormOf(t, dir)
	if jf.quoted && (dir == jsonDecode || !f.marshaler) {
		// The value is a JSON string holding its JSON text; Marshal
		// writes a nil pointer as null, and a marshaler as it likes.
		f = jsonForm{kind: jsonString, nullable: f.nullable}
	}
	if dir == jsonDecode {
		return f, true
	}
	if jf.omitEmpty || jf.omitZero {
		f.nullable = false // nil is left out, not null
	}
	return f, jf.embedPtr || jf.omitZero || jf.omitEmpty && emptyable(t)
}

// emptyable reports whether omitempty can leave out a value of type t:
// false, 0, "", nil and empty slices, maps and arrays; never a struct.
func emptyable(t types.Type) bool {
	switch u := t.Underlying().(type) {
	case *types.Struct:
		return false
	case *types.Array:
		return u.Len() == 0
	}
	return true
}

// jsonFields lists the fields encoding/json encodes for st, in its order.
// It follows encoding/json's typeFields: a breadth-first walk of the
// embedded structs, each struct type expanded once, at its shallowest
// depth, and its fields counted twice when it is embedded more than once
// at that depth (so that they annihilate each other); then, for each name,
// the shallowest field wins, then the tagged one, and a tie hides them all.
func jsonFields(st *types.Struct) []jsonField {
	type embedded struct {
		typ        types.Type // the struct type, as the map key of typeFields
		st         *types.Struct
		index      []int
		embedPtr   bool
		unsettable bool
	}
	var visited []types.Type
	seen := func(ts []types.Type, t types.Type) bool {
		return slices.ContainsFunc(ts, func(u types.Type) bool { return types.Identical(u, t) })
	}
	var all []jsonField
	next := []embedded{{typ: st, st: st}}
	var nextCount []types.Type // one entry per embedding in the next level
	for len(next) > 0 {
		current := next
		count := nextCount
		next, nextCount = nil, nil
		for _, e := range current {
			if seen(visited, e.typ) {
				continue
			}
			visited = append(visited, e.typ)
			times := 0
			for _, c := range count {
				if types.Identical(c, e.typ) {
					times++
				}
			}
			for i := range e.st.NumFields() {
				f := e.st.Field(i)
				if f.Embedded() {
					t := f.Type()
					if p, ok := t.Underlying().(*types.Pointer); ok {
						t = p.Elem()
					}
					if _, isStruct := t.Underlying().(*types.Struct); !f.Exported() && !isStruct {
						continue // an unexported non-struct type
					}
				} else if !f.Exported() {
					continue
				}
				tag := reflect.StructTag(e.st.Tag(i)).Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				index := append(slices.Clip(e.index), i)
				t := types.Unalias(f.Type())
				ptr := false
				if p, ok := t.(*types.Pointer); ok {
					t, ptr = p.Elem(), true
				}
				est, isStruct := t.Underlying().(*types.Struct)
				if name != "" || !f.Embedded() || !isStruct {
					jf := jsonField{
						name: name, f: f, index: index, tagged: name != "",
						omitEmpty: hasTagOption(opts, "omitempty"), omitZero: hasTagOption(opts, "omitzero"),
						quoted:   hasTagOption(opts, "string") && quotable(t),
						embedPtr: e.embedPtr, unsettable: e.unsettable,
					}
					if jf.name == "" {
						jf.name = f.Name()
					}
					all = append(all, jf)
					if times > 1 {
						all = append(all, jf) // its twin annihilates it
					}
					continue
				}
				if !seen(nextCount, t) {
					next = append(next, embedded{
						typ: t, st: est, index: index,
						embedPtr:   e.embedPtr || ptr,
						unsettable: e.unsettable || ptr && !f.Exported(),
					})
				}
				nextCount = append(nextCount, t)
			}
		}
	}
	var out []jsonField
	for i, jf := range all {
		dominant := true
		rivals := 0
		for j, o := range all {
			if o.name != jf.name || i == j {
				continue
			}
			switch {
			case len(o.index) < len(jf.index), len(o.index) == len(jf.index) && o.tagged && !jf.tagged:
				dominant = false
			case len(o.index) == len(jf.index) && o.tagged == jf.tagged:
				rivals++
			}
		}
		if dominant && rivals == 0 {
			out = append(out, jf)
		}
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out
}

// hasTagOption reports whether the comma-separated options of a json tag
// include opt.
func hasTagOption(opts, opt string) bool {
	return slices.Contains(strings.Split(opts, ","), opt)
}

// quotable reports whether the ",string" tag option applies to a field of
// type t (an unnamed pointer's element): a bool, number or string kind.
func quotable(t types.Type) bool {
	u, ok := t.Underlying().(*types.Basic)
	return ok && u.Info()&(types.IsBoolean|types.IsInteger|types.IsFloat|types.IsString) != 0
}

// validTagName reports whether encoding/json accepts name as a key.
func validTagName(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// isPointer reports whether t is a pointer type.
func isPointer(t types.Type) bool {
	_, ok := t.Underlying().(*types.Pointer)
	return ok
}
