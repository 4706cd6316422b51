package gen

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
)

// routeModel is one //chat:route: a method of a scoped bean, or a func,
// that the generated Register adds as a route.
type routeModel struct {
	name      string    // the route name, NAME of the directive
	constName string    // the generated constant holding name: Route<Name>
	isDefault bool      // the default flag: a new conversation starts here
	roles     []string  // roles=: the caller needs one of them; nil for anyone
	dirPos    token.Pos // the //chat:route directive, for messages
	namePos   token.Pos // the route's NAME in the directive
	fn        *types.Func
	sig       *types.Signature

	// bean is the bean whose method the route calls; nil for a func route.
	// A struct with routes and no //chat:scoped is a chat-scoped bean.
	bean   *beanModel
	params []routeParam // the parameters in order, each with how it is bound

	result *routeResult // the value result; nil when there is none
	errRes bool         // the last result is an error, which fails the request
	event  string       // the route's own //chat:event type; "" for none

	// markdown means the route's text answers are rendered from markdown
	// (//chat:markdown on the route or its type).
	markdown bool
}

// paramKind says where a route parameter's argument comes from.
type paramKind uint8

const (
	paramData     paramKind = iota // decoded from the request data key of its name
	paramContext                   // the context
	paramUser                      // the user's text
	paramRequest                   // *chat.RouteRequest
	paramResponse                  // *chat.ResponseChannel
)

// routeParam is one parameter of a route.
type routeParam struct {
	name string // the parameter name: the request data key of a paramData
	typ  types.Type
	kind paramKind
}

// resultKind says how a route's value result is sent.
type resultKind uint8

const (
	resultValue resultKind = iota // SendValue
	resultSeq                     // iter.Seq[string]
	resultSeq2                    // iter.Seq2[string, error]
	resultAI                      // ai.Result[T]: its Send method
)

// routeResult is the value result of a route.
type routeResult struct {
	typ     types.Type
	kind    resultKind
	nilable bool // a pointer, interface, map or slice: nil sends nothing
}

// eventModel is a type with //chat:event: the generated ChatEventType
// method gives its values' event type.
type eventModel struct {
	obj  *types.TypeName // the annotated type
	name string          // the event type, TYPE of the directive
	pos  token.Pos       // the directive
}

// catchModel is a //chat:catch error handler: a func
// ([ctx context.Context,] err E) [error].
type catchModel struct {
	fn       *types.Func
	route    string     // route=: the only route it handles; "" for all
	routePos token.Pos  // the route= value, for messages
	errType  types.Type // E: the errors it handles, matched with errors.As
	iface    bool       // E is an interface type
	takesCtx bool       // its first parameter is a context.Context

	// returnsErr means it returns an error: a non-nil one fails the
	// request in place of the handled error.
	returnsErr bool
}

// userParamNames are the names that make a string parameter the user's
// text when no user= says which parameter is.
var userParamNames = []string{"userMessage", "msg", "message"}

// textParam returns the name of the parameter of fn that receives the
// user's text, by the one rule that routes and AI methods share: the
// parameter named by user= on the method's //chat:route (route, nil when it
// has none), else the string parameter called userMessage, msg or message.
// name is "" when there is no such parameter. ok is false when the choice
// is in error, reported to diags: user= naming no string parameter, or two
// candidate names without user=. who names fn in messages when route is
// nil. Each fn is checked once; later calls return the first answer.
func (m *pkgModel) textParam(fn *types.Func, route *routeDirective, who string, diags *Diagnostics) (name string, ok bool) {
	if tp, done := m.textParams[fn]; done {
		return tp.name, tp.ok
	}
	name, ok = m.findTextParam(fn, route, who, diags)
	if m.textParams == nil {
		m.textParams = map[*types.Func]textParamResult{}
	}
	m.textParams[fn] = textParamResult{name: name, ok: ok}
	return name, ok
}

// textParamResult is the memoized answer of textParam.
type textParamResult struct {
	name string
	ok   bool
}

