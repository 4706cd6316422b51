package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"go/token"
	"go/types"
	"maps"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"
)

const (
	chatPkg     = "github.com/chatscopes/chatgen/runtime/chat"
	implPkg     = "github.com/chatscopes/chatgen/runtime/chatimpl"
	contextPkg  = "context"
	markdownPkg = "github.com/chatscopes/chatgen/runtime/markdown"
)

// emitter writes the chat_gen.go of one package.
type emitter struct {
	m   *pkgModel
	f   *jen.File
	tc  *typeCoder
	err error // the first type that could not be rendered

	// reserved are the identifiers generated locals avoid, and the
	// package-level ones taken (see reservedNames and topName).
	reserved map[string]bool
	// routeFuncs and catchFuncs name the generated functions of the
	// routes and error handlers, in the model's order.
	routeFuncs, catchFuncs []string
	// manifest is the package's route manifest (nil without routes) and
	// manifestFn the name of the function returning it.
	manifest   *manifestModel
	manifestFn string
	// pathConst names the constant holding the package's import path,
	// which prefixes the run-time names of its beans and AI services.
	pathConst string
}

// emit renders the package's output, formatted like goimports.
//
// The file reads top-down: the guards a stale file trips first (the
// runtime version and the compile-time assertions), then Deps and
// Register, the route and error-handler functions, the scoped beans and
// their proxies, the event types and the AI services.
func emit(m *pkgModel) ([]byte, error) {
	f := jen.NewFilePathName(m.pkg.PkgPath, m.pkg.Name)
	f.NoFormat = true // formatted once, below
	f.HeaderComment(header)
	f.ImportName(chatPkg, "chat")
	f.ImportName(implPkg, "chatimpl")
	f.ImportName(contextPkg, "context")
	e := &emitter{m: m, f: f, tc: newTypeCoder(f, m.pkg.PkgPath), reserved: reservedNames(m)}
	e.tc.names["chat"] = chatPkg
	e.tc.names["chatimpl"] = implPkg
	e.tc.names["context"] = contextPkg
	if len(m.ais) > 0 {
		f.ImportName(aiPkg, "ai")
		e.tc.names["ai"] = aiPkg
	}
	if slices.ContainsFunc(slices.Collect(maps.Values(m.agents)), func(ag *agentModel) bool { return ag.used }) {
		f.ImportName(subagentPkg, "subagent")
		e.tc.names["subagent"] = subagentPkg
	}
	if slices.ContainsFunc(m.routes, func(r *routeModel) bool { return r.markdown }) {
		f.ImportName(markdownPkg, "markdown")
		e.tc.names["markdown"] = markdownPkg
	}
	e.nameFuncs()

	e.doc(fmt.Sprintf("This file needs a chatgen runtime that supports generated code version %d. A compiler error on the constant below means the file and the runtime do not match: re-run go generate with a chatgen that matches the runtime.", GeneratedCodeVersion))
	f.Const().Id("_").Op("=").Qual(implPkg, fmt.Sprintf("SupportPackageIsVersion%d", GeneratedCodeVersion))
	f.Line()
	f.Const().Id(e.pathConst).Op("=").Lit(m.pkg.PkgPath)
	f.Line()
	e.assertions()
	e.deps()
	e.routeNames()
	e.register()
	e.routeFuncsAndCatches()
	e.manifestFunc()
	for _, b := range m.beans {
		e.bean(b)
	}
	e.eventTypes()
	e.aiServices()
	if e.err != nil {
		return nil, e.err
	}

	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", outputName, err)
	}
	src := groupImports(buf.Bytes())
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("formatting %s: %w\n%s", outputName, err, src)
	}
	return out, nil
}

// GeneratedCodeVersion is the version of the code chatgen writes: each
// chat_gen.go says it in a comment and references
// chatimpl.SupportPackageIsVersion<N> with this N, so that it compiles only
// against a runtime that supports it. A file written for another version
// fails to compile at that line, whose comment says to re-run go generate.
const GeneratedCodeVersion = 6

