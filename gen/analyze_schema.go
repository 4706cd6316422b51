package gen

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/constant"
	"go/token"
	"go/types"
	"slices"
	"strings"
)

// schemaBuilder computes JSON Schemas of Go types at generate time:
// descriptions from doc comments, enums from typed const blocks, required
// for fields that are neither pointers nor omitempty.
type schemaBuilder struct {
	m *pkgModel
	// fieldDocs maps the position of a struct field's name to its doc text.
	fieldDocs map[token.Pos]string
}

func newSchemaBuilder(m *pkgModel) *schemaBuilder {
	sb := &schemaBuilder{m: m, fieldDocs: map[token.Pos]string{}}
	for _, f := range m.pkg.Syntax {
		ast.Inspect(f, func(n ast.Node) bool {
			st, ok := n.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fld := range st.Fields.List {
				doc := fld.Doc.Text()
				if doc == "" {
					doc = fld.Comment.Text()
				}
				doc = strings.TrimSpace(doc)
				if doc == "" {
					continue
				}
				for _, name := range fld.Names {
					sb.fieldDocs[name.Pos()] = doc
				}
				if len(fld.Names) == 0 {
					sb.fieldDocs[fld.Type.Pos()] = doc
				}
			}
			return true
		})
	}
	return sb
}

// schema is an ordered JSON object.
type schema struct {
	keys []string
	vals []any // string, int, bool, *schema, []any, []string
}

func (s *schema) set(k string, v any) *schema {
	if i := slices.Index(s.keys, k); i >= 0 {
		s.vals[i] = v
		return s
	}
	s.keys = append(s.keys, k)
	s.vals = append(s.vals, v)
	return s
}

// newSchema returns the schema with the given keys and values, in order:
// newSchema("type", "string", "format", "date-time").
func newSchema(kv ...any) *schema {
	s := &schema{}
	for i := 0; i+1 < len(kv); i += 2 {
		s.set(kv[i].(string), kv[i+1])
	}
	return s
}

// MarshalJSON writes the keys in order.
func (s *schema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range s.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(s.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// typeSchema returns the schema of the JSON encoding/json reads into a
// value of type t (jsonDecode), or an explanation of why t has none. stack
// holds the named types being walked: a schema here is one inline object,
// so a recursive type has none.
func (sb *schemaBuilder) typeSchema(t types.Type, stack []*types.Named) (*schema, string) {
	f := jsonFormOf(t, jsonDecode)
	if f.kind == jsonUnsupported {
		return nil, fmt.Sprintf("%s %s", sb.m.typeString(t), f.why)
	}
	if f.named != nil {
		if slices.ContainsFunc(stack, func(n *types.Named) bool { return types.Identical(n, f.named) }) {
			return nil, fmt.Sprintf("%s is recursive", sb.m.typeString(f.named))
		}
		stack = append(stack, f.named)
	}
	var s *schema
	switch f.kind {
	case jsonAny:
		return newSchema(), ""
	case jsonBool, jsonInteger, jsonNumber, jsonString:
		s = scalarSchema(f)
	case jsonArray:
		items, why := sb.typeSchema(f.elem, stack)
		if why != "" {
			return nil, why
		}
		s = newSchema("type", "array", "items", items)
		if f.length >= 0 {
			s.set("minItems", int(f.length)).set("maxItems", int(f.length))
		}
	case jsonMap:
		vals, why := sb.typeSchema(f.elem, stack)
		if why != "" {
			return nil, why
		}
		s = newSchema("type", "object", "additionalProperties", vals)
	case jsonObject:
		return sb.structSchema(f.fields, stack)
	}
	if f.named != nil {
		if enum := sb.enum(f.named); len(enum) > 0 {
			s.set("enum", enum)
		}
	}
	return s, ""
}

// scalarSchema is the schema of a boolean, number or string form.
func scalarSchema(f jsonForm) *schema {
	s := newSchema("type", [...]string{jsonBool: "boolean", jsonInteger: "integer", jsonNumber: "number", jsonString: "string"}[f.kind])
	if f.format != "" {
		s.set("format", f.format)
	}
	if f.encoding != "" {
		s.set("contentEncoding", f.encoding)
	}
	if f.description != "" {
		s.set("description", f.description)
	}
	return s
}

// structSchema is the schema of a struct's JSON object: its fields are
// required unless they are pointers or omitempty or omitzero, and no other
// properties are allowed.
func (sb *schemaBuilder) structSchema(fields []jsonField, stack []*types.Named) (*schema, string) {
	props := &schema{}
	var required []string
	for _, jf := range fields {
		var fs *schema
		if jf.quoted {
			fs = newSchema("type", "string") // its JSON text, quoted
		} else {
			var why string
			if fs, why = sb.typeSchema(jf.f.Type(), stack); why != "" {
				return nil, fmt.Sprintf("field %s: %s", jf.f.Name(), why)
			}
		}
		if doc := sb.fieldDocs[jf.f.Pos()]; doc != "" {
			fs.set("description", doc)
		}
		props.set(jf.name, fs)
		if _, isPtr := types.Unalias(jf.f.Type()).(*types.Pointer); !isPtr && !jf.omitEmpty && !jf.omitZero {
			required = append(required, jf.name)
		}
	}
	s := newSchema("type", "object", "properties", props)
	if len(required) > 0 {
		s.set("required", required)
	}
	s.set("additionalProperties", false)
	return s, ""
}

// enum lists the values of the constants of named type t declared in t's
// package (a typed const block), in source order.
func (sb *schemaBuilder) enum(t types.Type) []any {
	named, ok := types.Unalias(t).(*types.Named)
	if !ok || named.Obj().Pkg() == nil {
		return nil
	}
	scope := named.Obj().Pkg().Scope()
	var consts []*types.Const
	for _, name := range scope.Names() {
		if c, ok := scope.Lookup(name).(*types.Const); ok && types.Identical(c.Type(), t) {
			consts = append(consts, c)
		}
	}
	slices.SortFunc(consts, func(a, b *types.Const) int {
		// Constants of other packages come from export data, whose
		// positions are in order within the package.
		if c := comparePos(sb.m.fset, a.Pos(), b.Pos()); c != 0 {
			return c
		}
		return cmp.Compare(a.Name(), b.Name())
	})
	var out []any
	for _, c := range consts {
		v := c.Val()
		switch v.Kind() {
		case constant.String:
			out = append(out, constant.StringVal(v))
		case constant.Int:
			if i, ok := constant.Int64Val(v); ok {
				out = append(out, i)
			}
		case constant.Float:
			f, _ := constant.Float64Val(v)
			out = append(out, f)
		case constant.Bool:
			out = append(out, constant.BoolVal(v))
		}
	}
	return slices.CompactFunc(out, func(a, b any) bool { return a == b })
}

// jsonText renders a schema compactly.
func jsonText(s *schema) string {
	b, err := json.Marshal(s)
	if err != nil {
		return "{}"
	}
	return string(b)
}