func (m *pkgModel) findTextParam(fn *types.Func, route *routeDirective, who string, diags *Diagnostics) (string, bool) {
	params := fn.Type().(*types.Signature).Params()
	if route != nil && route.user.value != "" {
		user := route.user
		i := paramIndex(params, user.value)
		switch {
		case i < 0:
			diags.errorf(m.fset.Position(user.pos), "//chat:route %s: user=%s names no parameter of %s", route.name.value, user.value, fn.Name())
			return "", false
		case !isString(params.At(i).Type()):
			diags.errorf(m.fset.Position(user.pos), "//chat:route %s: user=%s names a parameter of type %s; the user's text is a string", route.name.value, user.value, m.typeString(params.At(i).Type()))
			return "", false
		}
		return user.value, true
	}
	var cands []*types.Var
	for i := range params.Len() {
		if p := params.At(i); slices.Contains(userParamNames, p.Name()) && isString(p.Type()) {
			cands = append(cands, p)
		}
	}
	switch len(cands) {
	case 0:
		return "", true
	case 1:
		return cands[0].Name(), true
	}
	names := make([]string, len(cands))
	for i, p := range cands {
		names[i] = p.Name()
	}
	verb := "both"
	if len(cands) > 2 {
		verb = "all"
	}
	if route != nil {
		diags.errorf(m.fset.Position(cands[1].Pos()), "route %s: %s could %s be the user's text; choose one with user=NAME on //chat:route", route.name.value, joinAnd(names), verb)
	} else {
		diags.errorf(m.fset.Position(cands[1].Pos()), "%s: %s could %s be the user's text; choose one with //chat:user {{.NAME}}", who, joinAnd(names), verb)
	}
	return "", false
}

// analyzeRoute checks a //chat:route on a method or func.
func (m *pkgModel) analyzeRoute(a *annotated, d *routeDirective, diags *Diagnostics) {
	r := &routeModel{name: d.name.value, namePos: d.name.pos, isDefault: d.isDefault, roles: d.roles, dirPos: d.pos}
	pos := m.fset.Position(d.pos)
	var obj types.Object
	switch n := a.node.(type) {
	case *ast.FuncDecl:
		obj = m.pkg.TypesInfo.Defs[n.Name]
	case *ast.Field:
		if len(n.Names) > 0 {
			obj = m.pkg.TypesInfo.Defs[n.Names[0]]
		}
	}
	fn, _ := obj.(*types.Func)
	if fn == nil {
		diags.errorf(pos, "cannot resolve %s", a.name)
		return
	}
	r.fn = fn
	r.sig = fn.Type().(*types.Signature)
	if a.target == targetMethod || a.target == targetInterfaceMethod {
		r.bean = m.routeBean(a, d, diags)
		if r.bean == nil {
			return
		}
		if recv := r.sig.Recv(); a.target == targetMethod && !r.bean.iface && recv != nil {
			if _, isPtr := recv.Type().(*types.Pointer); !isPtr {
				diags.warnf(m.fset.Position(fn.Pos()), "route %s: %s has a value receiver, so what it changes in %s is lost when it returns: the scope keeps a *%s; use a pointer receiver", r.name, fn.Name(), a.recv, a.recv)
			}
		}
	}
	if ev, ok := first[*eventDirective](a); ok && m.checkEventType(ev, diags) {
		r.event = ev.typ.value
	}

	// Parameters.
	params := r.sig.Params()
	userName, ok := m.textParam(fn, d, "", diags)
	if r.sig.Variadic() {
		diags.errorf(m.fset.Position(fn.Pos()), "route %s: %s cannot be variadic", r.name, fn.Name())
		return
	}
	for i := range params.Len() {
		p := params.At(i)
		rp := routeParam{name: p.Name(), typ: p.Type()}
		ppos := m.fset.Position(p.Pos())
		if !p.Pos().IsValid() {
			ppos = m.fset.Position(fn.Pos())
		}
		switch {
		case isContext(p.Type()):
			rp.kind = paramContext
		case isChatType(p.Type(), "RouteRequest"):
			rp.kind = paramRequest
		case isChatType(p.Type(), "ResponseChannel"):
			rp.kind = paramResponse
		case p.Name() == "" || p.Name() == "_":
			diags.errorf(ppos, "route %s: parameter %d of %s needs a name: route parameters are bound to the request data key of their name", r.name, i+1, fn.Name())
			ok = false
		case userName != "" && p.Name() == userName:
			rp.kind = paramUser
		default:
			if why := notDecodable(p.Type(), nil); why != "" {
				diags.errorf(ppos, "route %s: parameter %s has type %s, which cannot be decoded from JSON request data (%s)", r.name, p.Name(), m.typeString(p.Type()), why)
				ok = false
			}
		}
		r.params = append(r.params, rp)
	}

	// Results.
	res := r.sig.Results()
	n := res.Len()
	if n > 0 && isError(res.At(n-1).Type()) {
		r.errRes = true
		n--
	}
	switch {
	case n > 1 || (n == 1 && res.Len() == 2 && !r.errRes):
		diags.errorf(m.fset.Position(fn.Pos()), "route %s: %s must return at most one value and an error; %s", r.name, fn.Name(), routeResults)
		ok = false
	case n == 1:
		t := res.At(0).Type()
		rr := &routeResult{typ: t}
		if isAIResult(t) {
			rr.kind = resultAI
		} else if seq, elem, isSeq := iterSeq(t); isSeq {
			switch {
			case seq == "Seq" && isString(elem[0]):
				rr.kind = resultSeq
			case seq == "Seq2" && isString(elem[0]) && isError(elem[1]):
				rr.kind = resultSeq2
			default:
				diags.errorf(m.fset.Position(fn.Pos()), "route %s: a route can stream iter.Seq[string] or iter.Seq2[string, error], not %s; %s", r.name, m.typeString(t), routeResults)
				ok = false
			}
		} else {
			switch t.Underlying().(type) {
			case *types.Pointer, *types.Interface, *types.Map, *types.Slice:
				rr.nilable = true
			case *types.Signature, *types.Chan:
				diags.errorf(m.fset.Position(fn.Pos()), "route %s: a route cannot return %s: it cannot be sent as an event; %s", r.name, m.typeString(t), routeResults)
				ok = false
			}
		}
		r.result = rr
	}
	if ok {
		ok = m.routeMarkdown(a, r, diags)
	}
	if !ok {
		return
	}
	m.routes = append(m.routes, r)
}