// groupImports splits the import block jennifer writes (one block, sorted
// by path) into the standard library and the rest, as goimports groups
// them, so that one go/format pass gives goimports' output.
func groupImports(src []byte) []byte {
	const open = "\nimport (\n"
	start := bytes.Index(src, []byte(open))
	if start < 0 {
		return src // one import or none: nothing to group
	}
	start += len(open)
	end := bytes.Index(src[start:], []byte("\n)\n"))
	if end < 0 {
		return src
	}
	end += start + 1
	var std, other []byte
	for line := range bytes.Lines(src[start:end]) {
		path := line[bytes.IndexByte(line, '"')+1:]
		if first, _, _ := bytes.Cut(path, []byte("/")); bytes.ContainsRune(first, '.') {
			other = append(other, line...)
		} else {
			std = append(std, line...)
		}
	}
	if len(std) == 0 || len(other) == 0 {
		return src
	}
	out := make([]byte, 0, len(src)+1)
	out = append(out, src[:start]...)
	out = append(out, std...)
	out = append(out, '\n')
	out = append(out, other...)
	return append(out, src[end:]...)
}

// typ renders t, remembering the first failure.
func (e *emitter) typ(t types.Type) jen.Code {
	c, err := e.tc.typ(t)
	if err != nil {
		if e.err == nil {
			e.err = fmt.Errorf("cannot write type %s: %w", t, err)
		}
		return jen.Id("_")
	}
	return c
}

// ctxType is context.Context.
func ctxType() *jen.Statement { return jen.Qual(contextPkg, "Context") }

// ctxParam is the context parameter of a generated function: named ctx
// when the function uses it.
func ctxParam(used bool) *jen.Statement {
	if used {
		return jen.Id("ctx").Add(ctxType())
	}
	return ctxType()
}

// instanceType is the type a bean's instances have: *T for structs, T for
// interfaces.
func instanceType(b *beanModel) *jen.Statement {
	if b.iface {
		return jen.Id(b.obj.Name())
	}
	return jen.Op("*").Id(b.obj.Name())
}

// invocationScoped reports whether calls into b need an invocation.
func invocationScoped(b *beanModel) bool { return b.kind == kindInvocation }

// beginInvocation is the prologue of a call into an invocation-scoped
// bean: it starts an invocation unless ctx carries one, and ends it when
// the function returns.
func beginInvocation(ctx, end string) []jen.Code {
	return []jen.Code{
		jen.List(jen.Id(ctx), jen.Id(end)).Op(":=").Qual(chatPkg, "BeginInvocation").Call(jen.Id(ctx)),
		jen.Defer().Id(end).Call(),
	}
}

// ifErr is "if err != nil { return results }".
func ifErr(err string, results ...jen.Code) jen.Code {
	return jen.If(jen.Id(err).Op("!=").Nil()).Block(jen.Return(results...))
}

// lookup is "v, err := bean.Lookup(ctx)".
func lookup(v, err, ctx string, b *beanModel) jen.Code {
	return jen.List(jen.Id(v), jen.Id(err)).Op(":=").Id(b.beanVar).Dot("Lookup").Call(jen.Id(ctx))
}

func (e *emitter) deps() {
	if !e.m.hasDeps() {
		return
	}
	fields := make([]jen.Code, 0, len(e.m.deps)+len(e.m.ais))
	for _, d := range e.m.deps {
		fields = append(fields, fieldDoc(fmt.Sprintf("%s is passed to %s.", d.field, joinAnd(d.users))), jen.Id(d.field).Add(e.typ(d.typ)))
	}
	for _, s := range e.m.ais {
		fields = append(fields, fieldDoc(fmt.Sprintf("%s configures the //chat:ai service %s: its model, memory and tool-loop limits (nil: no model, which chat.NewRouter refuses).", s.field, s.bean.obj.Name())), jen.Id(s.field).Op("*").Qual(aiPkg, "Config"))
	}
	e.doc("Deps holds the application dependencies of this package's scoped beans and the configuration of its AI services: each dependency is passed to the constructors that take its type. Give it to Register.")
	e.f.Type().Id("Deps").Struct(fields...)
	e.f.Line()
}

