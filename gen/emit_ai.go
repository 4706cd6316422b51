package gen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
)

const (
	llmsPkg     = "github.com/tmc/langchaingo/llms"
	templatePkg = "text/template"
	jsonPkg     = "encoding/json"
)

// aiRegister returns the statements of Register that create the AI
// services and provide their beans.
func (e *emitter) aiRegister() []jen.Code {
	var out []jen.Code
	for _, s := range e.m.ais {
		svc := "svc" + s.field
		out = append(out,
			jen.Id(svc).Op(":=").Qual(aiPkg, "NewService").Call(jen.Lit(s.bean.qualified), jen.Id("deps").Dot(s.field)),
			jen.Qual(chatPkg, "Provide").Call(jen.Id("p"), jen.Id(s.bean.beanVar),
				jen.Func().Params(e.ctxType()).Params(jen.Id(s.bean.obj.Name()), jen.Error()).Block(
					jen.Return(jen.Op("&").Id(s.impl).Values(jen.Dict{jen.Id("svc"): jen.Id(svc)}), jen.Nil()),
				)),
		)
	}
	return out
}

// aiServices writes the implementation of every //chat:ai interface, the
// tool invokers, tool definitions and templates.
func (e *emitter) aiServices() {
	written := map[*toolModel]bool{}
	for _, s := range e.m.ais {
		for _, am := range s.methods {
			for _, t := range am.tools {
				if !written[t] {
					written[t] = true
					e.toolInvoker(t)
				}
			}
		}
	}
	for _, s := range e.m.ais {
		e.aiService(s)
	}
}

func (e *emitter) toolInvoker(t *toolModel) {
	e.doc(fmt.Sprintf("%s runs the tool %s: it decodes the model's arguments and calls %s.%s on the %s of the current scope.", t.funcName, t.name, t.bean.obj.Name(), t.fn.Name(), t.bean.obj.Name()))
	var fields []jen.Code
	var args []jen.Code
	for _, p := range t.params {
		if p.isCtx {
			args = append(args, jen.Id("ctx"))
			continue
		}
		fields = append(fields, jen.Id(upperFirst(p.name)).Add(e.typ(p.typ)).Tag(map[string]string{"json": p.name}))
		args = append(args, jen.Id("args").Dot(upperFirst(p.name)))
	}
	var body []jen.Code
	if len(fields) > 0 {
		body = append(body,
			jen.Var().Id("args").Struct(fields...),
			jen.If(jen.Err().Op(":=").Qual(jsonPkg, "Unmarshal").Call(jen.Index().Byte().Parens(jen.Id("arguments")), jen.Op("&").Id("args")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Nil(), jen.Op("&").Qual(aiPkg, "ArgumentsError").Values(jen.Dict{jen.Id("Err"): jen.Err()})),
			),
		)
	}
	if t.bean.kind == kindInvocation {
		body = append(body,
			jen.List(jen.Id("ctx"), jen.Id("end")).Op(":=").Qual(chatPkg, "BeginInvocation").Call(jen.Id("ctx")),
			jen.Defer().Id("end").Call(),
		)
	}
	body = append(body,
		jen.List(jen.Id("bean"), jen.Err()).Op(":=").Qual(chatPkg, "Lookup").Call(jen.Id("ctx"), jen.Id(t.bean.beanVar)),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
	)
	call := jen.Id("bean").Dot(t.fn.Name()).Call(args...)
	switch {
	case t.hasResult && t.errResult:
		body = append(body, jen.Return(call))
	case t.hasResult:
		body = append(body, jen.Return(call, jen.Nil()))
	case t.errResult:
		body = append(body, jen.Return(jen.Nil(), call))
	default:
		body = append(body, call, jen.Return(jen.Nil(), jen.Nil()))
	}
	argsName := "arguments"
	if len(fields) == 0 {
		argsName = "_"
	}
	e.f.Func().Id(t.funcName).Params(jen.Id("ctx").Add(e.ctxType()), jen.Id(argsName).String()).Params(jen.Any(), jen.Error()).Block(body...)
	e.f.Line()
}