// routeMarkdown decides whether the route renders its text answers from
// markdown: //chat:markdown on the route needs a route that answers with
// text; on its type, it applies to the type's routes that do.
func (m *pkgModel) routeMarkdown(a *annotated, r *routeModel, diags *Diagnostics) bool {
	own, onRoute := first[*markdownDirective](a)
	_, onType := m.markdownTypes[a.recv]
	if !onRoute && (!onType || r.bean == nil) {
		return true
	}
	text := r.result != nil && r.event == "" && m.textResult(r.result)
	if !onRoute {
		r.markdown = text
		return true
	}
	pos := m.fset.Position(own.pos)
	switch {
	case r.event != "":
		diags.errorf(pos, "//chat:markdown on route %s: the route sends its result as %s events (//chat:event), not as text", r.name, r.event)
		return false
	case r.result == nil:
		diags.errorf(pos, "//chat:markdown on route %s: %s returns no answer to render", r.name, r.fn.Name())
		return false
	case !text:
		diags.errorf(pos, "//chat:markdown on route %s: %s returns %s; markdown renders text answers: a string, ai.Result[string], iter.Seq[string] or iter.Seq2[string, error]", r.name, r.fn.Name(), m.typeString(r.result.typ))
		return false
	}
	r.markdown = true
	return true
}

// textResult reports whether a route's result is text: a string, an
// ai.Result[string], or a stream of strings.
func (m *pkgModel) textResult(rr *routeResult) bool {
	switch rr.kind {
	case resultSeq, resultSeq2:
		return true
	case resultAI:
		n, _ := types.Unalias(rr.typ).(*types.Named)
		return n != nil && n.TypeArgs().Len() == 1 && isString(n.TypeArgs().At(0))
	}
	return isString(rr.typ)
}

// checkMarkdown checks the //chat:markdown of types: a type must have a
// route that answers with text, or the directive does nothing.
func (m *pkgModel) checkMarkdown(diags *Diagnostics) {
	for name, d := range m.markdownTypes {
		used := slices.ContainsFunc(m.routes, func(r *routeModel) bool {
			return r.markdown && r.bean != nil && r.bean.obj.Name() == name
		})
		if !used {
			diags.errorf(m.fset.Position(d.pos), "//chat:markdown on %s: it has no route that answers with text (a string, ai.Result[string], iter.Seq[string] or iter.Seq2[string, error])", name)
		}
	}
}

