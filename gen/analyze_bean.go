package gen

import (
	"fmt"
	"go/ast"
	"go/types"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// beanModel is one scoped type: a //chat:scoped type, a //chat:ai
// interface, a struct with routes, or a tool box. The generated code gives
// it a chat.Bean descriptor, an accessor and a proxy.
type beanModel struct {
	spec     *ast.TypeSpec
	obj      *types.TypeName
	kind     beanKind // how long its instances live
	durable  bool     // saved with durable conversations (//chat:scoped durable)
	exported bool     // //chat:scoped proxy: proxy and accessor whether used here or not
	iface    bool     // an interface type: instances come from its constructor or AI service
	ctor     *ctorModel
	methods  []*methodModel // the methods its proxy forwards
	ai       *aiModel       // the //chat:ai service it is, if any
	proxy    string         // proxy type, generated when emitProxy
	accessor string         // accessor func, generated when emitAccessor
	beanVar  string         // generated chat.Bean descriptor

	// emitProxy and emitAccessor say whether the proxy and the accessor
	// are generated: when the package's own files (tests included) name
	// them, or with //chat:scoped proxy.
	emitProxy, emitAccessor bool
}

// ctorModel is the constructor of a bean: New<Type> (newType for
// unexported types), func([ctx context.Context,] deps...) (T[, error]).
type ctorModel struct {
	fn       *types.Func
	takesCtx bool        // its first parameter is a context.Context
	deps     []*depModel // its other parameters, in order, injected from Deps
	err      bool        // it returns an error as its second result
}

// depModel is one application dependency: a field of the generated Deps,
// passed to every constructor that takes its type.
type depModel struct {
	typ   types.Type // a named type or a pointer to one
	field string     // the Deps field, named after the type
	users []string   // the constructors that take it, in order
}

// methodModel is one method a proxy forwards.
type methodModel struct {
	fn       *types.Func
	sig      *types.Signature
	takesCtx bool     // the method's first parameter is a context.Context
	names    []string // parameter names the proxy uses (ctx first when added)
	ctxName  string   // the proxy's context parameter
	err      bool     // the last result is error
}

func (m *pkgModel) analyzeBean(a *annotated, d *scopedDirective, diags *Diagnostics) {
	spec, ok := a.node.(*ast.TypeSpec)
	if !ok {
		return // collect already reported the wrong target
	}
	b := m.addBean(spec, d.kind, "//chat:scoped "+spec.Name.Name, diags)
	if b != nil && d.durable {
		m.checkDurable(b, d, diags)
		b.durable = true
	}
	if b != nil {
		b.exported = d.proxy
	}
}

// addBean adds the scoped type declared by spec. what names the reason in
// messages.
func (m *pkgModel) addBean(spec *ast.TypeSpec, kind beanKind, what string, diags *Diagnostics) *beanModel {
	pos := m.fset.Position(spec.Pos())
	obj, _ := m.pkg.TypesInfo.Defs[spec.Name].(*types.TypeName)
	if obj == nil {
		diags.errorf(pos, "cannot resolve type %s", spec.Name.Name)
		return nil
	}
	if spec.Assign.IsValid() {
		diags.errorf(m.fset.Position(spec.Name.Pos()), "%s: cannot scope the alias %s; annotate the type it names", what, spec.Name.Name)
		return nil
	}
	if spec.TypeParams != nil {
		diags.errorf(m.fset.Position(spec.Name.Pos()), "%s: cannot scope the generic type %s", what, spec.Name.Name)
		return nil
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		return nil
	}
	b := &beanModel{
		spec: spec,
		obj:  obj,
		kind: kind,
	}
	_, b.iface = named.Underlying().(*types.Interface)

	name := obj.Name()
	b.proxy = name + "Proxy"
	b.accessor = name + "From"
	b.beanVar = "chatBean" + name
	m.declare(b.proxy, spec.Pos(), what, diags)
	m.declare(b.accessor, spec.Pos(), what, diags)
	m.declare(b.beanVar, spec.Pos(), what, diags)

	b.ctor = m.findConstructor(b, diags)
	if b.iface && b.ctor == nil && !m.aiTypes[spec.Name.Name] {
		diags.errorf(m.fset.Position(spec.Name.Pos()), "scoped interface %s needs a constructor: func %s(ctx context.Context, deps...) (%s, error)", name, ctorName(name), name)
	}
	b.methods = m.proxyMethods(b, named, diags)
	m.beans = append(m.beans, b)
	return b
}

func ctorName(typeName string) string {
	r, size := utf8.DecodeRuneInString(typeName)
	if unicode.IsUpper(r) {
		return "New" + typeName
	}
	return "new" + string(unicode.ToUpper(r)) + typeName[size:]
}

// findConstructor finds and checks the bean's constructor, if it has one.
func (m *pkgModel) findConstructor(b *beanModel, diags *Diagnostics) *ctorModel {
	name := ctorName(b.obj.Name())
	obj := m.pkg.Types.Scope().Lookup(name)
	if obj == nil {
		return nil
	}
	pos := m.fset.Position(obj.Pos())
	fn, ok := obj.(*types.Func)
	if !ok {
		diags.errorf(pos, "%s must be a func: it is the constructor of the scoped type %s", name, b.obj.Name())
		return nil
	}
	if decl := m.funcDecl(fn); decl != nil {
		m.extraNodes = append(m.extraNodes, decl)
	}
	sig := fn.Type().(*types.Signature)
	want := b.obj.Name()
	if !b.iface {
		want = "*" + want
	}
	if sig.TypeParams().Len() > 0 {
		diags.errorf(pos, "constructor %s of %s cannot be generic", name, b.obj.Name())
		return nil
	}
	c := &ctorModel{fn: fn}
	res := sig.Results()
	okResults := res.Len() == 1 || (res.Len() == 2 && isError(res.At(1).Type()))
	if okResults {
		var got types.Type = b.obj.Type()
		if !b.iface {
			got = types.NewPointer(got)
		}
		okResults = types.Identical(res.At(0).Type(), got)
	}
	if !okResults {
		diags.errorf(pos, "constructor %s must return %s or (%s, error)", name, want, want)
		return nil
	}
	c.err = res.Len() == 2
	if sig.Variadic() {
		diags.errorf(pos, "constructor %s cannot be variadic", name)
		return nil
	}
	params := sig.Params()
	good := true
	for i := range params.Len() {
		p := params.At(i)
		ppos := m.fset.Position(p.Pos())
		switch {
		case i == 0 && isContext(p.Type()):
			c.takesCtx = true
		case isContext(p.Type()):
			diags.errorf(ppos, "constructor %s: the context.Context must be the first parameter", name)
			good = false
		case !isInjectable(p.Type()):
			diags.errorf(ppos, "constructor %s: parameter %s has type %s; dependencies are injected by type, so they need a named type (declare one)", name, p.Name(), m.typeString(p.Type()))
			good = false
		default:
			d := m.dep(p.Type(), name)
			if slices.Contains(c.deps, d) {
				diags.errorf(ppos, "constructor %s takes two parameters of type %s; dependencies are injected by type", name, m.typeString(p.Type()))
				good = false
			}
			c.deps = append(c.deps, d)
		}
	}
	if !good {
		return nil
	}
	return c
}

// typeString writes t for a message, qualifying other packages' types by
// package name as Go source does.
func (m *pkgModel) typeString(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string {
		if p == m.pkg.Types {
			return ""
		}
		return p.Name()
	})
}