func (e *emitter) register() {
	var params []jen.Code
	if e.m.hasDeps() {
		params = append(params, jen.Id("deps").Id("Deps"))
	}
	body := []jen.Code{
		jen.Id("p").Op(":=").Qual(implPkg, "NewPackage").Call(jen.Id(e.pathConst)),
	}
	body = append(body, e.aiRegister()...)
	body = append(body, e.routes()...)
	if e.manifest != nil {
		body = append(body, jen.Id("p").Dot("DescribeJSON").Call(jen.Id(e.manifestFn)))
	}
	for _, b := range e.m.beans {
		if b.ctor == nil || len(b.ctor.deps) == 0 {
			continue
		}
		body = append(body, provide(b))
	}
	// A durable bean is provided whatever its constructor takes: the router
	// of the node where a resumed conversation ends restores the durable
	// beans that node did not use since the resume to close them, and it
	// knows a bean by its provider.
	first := true
	for _, b := range e.m.beans {
		if !b.durable || b.ctor != nil && len(b.ctor.deps) > 0 {
			continue
		}
		if first {
			body = append(body, jen.Comment("Durable beans are provided even without dependencies: the router"),
				jen.Comment("where a resumed conversation ends restores them from their saved"),
				jen.Comment("state, to close them."))
			first = false
		}
		body = append(body, provide(b))
	}
	body = append(body, jen.Return(jen.Id("p")))
	e.doc(fmt.Sprintf("Register returns the chat registration of package %s: its routes, error handlers and the providers of its scoped beans. Pass it to chat.NewRouter, or to chat.WithPackages to use the beans without a router.", e.m.pkg.Name))
	e.f.Func().Id("Register").Params(params...).Op("*").Qual(implPkg, "Package").Block(body...)
	e.f.Line()
}

// provide is "chatimpl.Provide(p, bean, constructor)" for the bean, binding
// the dependencies its constructor takes.
func provide(b *beanModel) jen.Code {
	return jen.Qual(implPkg, "Provide").Call(jen.Id("p"), jen.Id(b.beanVar), newFunc(b))
}

// newFunc is the bean's constructor as a func(context.Context) (T,
// error): the constructor itself when it has that signature, else a func
// calling it with the Deps it takes (deps.Field), or returning a new zero
// instance when the bean has no constructor.
func newFunc(b *beanModel) jen.Code {
	if b.ctor == nil {
		return jen.Func().Params(ctxType()).Params(instanceType(b), jen.Error()).Block(
			jen.Return(jen.New(jen.Id(b.obj.Name())), jen.Nil()),
		)
	}
	if b.ctor.takesCtx && b.ctor.err && len(b.ctor.deps) == 0 {
		return jen.Id(b.ctor.fn.Name())
	}
	var args []jen.Code
	if b.ctor.takesCtx {
		args = append(args, jen.Id("ctx"))
	}
	for _, d := range b.ctor.deps {
		args = append(args, jen.Id("deps").Dot(d.field))
	}
	return jen.Func().Params(ctxParam(b.ctor.takesCtx)).Params(instanceType(b), jen.Error()).Block(ctorReturn(b, args)...)
}

// ctorReturn is the body of a function returning (instance, error) by
// calling the bean's constructor with args.
func ctorReturn(b *beanModel, args []jen.Code) []jen.Code {
	call := jen.Id(b.ctor.fn.Name()).Call(args...)
	if b.ctor.err {
		return []jen.Code{jen.Return(call)}
	}
	return []jen.Code{jen.Return(call, jen.Nil())}
}

func (e *emitter) bean(b *beanModel) {
	name := b.obj.Name()
	where := "the chat scope active in ctx"
	if invocationScoped(b) {
		where = "the invocation active in ctx"
	}

	// The descriptor.
	newFn := newFunc(b)
	if b.ai != nil || b.ctor != nil && len(b.ctor.deps) > 0 {
		newFn = jen.Nil() // provided by Register
	}
	kindDoc := map[beanKind]string{
		kindChat:       "one instance per chat scope, inherited by nested scopes",
		kindPerChat:    "one instance per chat scope, never inherited",
		kindInvocation: "one instance per top-level call through its proxy",
	}[b.kind]
	var opts []jen.Code
	if b.kind != kindChat { // the zero Kind
		opts = append(opts, jen.Id("Kind").Op(":").Qual(chatPkg, b.kind.ident()))
	}
	if b.durable {
		kindDoc += ", saved with durable conversations as its encoding/json form"
		opts = append(opts, jen.Id("Durable").Op(":").True())
	}
	optsArg := jen.Nil()
	if len(opts) > 0 {
		optsArg = jen.Op("&").Qual(chatPkg, "BeanOptions").Values(opts...)
	}
	e.docFor(b.beanVar, fmt.Sprintf("%s describes the scoped type %s: %s.", b.beanVar, name, kindDoc))
	e.f.Var().Id(b.beanVar).Op("=").Qual(chatPkg, "NewBean").Types(instanceType(b)).Call(
		e.qualified(b), optsArg, newFn,
	)
	e.f.Line()

	if b.emitAccessor {
		e.accessor(b, name, where)
	}
	if b.emitProxy {
		e.proxy(b, name, where)
	}
}

