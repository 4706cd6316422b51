package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// routes returns the statements of Register that add the routes and error
// handlers to p.
func (e *emitter) routes() []jen.Code {
	var out []jen.Code
	for _, r := range e.m.routes {
		out = append(out, e.route(r))
	}
	for _, c := range e.m.catches {
		out = append(out, e.catch(c))
	}
	return out
}

func (e *emitter) route(r *routeModel) jen.Code {
	fields := []jen.Code{field("Name", jen.Lit(r.name))}
	if r.isDefault {
		fields = append(fields, field("Default", jen.True()))
	}
	if len(r.roles) > 0 {
		roles := make([]jen.Code, len(r.roles))
		for i, role := range r.roles {
			roles[i] = jen.Lit(role)
		}
		fields = append(fields, field("Roles", jen.Index().String().Values(roles...)))
	}
	fields = append(fields, field("Handle", jen.Func().Params(
		jen.Id("ctx").Add(e.ctxType()), jen.Id("req").Op("*").Qual(chatPkg, "RouteRequest"),
	).Error().Block(e.routeBody(r)...)))
	return jen.Id("p").Dot("AddRoute").Call(jen.Qual(chatPkg, "RouteSpec").Values(append(fields, jen.Line())...))
}

func (e *emitter) routeBody(r *routeModel) []jen.Code {
	var body []jen.Code
	if r.bean != nil && r.bean.kind == kindInvocation {
		body = append(body,
			jen.List(jen.Id("ctx"), jen.Id("end")).Op(":=").Qual(chatPkg, "BeginInvocation").Call(jen.Id("ctx")),
			jen.Defer().Id("end").Call(),
		)
	}
	var callee *jen.Statement
	if r.bean != nil {
		body = append(body,
			jen.List(jen.Id("bean"), jen.Err()).Op(":=").Qual(chatPkg, "Lookup").Call(jen.Id("ctx"), jen.Id(r.bean.beanVar)),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		)
		callee = jen.Id("bean").Dot(r.fn.Name())
	} else {
		callee = jen.Id(r.fn.Name())
	}
	var args []jen.Code
	for i, p := range r.params {
		switch p.kind {
		case paramContext:
			args = append(args, jen.Id("ctx"))
		case paramUser:
			args = append(args, jen.Id("req").Dot("UserMessage").Call())
		case paramRequest:
			args = append(args, jen.Id("req"))
		case paramResponse:
			args = append(args, jen.Qual(chatPkg, "Response").Call(jen.Id("ctx")))
		default:
			v := fmt.Sprintf("arg%d", i)
			body = append(body,
				jen.Var().Id(v).Add(e.typ(p.typ)),
				jen.If(jen.Err().Op(":=").Id("req").Dot("Decode").Call(jen.Lit(p.name), jen.Op("&").Id(v)), jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
			)
			args = append(args, jen.Id(v))
		}
	}
	call := callee.Call(args...)
	switch {
	case r.result == nil && !r.errRes:
		return append(body, call, jen.Return(jen.Nil()))
	case r.result == nil:
		return append(body, jen.Return(call))
	}
	if r.errRes {
		body = append(body,
			jen.List(jen.Id("res"), jen.Err()).Op(":=").Add(call),
			jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		)
	} else {
		body = append(body, jen.Id("res").Op(":=").Add(call))
	}
	switch r.result.kind {
	case resultSeq:
		return append(body, jen.Return(jen.Qual(chatPkg, "SendStream").Call(jen.Id("ctx"), jen.Id("res"))))
	case resultSeq2:
		return append(body, jen.Return(jen.Qual(chatPkg, "SendStreamWithErrors").Call(jen.Id("ctx"), jen.Id("res"))))
	case resultAI:
		return append(body, jen.Return(jen.Id("res").Dot("Send").Call(jen.Id("ctx"))))
	}
	if r.result.nilable {
		body = append(body, jen.If(jen.Id("res").Op("==").Nil()).Block(jen.Return(jen.Nil())))
	}
	if r.event != "" {
		if isString(r.result.typ) {
			body = append(body, jen.If(jen.Id("res").Op("==").Lit("")).Block(jen.Return(jen.Nil())))
		}
		return append(body, jen.Return(jen.Qual(chatPkg, "Response").Call(jen.Id("ctx")).Dot("Event").Call(jen.Lit(r.event), jen.Id("res"))))
	}
	return append(body, jen.Return(jen.Qual(chatPkg, "SendValue").Call(jen.Id("ctx"), jen.Id("res"))))
}

func (e *emitter) catch(c *catchModel) jen.Code {
	var fields []jen.Code
	if c.route != "" {
		fields = append(fields, field("Route", jen.Lit(c.route)))
	}
	fields = append(fields, field("Type", jen.Lit(e.m.typeString(c.errType))))
	if c.iface {
		fields = append(fields, field("Interface", jen.True()))
	}
	var args []jen.Code
	if c.takesCtx {
		args = append(args, jen.Id("ctx"))
	}
	args = append(args, jen.Id("target"))
	call := jen.Id(c.fn.Name()).Call(args...)
	var tail []jen.Code
	if c.returnsErr {
		tail = []jen.Code{jen.Return(jen.True(), call)}
	} else {
		tail = []jen.Code{call, jen.Return(jen.True(), jen.Nil())}
	}
	body := append([]jen.Code{
		jen.List(jen.Id("target"), jen.Id("ok")).Op(":=").Err().Assert(e.typ(c.errType)),
		jen.If(jen.Op("!").Id("ok")).Block(jen.Return(jen.False(), jen.Nil())),
	}, tail...)
	fields = append(fields, field("Handle", jen.Func().Params(jen.Id("ctx").Add(e.ctxType()), jen.Err().Error()).Params(jen.Bool(), jen.Error()).Block(body...)))
	return jen.Id("p").Dot("AddCatch").Call(jen.Qual(chatPkg, "CatchSpec").Values(append(fields, jen.Line())...))
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

// field renders one "Name: value," line of a composite literal.
func field(name string, value jen.Code) jen.Code {
	return jen.Line().Id(name).Op(":").Add(value)
}