func (m *pkgModel) funcDecl(fn *types.Func) *ast.FuncDecl {
	for _, f := range m.pkg.Syntax {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Pos() == fn.Pos() {
				return fd
			}
		}
	}
	return nil
}

// isInjectable reports whether t names a type precisely enough to inject by
// type: a named type, or a pointer to one.
func isInjectable(t types.Type) bool {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	switch t := t.(type) {
	case *types.Named:
		return t.Obj().Pkg() != nil // not error or comparable
	case *types.Alias:
		return t.Obj().Pkg() != nil && isInjectable(types.Unalias(t))
	}
	return false
}

// dep returns the dependency of type t, adding it on first use.
func (m *pkgModel) dep(t types.Type, user string) *depModel {
	for _, d := range m.deps {
		if types.Identical(d.typ, t) {
			if !slices.Contains(d.users, user) {
				d.users = append(d.users, user)
			}
			return d
		}
	}
	d := &depModel{typ: t, users: []string{user}}
	m.deps = append(m.deps, d)
	return d
}

// analyzeDeps names the fields of Deps after their types, qualifying a name
// with its package when two types share it.
func (m *pkgModel) analyzeDeps(diags *Diagnostics) {
	if !m.hasDeps() {
		return
	}
	base := func(t types.Type) *types.TypeName {
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		switch t := t.(type) {
		case *types.Named:
			return t.Obj()
		case *types.Alias:
			return t.Obj()
		}
		return nil
	}
	count := map[string]int{}
	for _, d := range m.deps {
		count[upperFirst(base(d.typ).Name())]++
	}
	used := map[string]bool{}
	for _, s := range m.ais {
		used[s.field] = true
	}
	for _, d := range m.deps {
		obj := base(d.typ)
		name := upperFirst(obj.Name())
		if count[name] > 1 && obj.Pkg() != nil && obj.Pkg() != m.pkg.Types {
			name = packageQualifier(obj.Pkg()) + name
		}
		for i := 2; used[name]; i++ {
			name = fmt.Sprintf("%s%d", strings.TrimRight(name, "0123456789"), i)
		}
		used[name] = true
		d.field = name
	}
	m.declare("Deps", m.beans[0].spec.Pos(), "the dependencies of this package's constructors", diags)
}

