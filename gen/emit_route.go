package gen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"
)

// nameFuncs names the generated functions of the routes
// (chatRoute<Name>) and the error handlers (chatCatch<Func>), so that
// stack traces and profiles show them.
func (e *emitter) nameFuncs() {
	e.pathConst = e.topName("chatPackagePath")
	for _, r := range e.m.routes {
		e.routeFuncs = append(e.routeFuncs, e.topName("chatRoute"+routeIdent(r.name)))
	}
	for _, c := range e.m.catches {
		e.catchFuncs = append(e.catchFuncs, e.topName("chatCatch"+upperFirst(c.fn.Name())))
	}
	for _, s := range e.m.ais {
		for _, am := range s.methods {
			am.varName = e.topName("chatMethod" + s.bean.obj.Name() + am.fn.Name())
		}
	}
	if e.manifest = e.m.manifest(); e.manifest != nil {
		e.manifestFn = e.topName("chatManifest")
	}
}

// routeNames declares a constant per route holding its name, for
// chat.Route, chat.PushRoute and chat.ExecuteRoute: a mistyped constant
// does not compile, where a mistyped string strands the conversation.
func (e *emitter) routeNames() {
	if len(e.m.routes) == 0 {
		return
	}
	var defs []jen.Code
	for _, r := range e.m.routes {
		target := r.fn.Name()
		if r.bean != nil {
			target = r.bean.obj.Name() + "." + target
		}
		defs = append(defs, fieldDoc(fmt.Sprintf("%s is the name of the route %s (%s).", r.constName, r.name, target)), jen.Id(r.constName).Op("=").Lit(r.name))
	}
	e.doc("The names of this package's routes, for chat.Route, chat.PushRoute and chat.ExecuteRoute: a mistyped constant does not compile.")
	e.f.Const().Defs(defs...)
	e.f.Line()
}

// routes returns the statements of Register that add the routes and error
// handlers to p.
func (e *emitter) routes() []jen.Code {
	var out []jen.Code
	for i, r := range e.m.routes {
		fields := []jen.Code{inline("Name", jen.Id(r.constName))}
		if r.isDefault {
			fields = append(fields, inline("Default", jen.True()))
		}
		if len(r.roles) > 0 {
			roles := make([]jen.Code, len(r.roles))
			for i, role := range r.roles {
				roles[i] = jen.Lit(role)
			}
			fields = append(fields, inline("Roles", jen.Index().String().Values(roles...)))
		}
		fields = append(fields, inline("Handle", jen.Id(e.routeFuncs[i])))
		out = append(out, jen.Id("p").Dot("AddRoute").Call(jen.Qual(implPkg, "RouteSpec").Values(fields...)))
	}
	for i, c := range e.m.catches {
		var fields []jen.Code
		if c.route != "" {
			fields = append(fields, inline("Route", jen.Id("Route"+routeIdent(c.route))))
		}
		fields = append(fields, inline("Type", jen.Lit(e.m.typeString(c.errType))))
		if c.iface {
			fields = append(fields, inline("Interface", jen.True()))
		}
		fields = append(fields, inline("Handle", jen.Id(e.catchFuncs[i])))
		out = append(out, jen.Id("p").Dot("AddCatch").Call(jen.Qual(implPkg, "CatchSpec").Values(fields...)))
	}
	return out
}

// routeFuncsAndCatches writes the functions Register hands the router.
func (e *emitter) routeFuncsAndCatches() {
	for i, r := range e.m.routes {
		e.routeFunc(r, e.routeFuncs[i])
	}
	for i, c := range e.m.catches {
		e.catchFunc(c, e.catchFuncs[i])
	}
}

