package gen

import (
	"fmt"
	"go/types"

	"github.com/dave/jennifer/jen"
)

// typeCoder renders go/types types as jennifer code for one output file,
// registering the import name of every package it references.
type typeCoder struct {
	file  *jen.File
	self  string            // import path of the package being generated
	names map[string]string // import name -> path, to avoid clashing hints
}

func newTypeCoder(f *jen.File, self string) *typeCoder {
	return &typeCoder{file: f, self: self, names: map[string]string{}}
}

// importName registers the conventional name of pkg with jennifer, unless
// another package already uses that name (jennifer then picks an alias).
func (tc *typeCoder) importName(path, name string) {
	if path == tc.self {
		return
	}
	if p, ok := tc.names[name]; ok && p != path {
		return
	}
	tc.names[name] = path
	tc.file.ImportName(path, name)
}

// qual renders a reference to the package-level object obj.
func (tc *typeCoder) qual(obj types.Object) *jen.Statement {
	if obj.Pkg() == nil {
		return jen.Id(obj.Name())
	}
	tc.importName(obj.Pkg().Path(), obj.Pkg().Name())
	return jen.Qual(obj.Pkg().Path(), obj.Name())
}

// typ renders t. It returns an error for types that cannot be written in
// Go source (invalid types).
func (tc *typeCoder) typ(t types.Type) (jen.Code, error) {
	switch t := t.(type) {
	case *types.Basic:
		if t.Kind() == types.Invalid {
			return nil, fmt.Errorf("invalid type")
		}
		if t.Kind() == types.UnsafePointer {
			tc.importName("unsafe", "unsafe")
			return jen.Qual("unsafe", "Pointer"), nil
		}
		return jen.Id(t.Name()), nil
	case *types.Alias:
		return tc.named(t.Obj(), t.TypeArgs())
	case *types.Named:
		return tc.named(t.Obj(), t.TypeArgs())
	case *types.TypeParam:
		return jen.Id(t.Obj().Name()), nil
	case *types.Pointer:
		elem, err := tc.typ(t.Elem())
		if err != nil {
			return nil, err
		}
		return jen.Op("*").Add(elem), nil
	case *types.Slice:
		elem, err := tc.typ(t.Elem())
		if err != nil {
			return nil, err
		}
		return jen.Index().Add(elem), nil
	case *types.Array:
		elem, err := tc.typ(t.Elem())
		if err != nil {
			return nil, err
		}
		return jen.Index(jen.Lit(int(t.Len()))).Add(elem), nil
	case *types.Map:
		k, err := tc.typ(t.Key())
		if err != nil {
			return nil, err
		}
		v, err := tc.typ(t.Elem())
		if err != nil {
			return nil, err
		}
		return jen.Map(k).Add(v), nil
	case *types.Chan:
		elem, err := tc.typ(t.Elem())
		if err != nil {
			return nil, err
		}
		switch t.Dir() {
		case types.SendOnly:
			return jen.Chan().Op("<-").Add(elem), nil
		case types.RecvOnly:
			return jen.Op("<-").Chan().Add(elem), nil
		}
		return jen.Chan().Add(elem), nil
	case *types.Signature:
		params, err := tc.tuple(t.Params(), t.Variadic())
		if err != nil {
			return nil, err
		}
		results, err := tc.tuple(t.Results(), false)
		if err != nil {
			return nil, err
		}
		return jen.Func().Params(params...).Add(resultList(results)), nil
	case *types.Struct:
		fields := make([]jen.Code, 0, t.NumFields())
		for i := range t.NumFields() {
			f := t.Field(i)
			ft, err := tc.typ(f.Type())
			if err != nil {
				return nil, err
			}
			var field *jen.Statement
			if f.Embedded() {
				field = jen.Add(ft)
			} else {
				field = jen.Id(f.Name()).Add(ft)
			}
			if tag := t.Tag(i); tag != "" {
				field = field.Op("`" + tag + "`")
			}
			fields = append(fields, field)
		}
		return jen.Struct(fields...), nil
	case *types.Interface:
		if t.NumMethods() == 0 && t.NumEmbeddeds() == 0 {
			return jen.Any(), nil
		}
		var elems []jen.Code
		for i := range t.NumEmbeddeds() {
			e, err := tc.typ(t.EmbeddedType(i))
			if err != nil {
				return nil, err
			}
			elems = append(elems, e)
		}
		for i := range t.NumExplicitMethods() {
			m := t.ExplicitMethod(i)
			sig := m.Type().(*types.Signature)
			params, err := tc.tuple(sig.Params(), sig.Variadic())
			if err != nil {
				return nil, err
			}
			results, err := tc.tuple(sig.Results(), false)
			if err != nil {
				return nil, err
			}
			elems = append(elems, jen.Id(m.Name()).Params(params...).Add(resultList(results)))
		}
		return jen.Interface(elems...), nil
	case *types.Union:
		var terms []jen.Code
		for i := range t.Len() {
			term := t.Term(i)
			tt, err := tc.typ(term.Type())
			if err != nil {
				return nil, err
			}
			if term.Tilde() {
				tt = jen.Op("~").Add(tt)
			}
			terms = append(terms, tt)
		}
		return jen.Union(terms...), nil
	}
	return nil, fmt.Errorf("unsupported type %s", t)
}

func (tc *typeCoder) named(obj *types.TypeName, args *types.TypeList) (jen.Code, error) {
	s := tc.qual(obj)
	if args.Len() == 0 {
		return s, nil
	}
	codes := make([]jen.Code, args.Len())
	for i := range args.Len() {
		c, err := tc.typ(args.At(i))
		if err != nil {
			return nil, err
		}
		codes[i] = c
	}
	return s.Types(codes...), nil
}

// tuple renders the types of a parameter or result list, without names.
func (tc *typeCoder) tuple(t *types.Tuple, variadic bool) ([]jen.Code, error) {
	out := make([]jen.Code, t.Len())
	for i := range t.Len() {
		pt := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			elem, err := tc.typ(pt.(*types.Slice).Elem())
			if err != nil {
				return nil, err
			}
			out[i] = jen.Op("...").Add(elem)
			continue
		}
		c, err := tc.typ(pt)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// resultList renders a result list: nothing, a single type, or a
// parenthesised list.
func resultList(results []jen.Code) jen.Code {
	switch len(results) {
	case 0:
		return jen.Null()
	case 1:
		return results[0]
	}
	return jen.Parens(jen.List(results...))
}