// accessor writes the bean's accessor, XFrom(ctx).
func (e *emitter) accessor(b *beanModel, name, where string) {
	accessorDoc := fmt.Sprintf("%s returns the %s of %s, creating it on first use. ", b.accessor, name, where)
	if invocationScoped(b) {
		accessorDoc += "Calls through its proxy start invocations; the error matches chat.ErrNotActive outside one."
	} else {
		accessorDoc += "Without an active chat scope the error matches chat.ErrNotActive."
	}
	e.docFor(b.accessor, accessorDoc)
	e.f.Func().Id(b.accessor).Params(jen.Id("ctx").Add(ctxType())).Params(instanceType(b), jen.Error()).Block(
		jen.Return(jen.Id(b.beanVar).Dot("Lookup").Call(jen.Id("ctx"))),
	)
	e.f.Line()
}

// proxy writes the bean's scope proxy, XProxy, and its methods.
func (e *emitter) proxy(b *beanModel, name, where string) {
	proxyDoc := fmt.Sprintf("%s forwards each call to the %s of %s. ", b.proxy, name, where)
	if invocationScoped(b) {
		proxyDoc += "A call made with a context that carries no invocation starts one and ends it (closing its beans) when the call returns; calls made with the context a method is handed share its invocation. "
	}
	proxyDoc += "Methods without an error result panic with an error matching chat.ErrNotActive when there is no instance to call. The zero value is ready to use."
	e.docFor(b.proxy, proxyDoc)
	e.f.Type().Id(b.proxy).Struct()
	e.f.Line()
	for _, mm := range b.methods {
		e.proxyMethod(b, mm)
	}
}

func (e *emitter) proxyMethod(b *beanModel, mm *methodModel) {
	sig := mm.sig
	params := sig.Params()
	var decl []jen.Code
	if !mm.takesCtx {
		decl = append(decl, jen.Id(mm.ctxName).Add(ctxType()))
	}
	off := len(mm.names) - params.Len()
	for i := range params.Len() {
		t := params.At(i).Type()
		if sig.Variadic() && i == params.Len()-1 {
			decl = append(decl, jen.Id(mm.names[off+i]).Op("...").Add(e.typ(t.(*types.Slice).Elem())))
			continue
		}
		decl = append(decl, jen.Id(mm.names[off+i]).Add(e.typ(t)))
	}
	results, err := e.tc.tuple(sig.Results(), false)
	if err != nil && e.err == nil {
		e.err = err
	}

	names := e.names(mm.names...)
	var body []jen.Code
	ctx := mm.ctxName
	if invocationScoped(b) {
		body = append(body, beginInvocation(ctx, names.fresh("end"))...)
	}
	var args []jen.Code
	for i := range params.Len() {
		a := jen.Id(mm.names[off+i])
		if sig.Variadic() && i == params.Len()-1 {
			a = a.Op("...")
		}
		args = append(args, a)
	}
	var target *jen.Statement
	if mm.err {
		bv, ev := names.forType(b.obj.Name()), names.fresh("err")
		var rets []jen.Code
		for i := range sig.Results().Len() - 1 {
			rets = append(rets, e.zero(sig.Results().At(i).Type()))
		}
		body = append(body, lookup(bv, ev, ctx, b), ifErr(ev, append(rets, jen.Id(ev))...))
		target = jen.Id(bv)
	} else {
		target = jen.Id(b.beanVar).Dot("MustLookup").Call(jen.Id(ctx))
	}
	call := target.Dot(mm.fn.Name()).Call(args...)
	if sig.Results().Len() > 0 {
		body = append(body, jen.Return(call))
	} else {
		body = append(body, call)
	}

	where := "the chat scope in ctx"
	if invocationScoped(b) {
		where = "the invocation in ctx"
	}
	e.docFor(b.proxy, fmt.Sprintf("%s calls %s on the %s of %s.", mm.fn.Name(), mm.fn.Name(), b.obj.Name(), where))
	e.f.Func().Params(jen.Id(b.proxy)).Id(mm.fn.Name()).Params(decl...).Add(resultList(results)).Block(body...)
	e.f.Line()
}