// routeBean returns the bean of a route method's receiver. A struct with
// no //chat:scoped is chat-scoped implicitly.
func (m *pkgModel) routeBean(a *annotated, d *routeDirective, diags *Diagnostics) *beanModel {
	if b := m.beanNamed(a.recv); b != nil {
		return b
	}
	spec := m.typeSpec(a.recv)
	if spec == nil {
		diags.errorf(m.fset.Position(d.pos), "cannot find the declaration of %s", a.recv)
		return nil
	}
	if _, isIface := spec.Type.(*ast.InterfaceType); isIface {
		diags.errorf(m.fset.Position(d.pos), "//chat:route on a method of %s: the interface needs //chat:scoped (or //chat:ai)", a.recv)
		return nil
	}
	if _, isStruct := spec.Type.(*ast.StructType); !isStruct {
		diags.errorf(m.fset.Position(d.pos), "//chat:route on a method of %s: routes live on struct types, scoped interfaces or funcs", a.recv)
		return nil
	}
	return m.addBean(spec, kindChat, "the routes of "+a.recv, diags)
}

func (m *pkgModel) typeSpec(name string) *ast.TypeSpec {
	obj := m.pkg.Types.Scope().Lookup(name)
	if obj == nil {
		return nil
	}
	for _, f := range m.pkg.Syntax {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				if ts := s.(*ast.TypeSpec); ts.Name.Pos() == obj.Pos() {
					return ts
				}
			}
		}
	}
	return nil
}

// analyzeEvent checks //chat:event on a type; on routes it is read by
// analyzeRoute.
func (m *pkgModel) analyzeEvent(a *annotated, d *eventDirective, diags *Diagnostics) {
	spec, ok := a.node.(*ast.TypeSpec)
	if !ok {
		return
	}
	obj, _ := m.pkg.TypesInfo.Defs[spec.Name].(*types.TypeName)
	if obj == nil {
		return
	}
	pos := m.fset.Position(d.pos)
	if !m.checkEventType(d, diags) {
		return
	}
	if _, isIface := obj.Type().Underlying().(*types.Interface); isIface {
		diags.errorf(pos, "//chat:event cannot annotate the interface %s: put it on the types that implement it", obj.Name())
		return
	}
	if spec.Assign.IsValid() || spec.TypeParams != nil {
		diags.errorf(pos, "//chat:event cannot annotate %s: an alias or generic type cannot have methods added", obj.Name())
		return
	}
	if sel := types.NewMethodSet(types.NewPointer(obj.Type())).Lookup(m.pkg.Types, "ChatEventType"); sel != nil {
		diags.errorf(pos, "//chat:event on %s: the type already has a ChatEventType method", obj.Name())
		return
	}
	m.events = append(m.events, &eventModel{obj: obj, name: d.typ.value, pos: d.pos})
}

// checkEventType reports whether the type of a //chat:event may be sent
// by routes: Completed and Failed end a request and only the transport
// sends them (the runtime refuses them too, with chat.ErrReservedEvent).
func (m *pkgModel) checkEventType(d *eventDirective, diags *Diagnostics) bool {
	if d.typ.value != "Completed" && d.typ.value != "Failed" {
		return true
	}
	diags.errorf(m.fset.Position(d.typ.pos), "//chat:event %s: Completed and Failed are reserved: they end a request, and only the transport sends them; choose another event type", d.typ.value)
	return false
}

// analyzeCatch checks a //chat:catch error handler: func([ctx,] err E) [error].
func (m *pkgModel) analyzeCatch(a *annotated, d *catchDirective, diags *Diagnostics) {
	fd, ok := a.node.(*ast.FuncDecl)
	if !ok {
		return
	}
	fn, _ := m.pkg.TypesInfo.Defs[fd.Name].(*types.Func)
	if fn == nil {
		return
	}
	c := &catchModel{fn: fn, route: d.route.value, routePos: d.route.pos}
	sig := fn.Type().(*types.Signature)
	pos := m.fset.Position(fd.Name.Pos())
	params := sig.Params()
	i := 0
	if params.Len() > 0 && isContext(params.At(0).Type()) {
		c.takesCtx = true
		i = 1
	}
	errorIface := types.Universe.Lookup("error").Type().Underlying().(*types.Interface)
	if params.Len() != i+1 || !types.Implements(params.At(i).Type(), errorIface) {
		diags.errorf(pos, "//chat:catch %s must take ([ctx context.Context,] err E) where E is an error type", fn.Name())
		return
	}
	c.errType = params.At(i).Type()
	_, c.iface = c.errType.Underlying().(*types.Interface)
	res := sig.Results()
	switch {
	case res.Len() == 0:
	case res.Len() == 1 && isError(res.At(0).Type()):
		c.returnsErr = true
	default:
		diags.errorf(pos, "//chat:catch %s must return nothing or an error", fn.Name())
		return
	}
	m.catches = append(m.catches, c)
}