func (e *emitter) aiService(s *aiModel) {
	name := s.bean.obj.Name()
	for _, am := range s.methods {
		if am.toolsVar != "" {
			var defs, invokers []jen.Code
			for _, t := range am.tools {
				defs = append(defs, jen.Values(
					field("Type", jen.Lit("function")),
					field("Function", jen.Op("&").Qual(llmsPkg, "FunctionDefinition").Values(
						field("Name", jen.Lit(t.name)),
						field("Description", jen.Lit(t.desc)),
						field("Parameters", jen.Qual(jsonPkg, "RawMessage").Call(rawLit(t.schema))),
						jen.Line(),
					)),
					jen.Line(),
				))
				inv := []jen.Code{}
				if t.immediate {
					inv = append(inv, field("Immediate", jen.True()))
				}
				inv = append(inv, field("Invoke", jen.Id(t.funcName)), jen.Line())
				invokers = append(invokers, jen.Values(inv...))
			}
			e.doc(fmt.Sprintf("%s are the tools %s.%s offers the model.", am.toolsVar, name, am.fn.Name()))
			e.f.Var().Id(am.toolsVar).Op("=").Index().Qual(llmsPkg, "Tool").Values(defs...)
			e.f.Line()
			e.doc(fmt.Sprintf("%sInvokers run the tools of %s, in the same order.", am.toolsVar, am.toolsVar))
			e.f.Var().Id(am.toolsVar+"Invokers").Op("=").Index().Qual(aiPkg, "Invoker").Values(invokers...)
			e.f.Line()
		}
		for _, tm := range []struct{ suffix, text string }{{"System", am.system}, {"User", am.user}} {
			if tm.text == "" {
				continue
			}
			e.doc(fmt.Sprintf("%s%s is the %s message template of %s.%s.", am.tmplVar, tm.suffix, lower(tm.suffix), name, am.fn.Name()))
			e.f.Var().Id(am.tmplVar+tm.suffix).Op("=").Qual(templatePkg, "Must").Call(
				jen.Qual(templatePkg, "New").Call(jen.Lit(name + "." + am.fn.Name() + " " + lower(tm.suffix))).Dot("Parse").Call(jen.Lit(tm.text)),
			)
			e.f.Line()
		}
	}
	e.doc(fmt.Sprintf("%s is the generated implementation of the //chat:ai interface %s.", s.impl, name))
	e.f.Type().Id(s.impl).Struct(jen.Id("svc").Op("*").Qual(aiPkg, "Service"))
	e.f.Line()
	for _, am := range s.methods {
		e.aiMethod(s, am)
	}
}

func lower(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]|0x20) + s[1:]
}