// packageQualifier names a package for a field name: the path element
// before its last one when there is one ("text/template" gives "Text"),
// else its name.
func packageQualifier(p *types.Package) string {
	elems := strings.Split(p.Path(), "/")
	q := p.Name()
	if len(elems) >= 2 {
		q = elems[len(elems)-2]
	}
	q = strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, q)
	if q == "" {
		q = p.Name()
	}
	return upperFirst(q)
}

// hasDeps reports whether the package's Register takes a Deps.
func (m *pkgModel) hasDeps() bool { return len(m.deps) > 0 || len(m.ais) > 0 }

// upperFirst returns name with its first letter in upper case.
func upperFirst(name string) string {
	r, size := utf8.DecodeRuneInString(name)
	return string(unicode.ToUpper(r)) + name[size:]
}

// proxyMethods lists the methods a bean's proxy forwards, except the
// lifecycle methods Close, Destroy and DetachBean: the methods of an interface (all of
// them: the proxy implements it), or the exported methods of a struct
// pointer, as a caller sees them: its own in source order, then those
// promoted from its embedded fields, in field order. A struct's unexported
// methods are helpers, not proxied (changing one needs no go generate).
func (m *pkgModel) proxyMethods(b *beanModel, named *types.Named, diags *Diagnostics) []*methodModel {
	var fns []*types.Func
	var sigs []*types.Signature
	if iface, ok := named.Underlying().(*types.Interface); ok {
		for i := range iface.NumMethods() {
			fns = append(fns, iface.Method(i))
			sigs = append(sigs, iface.Method(i).Type().(*types.Signature))
		}
	} else {
		for _, sel := range m.structMethods(named) {
			fns = append(fns, sel.Obj().(*types.Func))
			sigs = append(sigs, sel.Type().(*types.Signature))
		}
	}
	var out []*methodModel
	for i, fn := range fns {
		sig := sigs[i]
		if isLifecycle(fn.Name(), sig) || isEncoding(fn.Name()) {
			continue
		}
		mm := &methodModel{fn: fn, sig: sig}
		params := sig.Params()
		mm.takesCtx = params.Len() > 0 && isContext(params.At(0).Type())
		taken := map[string]bool{}
		for i := range params.Len() {
			taken[params.At(i).Name()] = true
		}
		if !mm.takesCtx {
			mm.ctxName = "ctx"
			for i := 0; taken[mm.ctxName]; i++ {
				mm.ctxName = fmt.Sprintf("ctx%d", i)
			}
			mm.names = append(mm.names, mm.ctxName)
		}
		for i := range params.Len() {
			n := params.At(i).Name()
			if n == "" || n == "_" {
				n = fmt.Sprintf("p%d", i)
				for taken[n] {
					n += "_"
				}
			}
			mm.names = append(mm.names, n)
		}
		mm.names = m.unshadow(mm.names, packageNames(sig)...)
		mm.ctxName = mm.names[0] // the method's own context, or the one the proxy adds
		res := sig.Results()
		mm.err = res.Len() > 0 && isError(res.At(res.Len()-1).Type())
		out = append(out, mm)
	}
	return out
}

// structMethods returns the exported methods in the method set of *named:
// its own in source order, then the promoted ones by the path of embedded
// fields that reaches them. A promoted method whose signature names a type
// this package cannot refer to (unexported, of another package) is left
// out: the proxy could not declare it.
func (m *pkgModel) structMethods(named *types.Named) []*types.Selection {
	mset := types.NewMethodSet(types.NewPointer(named))
	var own, promoted []*types.Selection
	for i := range mset.Len() {
		sel := mset.At(i)
		if !sel.Obj().Exported() {
			continue
		}
		if len(sel.Index()) == 1 {
			own = append(own, sel)
		} else if m.referable(sel.Type(), map[types.Type]bool{}) {
			promoted = append(promoted, sel)
		}
	}
	slices.SortFunc(own, func(a, b *types.Selection) int { return comparePos(m.fset, a.Obj().Pos(), b.Obj().Pos()) })
	slices.SortFunc(promoted, func(a, b *types.Selection) int { return slices.Compare(a.Index(), b.Index()) })
	return append(own, promoted...)
}