// checkRoutes checks what needs every route: unique names, one default,
// catch handlers naming known routes.
func (m *pkgModel) checkRoutes(diags *Diagnostics) {
	seen := map[string]*routeModel{}
	var def *routeModel
	for _, r := range m.routes {
		if prev, dup := seen[r.name]; dup {
			diags.errorf(m.fset.Position(r.namePos), "route %s is declared twice", r.name).Related = []Related{
				{Pos: m.fset.Position(prev.namePos), Message: "first declared here"},
			}
			continue
		}
		seen[r.name] = r
		r.constName = "Route" + routeIdent(r.name)
		m.declare(r.constName, r.namePos, "route "+r.name, diags)
		if r.isDefault {
			if def != nil {
				diags.errorf(m.fset.Position(r.dirPos), "route %s: a second default route", r.name).Related = []Related{
					{Pos: m.fset.Position(def.dirPos), Message: "the default route is " + def.name},
				}
				continue
			}
			def = r
		}
	}
	for _, c := range m.catches {
		if c.route != "" && seen[c.route] == nil {
			names := make([]string, 0, len(seen))
			for n := range seen {
				names = append(names, n)
			}
			slices.Sort(names)
			msg := fmt.Sprintf("//chat:catch %s: no route %s in this package", c.fn.Name(), c.route)
			if s, ok := suggest(c.route, names); ok {
				msg += fmt.Sprintf("; did you mean %s?", s)
			}
			diags.errorf(m.fset.Position(c.routePos), "%s", msg)
		}
	}
}

// routeResults says what a route may return, for the errors about what it
// may not.
const routeResults = "allowed: nothing, error, T or (T, error), where T is string, " +
	"iter.Seq[string], iter.Seq2[string, error], ai.Result or another value encoding/json can send"

func paramIndex(t *types.Tuple, name string) int {
	for i := range t.Len() {
		if t.At(i).Name() == name {
			return i
		}
	}
	return -1
}

func isString(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Kind() == types.String && types.Identical(t, types.Typ[types.String])
}

func isChatType(t types.Type, name string) bool {
	p, ok := t.(*types.Pointer)
	if !ok {
		return false
	}
	n, ok := p.Elem().(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == chatPkg && n.Obj().Name() == name
}

// iterSeq reports whether t is iter.Seq[E] or iter.Seq2[K, V].
func iterSeq(t types.Type) (string, []types.Type, bool) {
	var obj *types.TypeName
	var args *types.TypeList
	switch t := t.(type) {
	case *types.Named:
		obj, args = t.Obj(), t.TypeArgs()
	case *types.Alias:
		obj, args = t.Obj(), t.TypeArgs()
	default:
		return "", nil, false
	}
	if obj.Pkg() == nil || obj.Pkg().Path() != "iter" || (obj.Name() != "Seq" && obj.Name() != "Seq2") {
		return "", nil, false
	}
	var elems []types.Type
	for i := range args.Len() {
		elems = append(elems, args.At(i))
	}
	return obj.Name(), elems, true
}

// notDecodable explains why encoding/json cannot decode into t, or
// returns "".
func notDecodable(t types.Type, seen map[types.Type]bool) string {
	if seen[t] {
		return ""
	}
	if seen == nil {
		seen = map[types.Type]bool{}
	}
	seen[t] = true
	switch u := t.Underlying().(type) {
	case *types.Signature:
		return "a func"
	case *types.Chan:
		return "a channel"
	case *types.Basic:
		switch u.Kind() {
		case types.UnsafePointer:
			return "unsafe.Pointer"
		case types.Complex64, types.Complex128:
			return "a complex number"
		}
	case *types.Interface:
		if !u.Empty() && !isNamed(t) {
			return "an interface with methods"
		}
		if !u.Empty() {
			return "an interface type: JSON cannot choose its implementation"
		}
	case *types.Pointer:
		return notDecodable(u.Elem(), seen)
	case *types.Slice:
		return notDecodable(u.Elem(), seen)
	case *types.Array:
		return notDecodable(u.Elem(), seen)
	case *types.Map:
		return notDecodable(u.Elem(), seen)
	}
	return ""
}

func isNamed(t types.Type) bool {
	switch t.(type) {
	case *types.Named, *types.Alias:
		return true
	}
	return false
}
