package gen

import (
	"bytes"
	"fmt"
	"go/types"
	"strings"

	"github.com/dave/jennifer/jen"
	"golang.org/x/tools/imports"
)

const (
	chatPkg    = "github.com/chatscopes/chatgen/runtime/chat"
	contextPkg = "context"
)

// emitter writes the chat_gen.go of one package.
type emitter struct {
	m   *pkgModel
	f   *jen.File
	tc  *typeCoder
	err error // the first type that could not be rendered
}

// emit renders the package's output, formatted like goimports.
func emit(m *pkgModel) ([]byte, error) {
	f := jen.NewFilePathName(m.pkg.PkgPath, m.pkg.Name)
	f.HeaderComment(header)
	f.ImportName(chatPkg, "chat")
	f.ImportName(contextPkg, "context")
	e := &emitter{m: m, f: f, tc: newTypeCoder(f, m.pkg.PkgPath)}
	e.tc.names["chat"] = chatPkg
	e.tc.names["context"] = contextPkg
	if len(m.ais) > 0 {
		for path, name := range map[string]string{aiPkg: "ai", llmsPkg: "llms"} {
			f.ImportName(path, name)
			e.tc.names[name] = path
		}
	}

	f.Comment("This file needs a chatgen runtime that supports version 1 of the generated code.")
	f.Const().Id("_").Op("=").Qual(chatPkg, "SupportPackageIsVersion1")
	f.Line()
	e.deps()
	e.register()
	for _, b := range m.beans {
		e.bean(b)
	}
	e.eventTypes()
	if len(m.ais) > 0 {
		e.aiServices()
	}
	e.assertions()
	if e.err != nil {
		return nil, e.err
	}

	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("rendering %s: %w", outputName, err)
	}
	out, err := imports.Process(outputName, buf.Bytes(), &imports.Options{FormatOnly: true, Comments: true, TabIndent: true, TabWidth: 8})
	if err != nil {
		return nil, fmt.Errorf("formatting %s: %w\n%s", outputName, err, buf.Bytes())
	}
	return out, nil
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

func (e *emitter) ctxType() *jen.Statement { return jen.Qual(contextPkg, "Context") }

// instanceType is the type a bean's instances have: *T for structs, T for
// interfaces.
func (e *emitter) instanceType(b *beanModel) *jen.Statement {
	if b.iface {
		return jen.Id(b.obj.Name())
	}
	return jen.Op("*").Id(b.obj.Name())
}

func (e *emitter) deps() {
	if !e.m.hasDeps() {
		return
	}
	fields := make([]jen.Code, 0, len(e.m.deps))
	for _, d := range e.m.deps {
		fields = append(fields, jen.Comment(fmt.Sprintf("%s is passed to %s.", d.field, joinAnd(d.users))).Line().Id(d.field).Add(e.typ(d.typ)))
	}
	for _, s := range e.m.ais {
		fields = append(fields, jen.Comment(fmt.Sprintf("%s configures the //chat:ai service %s: its model, memory and", s.field, s.bean.obj.Name())).Line().Comment("tool-loop limits.").Line().Id(s.field).Qual(aiPkg, "Config"))
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
		jen.Id("p").Op(":=").Qual(chatPkg, "NewPackage").Call(jen.Lit(e.m.pkg.PkgPath)),
	}
	body = append(body, e.aiRegister()...)
	body = append(body, e.routes()...)
	for _, b := range e.m.beans {
		if b.ctor == nil || len(b.ctor.deps) == 0 {
			continue
		}
		args := []jen.Code{}
		if b.ctor.takesCtx {
			args = append(args, jen.Id("ctx"))
		}
		for _, d := range b.ctor.deps {
			args = append(args, jen.Id("deps").Dot(d.field))
		}
		body = append(body, jen.Qual(chatPkg, "Provide").Call(
			jen.Id("p"), jen.Id(b.beanVar),
			jen.Func().Params(jen.Id("ctx").Add(e.ctxType())).Params(e.instanceType(b), jen.Error()).Block(
				e.ctorReturn(b, args)...,
			),
		))
	}
	body = append(body, jen.Return(jen.Id("p")))
	e.doc(fmt.Sprintf("Register returns the chat registration of package %s: its routes, error handlers and the providers of its scoped beans. Pass it to chat.NewRouter, or to chat.WithPackages to use the beans without a router.", e.m.pkg.Name))
	e.f.Func().Id("Register").Params(params...).Op("*").Qual(chatPkg, "Package").Block(body...)
	e.f.Line()
}

// ctorReturn is the body of a function returning (instance, error) by
// calling the bean's constructor with args.
func (e *emitter) ctorReturn(b *beanModel, args []jen.Code) []jen.Code {
	call := jen.Id(b.ctor.fn.Name()).Call(args...)
	if b.ctor.err {
		return []jen.Code{jen.Return(call)}
	}
	return []jen.Code{jen.Return(call, jen.Nil())}
}