func (e *emitter) routeFunc(r *routeModel, name string) {
	// The parameters and locals avoid every name the function refers to:
	// a func route called req keeps its name.
	names := e.names()
	ctx, req, errV := names.fresh("ctx"), names.fresh("req"), names.fresh("err")
	// The parameters decoded from the request data keep their names.
	locals := make([]string, len(r.params))
	for i, p := range r.params {
		if p.kind == paramData {
			locals[i] = names.fresh(p.name)
		}
	}

	var body []jen.Code
	var callee *jen.Statement
	what := r.fn.Name()
	if r.bean != nil {
		if invocationScoped(r.bean) {
			body = append(body, beginInvocation(ctx, names.fresh("end"))...)
		}
		bv := names.forType(r.bean.obj.Name())
		body = append(body, lookup(bv, errV, ctx, r.bean), ifErr(errV, jen.Id(errV)))
		callee = jen.Id(bv).Dot(r.fn.Name())
		what = r.bean.obj.Name() + "." + r.fn.Name()
	} else {
		callee = jen.Id(r.fn.Name())
	}
	var args []jen.Code
	for i, p := range r.params {
		switch p.kind {
		case paramContext:
			args = append(args, jen.Id(ctx))
		case paramUser:
			args = append(args, jen.Id(req).Dot("UserMessage").Call())
		case paramRequest:
			args = append(args, jen.Id(req))
		case paramResponse:
			args = append(args, jen.Qual(chatPkg, "Response").Call(jen.Id(ctx)))
		default:
			v := locals[i]
			body = append(body,
				jen.Var().Id(v).Add(e.typ(p.typ)),
				jen.If(jen.Id(errV).Op(":=").Id(req).Dot("Decode").Call(jen.Lit(p.name), jen.Op("&").Id(v)), jen.Id(errV).Op("!=").Nil()).Block(jen.Return(jen.Id(errV))),
			)
			args = append(args, jen.Id(v))
		}
	}
	body = append(body, e.routeCall(r, callee.Call(args...), names, ctx, errV)...)

	doc := fmt.Sprintf("%s runs the route %s: it calls %s.", name, r.name, what)
	if r.markdown {
		doc = fmt.Sprintf("%s runs the route %s: it calls %s and sends its text answers rendered from markdown (//chat:markdown).", name, r.name, what)
	}
	e.docFor(name, doc)
	// The route reads its request from ctx (chat.Request) when it needs it.
	if slices.ContainsFunc(r.params, func(p routeParam) bool { return p.kind != paramContext && p.kind != paramResponse }) {
		body = append([]jen.Code{jen.Id(req).Op(":=").Qual(chatPkg, "Request").Call(jen.Id(ctx))}, body...)
	}
	e.f.Func().Id(name).Params(jen.Id(ctx).Add(ctxType())).Error().Block(body...)
	e.f.Line()
}

// routeCall makes the route's call and sends its result.
func (e *emitter) routeCall(r *routeModel, call *jen.Statement, names *funcNames, ctx, errV string) []jen.Code {
	switch {
	case r.result == nil && !r.errRes:
		return []jen.Code{call, jen.Return(jen.Nil())}
	case r.result == nil:
		return []jen.Code{jen.Return(call)}
	}
	res := names.fresh("res")
	var body []jen.Code
	if r.errRes {
		body = append(body, jen.List(jen.Id(res), jen.Id(errV)).Op(":=").Add(call), ifErr(errV, jen.Id(errV)))
	} else {
		body = append(body, jen.Id(res).Op(":=").Add(call))
	}
	if r.markdown {
		// //chat:markdown: the text answers go out rendered.
		switch r.result.kind {
		case resultSeq:
			return append(body, jen.Return(jen.Qual(markdownPkg, "SendStream").Call(jen.Id(ctx), jen.Id(res))))
		case resultSeq2:
			return append(body, jen.Return(jen.Qual(markdownPkg, "SendStreamWithErrors").Call(jen.Id(ctx), jen.Id(res))))
		case resultAI:
			return append(body, jen.Return(jen.Id(res).Dot("SendText").Call(jen.Id(ctx), jen.Qual(markdownPkg, "Message"))))
		}
		return append(body, jen.Return(jen.Qual(markdownPkg, "Message").Call(jen.Id(ctx), jen.Id(res))))
	}
	switch r.result.kind {
	case resultSeq:
		return append(body, jen.Return(jen.Qual(chatPkg, "Response").Call(jen.Id(ctx)).Dot("Stream").Call(jen.Id(res))))
	case resultSeq2:
		return append(body, jen.Return(jen.Qual(chatPkg, "Response").Call(jen.Id(ctx)).Dot("StreamWithErrors").Call(jen.Id(res))))
	case resultAI:
		return append(body, jen.Return(jen.Id(res).Dot("Send").Call(jen.Id(ctx))))
	}
	if r.result.nilable {
		body = append(body, jen.If(jen.Id(res).Op("==").Nil()).Block(jen.Return(jen.Nil())))
	}
	if r.event != "" {
		if isString(r.result.typ) {
			body = append(body, jen.If(jen.Id(res).Op("==").Lit("")).Block(jen.Return(jen.Nil())))
		}
		return append(body, jen.Return(jen.Qual(chatPkg, "Response").Call(jen.Id(ctx)).Dot("Event").Call(jen.Lit(r.event), jen.Id(res))))
	}
	return append(body, jen.Return(jen.Qual(chatPkg, "SendValue").Call(jen.Id(ctx), jen.Id(res))))
}