func (e *emitter) aiMethod(s *aiModel, am *aiMethod) {
	sig := am.sig
	local := newLocals(am.idents).fresh
	recv := local("x")
	var params []jen.Code
	for i, n := range am.idents {
		params = append(params, jen.Id(n).Add(e.typ(sig.Params().At(i).Type())))
	}
	results, err := e.tc.tuple(sig.Results(), false)
	if err != nil && e.err == nil {
		e.err = err
	}
	ctx := am.idents[0]
	dataV, reqV, errV := local("data"), local("req"), local("err")

	// fail returns the zero results with err.
	var zeroDecls []jen.Code
	zero := ""
	if am.output != aiStream {
		zero = local("zero")
		zeroDecls = []jen.Code{jen.Var().Id(zero).Add(e.typ(sig.Results().At(0).Type()))}
	}
	fail := func() jen.Code {
		if am.output == aiStream {
			return jen.Return(jen.Func().Params(jen.Id("yield").Func().Params(jen.String(), jen.Error()).Bool()).Block(
				jen.Id("yield").Call(jen.Lit(""), jen.Id(errV)),
			))
		}
		return jen.Return(jen.Id(zero), jen.Id(errV))
	}

	body := append([]jen.Code{}, zeroDecls...)
	dict := jen.Dict{}
	for i, n := range am.params[1:] {
		dict[jen.Lit(n)] = jen.Id(am.idents[i+1])
	}
	body = append(body, jen.Id(dataV).Op(":=").Map(jen.String()).Any().Values(dict))
	reqFields := jen.Dict{
		jen.Id("Method"): jen.Lit(am.fn.Name()),
		jen.Id("Kind"):   jen.Qual(chatPkg, s.bean.kind.ident()),
	}
	for _, tm := range []struct{ suffix, field, text string }{{"System", "System", am.system}, {"User", "User", am.user}} {
		if tm.text == "" {
			continue
		}
		v := local(lower(tm.suffix))
		body = append(body,
			jen.List(jen.Id(v), jen.Id(errV)).Op(":=").Qual(aiPkg, "Render").Call(jen.Id(am.tmplVar+tm.suffix), jen.Id(dataV)),
			jen.If(jen.Id(errV).Op("!=").Nil()).Block(fail()),
		)
		reqFields[jen.Id(tm.field)] = jen.Id(v)
	}
	if am.toolsVar != "" {
		reqFields[jen.Id("Tools")] = jen.Id(am.toolsVar)
		reqFields[jen.Id("Invokers")] = jen.Id(am.toolsVar + "Invokers")
	}
	structured := am.content != nil && !isString(am.content)
	if structured {
		reqFields[jen.Id("Output")] = jen.Qual(aiPkg, "OutputJSON")
		reqFields[jen.Id("Schema")] = jen.Qual(jsonPkg, "RawMessage").Call(rawLit(am.schema))
	}
	body = append(body, jen.Id(reqV).Op(":=").Op("&").Qual(aiPkg, "Request").Values(reqFields))
	svc := jen.Id(recv).Dot("svc")
	switch {
	case am.output == aiStream:
		body = append(body, jen.Return(svc.Clone().Dot("Stream").Call(jen.Id(ctx), jen.Id(reqV))))
	case structured:
		v, reply := local("v"), "_"
		if am.output == aiResult {
			reply = local("reply")
		}
		call := jen.List(jen.Id(v), jen.Id(reply), jen.Id(errV)).Op(":=").Qual(aiPkg, "Structured").Types(e.typ(am.content)).Call(jen.Id(ctx), svc.Clone(), jen.Id(reqV))
		body = append(body, call, jen.If(jen.Id(errV).Op("!=").Nil()).Block(fail()))
		if am.output == aiResult {
			body = append(body, jen.Return(jen.Qual(aiPkg, "NewResult").Call(jen.Id(v), jen.Id(reply)), jen.Nil()))
		} else {
			body = append(body, jen.Return(jen.Id(v), jen.Nil()))
		}
	default:
		reply := local("reply")
		body = append(body,
			jen.List(jen.Id(reply), jen.Id(errV)).Op(":=").Add(svc.Clone().Dot("Chat").Call(jen.Id(ctx), jen.Id(reqV))),
			jen.If(jen.Id(errV).Op("!=").Nil()).Block(fail()),
		)
		if am.output == aiResult {
			body = append(body, jen.Return(jen.Qual(aiPkg, "NewResult").Call(jen.Id(reply).Dot("Content"), jen.Id(reply)), jen.Nil()))
		} else {
			body = append(body, jen.Return(jen.Id(reply).Dot("Content"), jen.Nil()))
		}
	}
	e.doc(fmt.Sprintf("%s asks the model, as %s.%s describes.", am.fn.Name(), s.bean.obj.Name(), am.fn.Name()))
	e.f.Func().Params(jen.Id(recv).Op("*").Id(s.impl)).Id(am.fn.Name()).Params(params...).Add(resultList(results)).Block(body...)
	e.f.Line()
}

// rawLit renders s as a raw string literal when it can be one: JSON reads
// better without escapes.
func rawLit(s string) jen.Code {
	if strings.ContainsAny(s, "`\r") {
		return jen.Lit(s)
	}
	return jen.Op("`" + s + "`")
}