func (e *emitter) bean(b *beanModel) {
	name := b.obj.Name()
	where := "the chat scope active in ctx"
	switch b.kind {
	case kindInvocation:
		where = "the invocation active in ctx"
	}

	// The descriptor.
	var newFn jen.Code
	switch {
	case b.ai != nil:
		newFn = jen.Nil()
	case b.ctor == nil:
		newFn = jen.Func().Params(e.ctxType()).Params(e.instanceType(b), jen.Error()).Block(
			jen.Return(jen.New(jen.Id(name)), jen.Nil()),
		)
	case len(b.ctor.deps) > 0:
		newFn = jen.Nil()
	case b.ctor.takesCtx && b.ctor.err:
		newFn = jen.Id(b.ctor.fn.Name())
	default:
		var args []jen.Code
		if b.ctor.takesCtx {
			args = append(args, jen.Id("ctx"))
		}
		newFn = jen.Func().Params(jen.Id("ctx").Add(e.ctxType())).Params(e.instanceType(b), jen.Error()).Block(e.ctorReturn(b, args)...)
	}
	kindDoc := map[beanKind]string{
		kindChat:       "one instance per chat scope, inherited by nested scopes",
		kindPerChat:    "one instance per chat scope, never inherited",
		kindInvocation: "one instance per top-level call through " + b.proxy,
	}[b.kind]
	e.doc(fmt.Sprintf("%s describes the scoped type %s: %s.", b.beanVar, name, kindDoc))
	e.f.Var().Id(b.beanVar).Op("=").Qual(chatPkg, "NewBean").Types(e.instanceType(b)).Call(
		jen.Lit(b.qualified), jen.Qual(chatPkg, b.kind.ident()), newFn,
	)
	e.f.Line()

	// The accessor.
	accessorDoc := fmt.Sprintf("%s returns the %s of %s, creating it on first use. ", b.accessor, name, where)
	if b.kind == kindInvocation {
		accessorDoc += fmt.Sprintf("Calls through %s start invocations; the error matches chat.ErrNotActive outside one.", b.proxy)
	} else {
		accessorDoc += "Without an active chat scope the error matches chat.ErrNotActive."
	}
	e.doc(accessorDoc)
	e.f.Func().Id(b.accessor).Params(jen.Id("ctx").Add(e.ctxType())).Params(e.instanceType(b), jen.Error()).Block(
		jen.Return(jen.Qual(chatPkg, "Lookup").Call(jen.Id("ctx"), jen.Id(b.beanVar))),
	)
	e.f.Line()

	// The proxy.
	proxyDoc := fmt.Sprintf("%s forwards each call to the %s of %s. ", b.proxy, name, where)
	if b.kind == kindInvocation {
		proxyDoc += "A call made with a context that carries no invocation starts one and ends it (closing its beans) when the call returns; calls made with the context a method is handed share its invocation. "
	}
	proxyDoc += "Methods without an error result panic with an error matching chat.ErrNotActive when there is no instance to call. The zero value is ready to use."
	e.doc(proxyDoc)
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
		decl = append(decl, jen.Id(mm.ctxName).Add(e.ctxType()))
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

	local := newLocals(mm.names).fresh

	var body []jen.Code
	ctx := mm.ctxName
	if b.kind == kindInvocation {
		end := local("end")
		body = append(body,
			jen.List(jen.Id(ctx), jen.Id(end)).Op(":=").Qual(chatPkg, "BeginInvocation").Call(jen.Id(ctx)),
			jen.Defer().Id(end).Call(),
		)
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
		bv, ev := local("b"), local("err")
		body = append(body, jen.List(jen.Id(bv), jen.Id(ev)).Op(":=").Qual(chatPkg, "Lookup").Call(jen.Id(ctx), jen.Id(b.beanVar)))
		var zeros []jen.Code
		var rets []jen.Code
		for i := range sig.Results().Len() - 1 {
			z := local(fmt.Sprintf("r%d", i))
			zeros = append(zeros, jen.Var().Id(z).Add(e.typ(sig.Results().At(i).Type())))
			rets = append(rets, jen.Id(z))
		}
		rets = append(rets, jen.Id(ev))
		body = append(body, jen.If(jen.Id(ev).Op("!=").Nil()).Block(append(zeros, jen.Return(rets...))...))
		target = jen.Id(bv)
	} else {
		target = jen.Qual(chatPkg, "MustLookup").Call(jen.Id(ctx), jen.Id(b.beanVar))
	}
	call := target.Dot(mm.fn.Name()).Call(args...)
	if sig.Results().Len() > 0 {
		body = append(body, jen.Return(call))
	} else {
		body = append(body, call)
	}

	verb := "calls"
	e.doc(fmt.Sprintf("%s %s %s on the %s of %s.", mm.fn.Name(), verb, mm.fn.Name(), b.obj.Name(), map[bool]string{true: "the invocation in ctx", false: "the chat scope in ctx"}[b.kind == kindInvocation]))
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
		allCtx := b.iface
		for _, mm := range b.methods {
			allCtx = allCtx && mm.takesCtx
			recv := jen.Parens(e.instanceType(b))
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

func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
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

// doc writes text as a comment wrapped at 77 columns.
func (e *emitter) doc(text string) {
	for _, line := range wrap(text, 77-len("// ")) {
		e.f.Comment(line)
	}
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