func (e *emitter) catchFunc(c *catchModel, name string) {
	names := e.names()
	ctx, errV := names.fresh("ctx"), names.fresh("err")
	target, ok := names.fresh("target"), names.fresh("ok")
	var args []jen.Code
	if c.takesCtx {
		args = append(args, jen.Id(ctx))
	}
	args = append(args, jen.Id(target))
	call := jen.Id(c.fn.Name()).Call(args...)
	body := []jen.Code{
		jen.List(jen.Id(target), jen.Id(ok)).Op(":=").Id(errV).Assert(e.typ(c.errType)),
		jen.If(jen.Op("!").Id(ok)).Block(jen.Return(jen.False(), jen.Nil())),
	}
	if c.returnsErr {
		body = append(body, jen.Return(jen.True(), call))
	} else {
		body = append(body, call, jen.Return(jen.True(), jen.Nil()))
	}
	scope := "every route"
	if c.route != "" {
		scope = "the route " + c.route
	}
	e.docFor(name, fmt.Sprintf("%s hands the %s errors of %s to %s.", name, e.m.typeString(c.errType), scope, c.fn.Name()))
	e.f.Func().Id(name).Params(jen.Id(ctx).Add(ctxType()), jen.Id(errV).Error()).Params(jen.Bool(), jen.Error()).Block(body...)
	e.f.Line()
}

// eventTypes writes the ChatEventType methods of //chat:event types.
func (e *emitter) eventTypes() {
	for _, ev := range e.m.events {
		name := ev.obj.Name()
		e.doc(fmt.Sprintf("ChatEventType returns %q: %s values are sent as events of that type (//chat:event).", ev.name, name))
		e.f.Func().Params(jen.Id(name)).Id("ChatEventType").Params().String().Block(jen.Return(jen.Lit(ev.name)))
		e.f.Line()
	}
}

// routeAssertions are the compile-time checks of funcs the output calls by
// name: func routes and error handlers.
func (e *emitter) routeAssertions() []jen.Code {
	var out []jen.Code
	for _, r := range e.m.routes {
		if r.bean == nil {
			out = append(out, jen.Var().Id("_").Add(e.typ(r.fn.Type())).Op("=").Id(r.fn.Name()))
		}
	}
	for _, c := range e.m.catches {
		out = append(out, jen.Var().Id("_").Add(e.typ(c.fn.Type())).Op("=").Id(c.fn.Name()))
	}
	return out
}

// field renders one "Name: value," line of a composite literal; the
// fields keep the order they are given in (jen.Dict would sort them).
func field(name string, value jen.Code) jen.Code {
	return jen.Line().Id(name).Op(":").Add(value)
}

// inline renders "Name: value" in a composite literal written on one line.
func inline(name string, value jen.Code) jen.Code {
	return jen.Id(name).Op(":").Add(value)
}
