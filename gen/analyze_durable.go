package gen

import (
	"go/token"
	"go/types"
	"reflect"
)

// checkDurable checks a //chat:scoped durable bean: it must be a chat or
// per-chat struct whose value round-trips through encoding/json, since
// that is how the runtime saves it with its conversation and restores it
// on resume.
func (m *pkgModel) checkDurable(b *beanModel, d *scopedDirective, diags *Diagnostics) {
	name := b.obj.Name()
	switch {
	case b.kind == kindInvocation:
		diags.errorf(m.fset.Position(d.pos), "//chat:scoped durable %s: an invocation-scoped bean lives for one call and is never saved; drop durable or invocation", name)
		return
	case b.iface:
		diags.errorf(m.fset.Position(b.spec.Name.Pos()), "//chat:scoped durable %s: an interface cannot be durable (its implementation's JSON form is unknown); make the implementation the scoped type", name)
		return
	}
	w := &jsonWalker{m: m, bean: name, diags: diags, seen: map[types.Type]bool{}, at: b.spec.Name.Pos()}
	w.walk(b.obj.Type(), "")
}

// jsonWalker walks a type, reporting what does not survive an
// encoding/json round trip.
type jsonWalker struct {
	m     *pkgModel
	bean  string
	diags *Diagnostics
	seen  map[types.Type]bool
	at    token.Pos // where problems are reported: the bean's field that leads to them
}

func (w *jsonWalker) report(path, problem string) {
	w.diags.errorf(w.m.fset.Position(w.at), "//chat:scoped durable %s: field %s %s", w.bean, path, problem)
}

// unsaveable is how to fix a field that encoding/json cannot save.
const unsaveable = " (it would come back nil after a resume); keep it in a bean that is not durable, " +
	"or tag it `json:\"-\"` and make it again where it is used"

// walk checks t, reached through the field path ("" for the bean itself).
func (w *jsonWalker) walk(t types.Type, path string) {
	if roundTrips(t) {
		return
	}
	if _, named := t.(*types.Named); named {
		if w.seen[t] {
			return
		}
		w.seen[t] = true
	}
	switch u := t.Underlying().(type) {
	case *types.Basic:
		switch {
		case u.Kind() == types.UnsafePointer:
			w.report(path, "is an unsafe.Pointer: encoding/json cannot save it"+unsaveable)
		case u.Info()&types.IsComplex != 0:
			w.report(path, "is a complex number: encoding/json cannot save it")
		}
	case *types.Chan:
		w.report(path, "is a channel: encoding/json cannot save it"+unsaveable)
	case *types.Signature:
		w.report(path, "is a func: encoding/json cannot save it"+unsaveable)
	case *types.Interface:
		w.report(path, "is an interface: encoding/json restores it as a map, a slice, a string, a float64 or a bool, not as the value saved")
	case *types.Pointer:
		w.walk(u.Elem(), path)
	case *types.Slice:
		w.walk(u.Elem(), path+"[]")
	case *types.Array:
		w.walk(u.Elem(), path+"[]")
	case *types.Map:
		if !jsonMapKey(u.Key()) {
			w.report(path, "is a map whose key type "+types.TypeString(u.Key(), w.qualifier)+" encoding/json cannot save (use strings, integers or a type implementing encoding.TextMarshaler)")
		}
		w.walk(u.Elem(), path+"[]")
	case *types.Struct:
		w.walkStruct(t, u, path)
	}
}

func (w *jsonWalker) walkStruct(t types.Type, s *types.Struct, path string) {
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg() != w.m.pkg.Types {
		// A struct of another package: its unexported fields are its own
		// business, reported once.
		for i := range s.NumFields() {
			if f := s.Field(i); !f.Exported() && !f.Embedded() {
				w.report(path, "is a "+types.TypeString(t, w.qualifier)+", whose unexported fields encoding/json does not save "+
					"(it implements neither json.Marshaler and json.Unmarshaler nor encoding.TextMarshaler and encoding.TextUnmarshaler); "+
					"tag the field `json:\"-\"` if it need not be saved")
				return
			}
		}
	}
	for i := range s.NumFields() {
		f := s.Field(i)
		if tag, _ := reflect.StructTag(s.Tag(i)).Lookup("json"); tag == "-" {
			continue // deliberately not saved
		}
		fpath := f.Name()
		if path != "" {
			fpath = path + "." + f.Name()
		}
		if path == "" {
			w.at = f.Pos()
		}
		if f.Embedded() && !f.Exported() {
			// encoding/json promotes the exported fields of an embedded
			// struct of an unexported type: they are saved.
			if _, ok := f.Type().Underlying().(*types.Struct); ok {
				w.walk(f.Type(), fpath)
				continue
			}
		}
		if !f.Exported() {
			w.report(fpath, "is unexported: encoding/json does not save it; tag it `json:\"-\"` if it need not be saved, "+
				"or implement json.Marshaler and json.Unmarshaler on "+types.TypeString(t, w.qualifier))
			continue
		}
		w.walk(f.Type(), fpath)
	}
}

func (w *jsonWalker) qualifier(p *types.Package) string {
	if p == w.m.pkg.Types {
		return ""
	}
	return p.Name()
}

// roundTrips reports whether t (or *t) has its own JSON or text encoding:
// both directions, so that encoding/json uses them to save and restore it.
func roundTrips(t types.Type) bool {
	ms := types.NewMethodSet(types.NewPointer(t))
	has := func(name string) bool { return ms.Lookup(nil, name) != nil }
	return (has("MarshalJSON") && has("UnmarshalJSON")) || (has("MarshalText") && has("UnmarshalText"))
}

// jsonMapKey reports whether encoding/json can save a map with keys of
// type k.
func jsonMapKey(k types.Type) bool {
	if b, ok := k.Underlying().(*types.Basic); ok && b.Info()&(types.IsString|types.IsInteger) != 0 {
		return true
	}
	return roundTrips(k)
}