// assertions writes compile-time checks that fail when the annotated
// source changed since the file was generated.
func (e *emitter) assertions() {
	checks := e.routeAssertions()
	for _, b := range e.m.beans {
		if b.ctor != nil {
			checks = append(checks, jen.Var().Id("_").Add(e.typ(b.ctor.fn.Type())).Op("=").Id(b.ctor.fn.Name()))
		}
		if !b.emitProxy {
			continue
		}
		allCtx := b.iface
		for _, mm := range b.methods {
			allCtx = allCtx && mm.takesCtx
			recv := jen.Parens(instanceType(b))
			if b.iface {
				recv = jen.Id(b.obj.Name())
			}
			checks = append(checks, jen.Var().Id("_").Add(e.typ(methodExprType(b, mm))).Op("=").Add(recv).Dot(mm.fn.Name()))
		}
		if allCtx {
			checks = append(checks, jen.Var().Id("_").Id(b.obj.Name()).Op("=").Id(b.proxy).Values())
		}
	}
	if len(checks) == 0 {
		return
	}
	e.doc("Compile-time assertions: a compiler error here means the annotated source changed since this file was generated. Re-run go generate.")
	e.f.Func().Id("_").Params().Block(checks...)
	e.f.Line()
}

// methodExprType is the type of the method expression T.M or (*T).M: the
// method's signature with the receiver as first parameter.
func methodExprType(b *beanModel, mm *methodModel) types.Type {
	recvT := b.obj.Type()
	if !b.iface {
		recvT = types.NewPointer(recvT)
	}
	params := []*types.Var{types.NewParam(0, nil, "", recvT)}
	for i := range mm.sig.Params().Len() {
		params = append(params, mm.sig.Params().At(i))
	}
	return types.NewSignatureType(nil, nil, nil, types.NewTuple(params...), mm.sig.Results(), mm.sig.Variadic())
}

func joinAnd(names []string) string { return joinWords(names, "and") }

// joinWords joins words as a sentence lists them: "a", "a or b",
// "a, b or c" for the conjunction "or".
func joinWords(words []string, conj string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + conj + " " + words[len(words)-1]
}

// locals hands out local identifiers that do not collide with the
// parameters of the function being written, or with each other.
type locals map[string]bool

func newLocals(params []string) locals {
	l := locals{}
	for _, p := range params {
		l[p] = true
	}
	return l
}

// fresh returns base, or base followed by the first number that makes it
// unused, and marks it used.
func (l locals) fresh(base string) string {
	n := base
	for i := 0; l[n]; i++ {
		n = fmt.Sprintf("%s%d", base, i)
	}
	l[n] = true
	return n
}

// docFor writes text as the doc comment of the declaration called name
// when name is exported: the documentation is for the names users see.
func (e *emitter) docFor(name, text string) {
	if token.IsExported(name) {
		e.doc(text)
	}
}

// qualified is the run-time name of bean b: the package path constant,
// a dot and the type's name.
func (e *emitter) qualified(b *beanModel) jen.Code {
	return jen.Id(e.pathConst).Op("+").Lit("." + b.obj.Name())
}

// docWidth is the column generated comments wrap at.
const docWidth = 77

// doc writes text as a top-level comment wrapped at docWidth columns.
func (e *emitter) doc(text string) {
	for _, line := range wrap(text, docWidth-len("// ")) {
		e.f.Comment(line)
	}
}

// fieldDoc is the comment of a struct field, indented by one tab (eight
// columns), wrapped at docWidth columns.
func fieldDoc(text string) jen.Code {
	var s *jen.Statement
	for _, line := range wrap(text, docWidth-8-len("// ")) {
		if s == nil {
			s = jen.Comment(line)
		} else {
			s.Line().Comment(line)
		}
	}
	return s
}

// wrap splits text into lines of at most width bytes, breaking at spaces
// (a longer word gets a line of its own).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
