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
	"reflect"
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

// typeSchema returns the schema of t, or an explanation of why t has none.
func (sb *schemaBuilder) typeSchema(t types.Type, stack []types.Type) (*schema, string) {
	for _, s := range stack {
		if types.Identical(s, t) {
			return nil, fmt.Sprintf("%s is recursive", sb.m.typeString(t))
		}
	}
	if named, ok := types.Unalias(t).(*types.Named); ok {
		tn := named.Obj()
		if tn.Pkg() != nil {
			switch tn.Pkg().Path() + "." + tn.Name() {
			case "time.Time":
				return newSchema("type", "string", "format", "date-time"), ""
			case "time.Duration":
				return newSchema("type", "integer", "description", "a duration in nanoseconds"), ""
			case "encoding/json.RawMessage", "encoding/json.Number":
				return newSchema(), ""
			}
		}
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		var s *schema
		switch {
		case u.Info()&types.IsBoolean != 0:
			s = newSchema("type", "boolean")
		case u.Info()&types.IsInteger != 0:
			s = newSchema("type", "integer")
		case u.Info()&types.IsFloat != 0:
			s = newSchema("type", "number")
		case u.Info()&types.IsString != 0:
			s = newSchema("type", "string")
		default:
			return nil, fmt.Sprintf("%s has no JSON form", sb.m.typeString(t))
		}
		if enum := sb.enum(t); len(enum) > 0 {
			s.set("enum", enum)
		}
		return s, ""
	case *types.Pointer:
		return sb.typeSchema(u.Elem(), append(stack, t))
	case *types.Slice:
		if b, ok := u.Elem().Underlying().(*types.Basic); ok && b.Kind() == types.Byte {
			return newSchema("type", "string", "contentEncoding", "base64"), ""
		}
		items, why := sb.typeSchema(u.Elem(), append(stack, t))
		if why != "" {
			return nil, why
		}
		return newSchema("type", "array", "items", items), ""
	case *types.Array:
		items, why := sb.typeSchema(u.Elem(), append(stack, t))
		if why != "" {
			return nil, why
		}
		return newSchema("type", "array", "items", items, "minItems", int(u.Len()), "maxItems", int(u.Len())), ""
	case *types.Map:
		if k, ok := u.Key().Underlying().(*types.Basic); !ok || k.Info()&(types.IsString|types.IsInteger) == 0 {
			return nil, fmt.Sprintf("map keys of %s are not strings or integers", sb.m.typeString(t))
		}
		vals, why := sb.typeSchema(u.Elem(), append(stack, t))
		if why != "" {
			return nil, why
		}
		return newSchema("type", "object", "additionalProperties", vals), ""
	case *types.Struct:
		return sb.structSchema(t, u, append(stack, t))
	case *types.Interface:
		if u.Empty() {
			return newSchema(), ""
		}
		return nil, fmt.Sprintf("%s is an interface with methods", sb.m.typeString(t))
	case *types.Signature:
		return nil, fmt.Sprintf("%s is a func", sb.m.typeString(t))
	case *types.Chan:
		return nil, fmt.Sprintf("%s is a channel", sb.m.typeString(t))
	}
	return nil, fmt.Sprintf("%s has no JSON schema", sb.m.typeString(t))
}

func (sb *schemaBuilder) structSchema(t types.Type, st *types.Struct, stack []types.Type) (*schema, string) {
	props := &schema{}
	var required []string
	var add func(st *types.Struct) string
	add = func(st *types.Struct) string {
		for i := range st.NumFields() {
			f := st.Field(i)
			tag := reflect.StructTag(st.Tag(i)).Get("json")
			name, opts, _ := strings.Cut(tag, ",")
			if name == "-" && opts == "" {
				continue
			}
			if f.Embedded() && name == "" {
				ft := f.Type()
				if p, ok := ft.(*types.Pointer); ok {
					ft = p.Elem()
				}
				if est, ok := ft.Underlying().(*types.Struct); ok {
					if why := add(est); why != "" {
						return why
					}
					continue
				}
			}
			if !f.Exported() {
				continue
			}
			if name == "" {
				name = f.Name()
			}
			fs, why := sb.typeSchema(f.Type(), stack)
			if why != "" {
				return fmt.Sprintf("field %s: %s", f.Name(), why)
			}
			if doc := sb.fieldDocs[f.Pos()]; doc != "" {
				fs.set("description", doc)
			}
			props.set(name, fs)
			_, isPtr := f.Type().(*types.Pointer)
			if !isPtr && !strings.Contains(","+opts+",", ",omitempty,") && !strings.Contains(","+opts+",", ",omitzero,") {
				required = append(required, name)
			}
		}
		return ""
	}
	if why := add(st); why != "" {
		return nil, why
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