// referable reports whether code in this package can write t: every type
// it names is exported or declared here.
func (m *pkgModel) referable(t types.Type, seen map[types.Type]bool) bool {
	if seen[t] {
		return true
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Named, *types.Alias:
		obj, args := typeNameOf(t)
		if obj.Pkg() != nil && obj.Pkg() != m.pkg.Types && !obj.Exported() {
			return false
		}
		for i := range args.Len() {
			if !m.referable(args.At(i), seen) {
				return false
			}
		}
		return true
	case *types.Pointer:
		return m.referable(t.Elem(), seen)
	case *types.Slice:
		return m.referable(t.Elem(), seen)
	case *types.Array:
		return m.referable(t.Elem(), seen)
	case *types.Chan:
		return m.referable(t.Elem(), seen)
	case *types.Map:
		return m.referable(t.Key(), seen) && m.referable(t.Elem(), seen)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for i := range tup.Len() {
				if !m.referable(tup.At(i).Type(), seen) {
					return false
				}
			}
		}
		return true
	case *types.Struct:
		for i := range t.NumFields() {
			f := t.Field(i)
			if f.Pkg() != nil && f.Pkg() != m.pkg.Types && !f.Exported() || !m.referable(f.Type(), seen) {
				return false
			}
		}
		return true
	case *types.Interface:
		for i := range t.NumMethods() {
			f := t.Method(i)
			if f.Pkg() != nil && f.Pkg() != m.pkg.Types && !f.Exported() || !m.referable(f.Type(), seen) {
				return false
			}
		}
		return true
	}
	return true
}

// packageNames lists the names of the packages whose types sig refers to.
func packageNames(sig *types.Signature) []string {
	var names []string
	seen := map[types.Type]bool{}
	var walk func(t types.Type)
	walk = func(t types.Type) {
		if seen[t] {
			return
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Named, *types.Alias:
			obj, args := typeNameOf(t)
			if obj.Pkg() != nil {
				names = append(names, obj.Pkg().Name())
			}
			for i := range args.Len() {
				walk(args.At(i))
			}
		case *types.Pointer:
			walk(t.Elem())
		case *types.Slice:
			walk(t.Elem())
		case *types.Array:
			walk(t.Elem())
		case *types.Chan:
			walk(t.Elem())
		case *types.Map:
			walk(t.Key())
			walk(t.Elem())
		case *types.Signature:
			for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
				for i := range tup.Len() {
					walk(tup.At(i).Type())
				}
			}
		case *types.Struct:
			for i := range t.NumFields() {
				walk(t.Field(i).Type())
			}
		}
	}
	walk(sig)
	return names
}

// typeNameOf returns the type name and type arguments of a named type or
// alias.
func typeNameOf(t types.Type) (*types.TypeName, *types.TypeList) {
	switch t := t.(type) {
	case *types.Named:
		return t.Obj(), t.TypeArgs()
	case *types.Alias:
		return t.Obj(), t.TypeArgs()
	}
	return nil, nil
}

// isLifecycle reports whether a method is one the runtime calls itself,
// so the proxy does not forward it: Close or Destroy with no parameters
// and no result or an error, called when the bean's scope ends, or
// DetachBean(context.Context) error (chat.DetachableBean), called when
// its scope leaves the process without ending.
func isLifecycle(name string, sig *types.Signature) bool {
	p, r := sig.Params(), sig.Results()
	switch name {
	case "Close", "Destroy":
		return p.Len() == 0 && (r.Len() == 0 || (r.Len() == 1 && isError(r.At(0).Type())))
	case "DetachBean":
		return p.Len() == 1 && isContext(p.At(0).Type()) && r.Len() == 1 && isError(r.At(0).Type())
	}
	return false
}

// isEncoding reports whether a method is one of the encoding methods the
// standard library calls (json.Marshaler and the like, which durable beans
// implement to save unexported state): the proxy does not forward them,
// and vet would reject them with the context parameter a proxy adds.
func isEncoding(name string) bool {
	switch name {
	case "MarshalJSON", "UnmarshalJSON", "MarshalText", "UnmarshalText", "MarshalBinary", "UnmarshalBinary", "GobEncode", "GobDecode":
		return true
	}
	return false
}

// beanNamed returns the scoped bean of the type called name, or nil.
func (m *pkgModel) beanNamed(name string) *beanModel {
	for _, b := range m.beans {
		if b.obj.Name() == name {
			return b
		}
	}
	return nil
}

// unshadow renames the parameters whose names would hide a package the
// generated file uses (a parameter called chat, say), keeping the others.
// extra names more packages: those of a promoted method's signature, which
// this package need not import itself.
func (m *pkgModel) unshadow(names []string, extra ...string) []string {
	reserved := map[string]bool{"chat": true, "context": true, "ai": true, "json": true, "llms": true, "template": true, "iter": true}
	for _, p := range m.pkg.Types.Imports() {
		reserved[p.Name()] = true
	}
	for _, n := range extra {
		reserved[n] = true
	}
	used := newLocals(names)
	for n := range reserved {
		used[n] = true
	}
	out := slices.Clone(names)
	for i, n := range out {
		if reserved[n] {
			out[i] = used.fresh(n)
		}
	}
	return out
}
