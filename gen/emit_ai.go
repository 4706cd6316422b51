package gen

import (
	"fmt"
	"go/token"
	"strings"
	"text/template"
	"text/template/parse"

	"github.com/dave/jennifer/jen"
)

const (
	templatePkg = "text/template"
	jsonPkg     = "encoding/json"
)

// aiRegister returns the statements of Register that register the AI
// services: one ai.Register per service, with its configuration, its
// methods (for the check of tool-name clashes with its tool sources) and
// the constructor of its implementation. The runtime creates the service,
// registers its checks and provides its bean.
func (e *emitter) aiRegister() []jen.Code {
	var out []jen.Code
	for _, s := range e.m.ais {
		spec := jen.Dict{jen.Id("Config"): jen.Id("deps").Dot(s.field)}
		if len(s.methods) > 0 {
			methods := make([]jen.Code, len(s.methods))
			for i, am := range s.methods {
				methods[i] = jen.Op("&").Id(am.varName)
			}
			spec[jen.Id("Methods")] = jen.Index().Op("*").Qual(aiPkg, "Method").Values(methods...)
		}
		out = append(out, jen.Qual(aiPkg, "Register").Call(
			jen.Id("p"), jen.Id(s.bean.beanVar),
			jen.Qual(aiPkg, "ServiceSpec").Values(spec),
			jen.Func().Params(jen.Id("svc").Op("*").Qual(aiPkg, "Service")).Id(s.bean.obj.Name()).Block(
				jen.Return(jen.Op("&").Id(s.impl).Values(inline("svc", jen.Id("svc")))),
			),
		))
	}
	return out
}

// aiServices writes, per //chat:ai interface, the tools its methods offer
// (each once), its implementation type and, per method, the ai.Method
// that describes it and the method itself.
func (e *emitter) aiServices() {
	written := map[*toolModel]bool{}
	agents := map[*agentModel]bool{}
	for _, s := range e.m.ais {
		for _, am := range s.methods {
			for _, t := range am.tools {
				switch {
				case t.agent != nil:
					if !agents[t.agent] {
						agents[t.agent] = true
						e.agent(t.agent)
					}
				case !written[t]:
					written[t] = true
					e.tool(t)
				}
			}
		}
		name := s.bean.obj.Name()
		e.docFor(s.impl, fmt.Sprintf("%s is the generated implementation of the //chat:ai interface %s.", s.impl, name))
		e.f.Type().Id(s.impl).Struct(jen.Id("svc").Op("*").Qual(aiPkg, "Service"))
		e.f.Line()
		for _, am := range s.methods {
			e.aiMethod(s, am, e.methodVar(s, am))
		}
	}
}

// agent writes the sub-agent tool of a //chat:agent method: a
// *subagent.Tool whose calls look the AI service up in the session's scope
// and call the method.
func (e *emitter) agent(ag *agentModel) {
	s, ok := e.m.aiByName(ag.iface)
	if !ok {
		if e.err == nil {
			e.err = fmt.Errorf("chatgen: internal error: the agent %s belongs to %s, which is not an analyzed //chat:ai service", ag.name, ag.iface)
		}
		return
	}
	e.doc(fmt.Sprintf("%s offers the //chat:ai service %s to other AI services as the tool %s: each call runs %s.%s as a sub-agent, in a session of its own.", ag.varName, ag.iface, ag.name, ag.iface, ag.fn.Name()))
	var opts []jen.Code
	if ag.desc != "" {
		opts = append(opts, field("Description", promptLit(ag.desc)))
	}
	if ag.timeout > 0 {
		opts = append(opts, field("Timeout", durationCode(ag.timeout)))
	}
	if ag.sessions > 0 {
		opts = append(opts, field("MaxSessions", jen.Lit(ag.sessions)))
	}
	if ag.idle > 0 {
		opts = append(opts, field("IdleTimeout", durationCode(ag.idle)))
	}
	options := jen.Nil()
	if len(opts) > 0 {
		options = jen.Op("&").Qual(subagentPkg, "Options").Values(append(opts, jen.Line())...)
	}
	e.f.Var().Id(ag.varName).Op("=").Qual(subagentPkg, "Of").Call(
		jen.Lit(ag.name), jen.Id(s.bean.beanVar), jen.Id(ag.iface).Dot(ag.fn.Name()), options,
	)
	e.f.Line()
}

// tool writes the ai.Tool of a //chat:tool method: its definition for the
// model and the function that calls the method on the bean of the current
// scope.
func (e *emitter) tool(t *toolModel) {
	names := e.names("ctx", "args") // the closure's own parameters
	ctx := "_"
	var fields, args []jen.Code
	fieldNames := locals{}
	for _, p := range t.params {
		if p.isCtx {
			ctx = "ctx"
			args = append(args, jen.Id("ctx"))
			continue
		}
		f := upperFirst(p.name)
		if !token.IsExported(f) {
			f = "Arg" + f
		}
		f = fieldNames.fresh(f)
		fields = append(fields, jen.Id(f).Add(e.typ(p.typ)).Tag(map[string]string{"json": p.name}))
		args = append(args, jen.Id("args").Dot(f))
	}
	bv := names.forType(t.bean.obj.Name())
	call := jen.Id(bv).Dot(t.fn.Name()).Call(args...)
	var body []jen.Code
	switch {
	case t.hasResult && t.errResult:
		body = []jen.Code{jen.Return(call)}
	case t.hasResult:
		body = []jen.Code{jen.Return(call, jen.Nil())}
	case t.errResult:
		body = []jen.Code{jen.Return(jen.Nil(), call)}
	default:
		body = []jen.Code{call, jen.Return(jen.Nil(), jen.Nil())}
	}
	params := []jen.Code{jen.Id(ctx).Add(ctxType()), jen.Id(bv).Add(instanceType(t.bean))}
	// A tool without parameters takes struct{}: BeanTool ignores its
	// arguments.
	what := "it calls"
	if len(fields) > 0 {
		params = append(params, jen.Id("args").Struct(fields...))
		what = "it decodes the model's arguments and calls"
	} else {
		params = append(params, jen.Id("_").Struct())
	}
	invoke := jen.Qual(aiPkg, "BeanTool").Call(jen.Id(t.bean.beanVar), jen.Func().Params(params...).Params(jen.Any(), jen.Error()).Block(body...))

	tool := []jen.Code{
		field("Name", jen.Lit(t.name)),
		field("Description", promptLit(t.desc)),
		field("Parameters", jen.Qual(jsonPkg, "RawMessage").Call(rawLit(t.schema))),
	}
	if e.m.sendsEvent(t) {
		// A //chat:event result goes to the client too, when the tool
		// returns: the runtime sends it.
		tool = append(tool, field("Event", jen.True()))
	}
	if t.immediate {
		tool = append(tool, field("Immediate", jen.True()))
	}
	if t.confirm {
		tool = append(tool, field("Confirm", jen.True()))
	}
	if t.client {
		tool = append(tool, field("Client", jen.True()))
	}
	if t.timeout > 0 {
		tool = append(tool, field("Timeout", durationCode(t.timeout)))
	}
	if t.client {
		// The client runs the tool: the method's body never runs.
		tool = append(tool, jen.Line())
	} else {
		tool = append(tool, field("Invoke", invoke), jen.Line())
	}

	doc := fmt.Sprintf("%s is the tool %s: %s %s.%s on the %s of the current scope.", t.funcName, t.name, what, t.bean.obj.Name(), t.fn.Name(), t.bean.obj.Name())
	if e.m.sendsEvent(t) {
		doc += " Its result is sent to the client as an event when it returns, as well as told to the model."
	}
	e.docFor(t.funcName, doc)
	e.f.Var().Id(t.funcName).Op("=").Qual(aiPkg, "Tool").Values(tool...)
	e.f.Line()
}

// prompt is how a method makes one prompt message.
type prompt struct {
	text  string // the constant message, when not a template
	param int    // > 0: the message is this string parameter as it is
	tmpl  bool   // a template executed with the parameters
}

// promptOf classifies a message template: a text without actions is a
// constant, {{.p}} for a string parameter p is that parameter, anything
// else a template.
func promptOf(text string, am *aiMethod) prompt {
	t, err := template.New("").Parse(text)
	if err != nil || t.Tree == nil {
		return prompt{tmpl: true}
	}
	nodes := t.Tree.Root.Nodes
	var constant strings.Builder
	for _, n := range nodes {
		tn, ok := n.(*parse.TextNode)
		if !ok {
			constant.Reset()
			break
		}
		constant.Write(tn.Text)
	}
	if constant.Len() > 0 || len(nodes) == 0 {
		return prompt{text: constant.String()}
	}
	if len(nodes) == 1 {
		if a, ok := nodes[0].(*parse.ActionNode); ok && len(a.Pipe.Decl) == 0 && len(a.Pipe.Cmds) == 1 && len(a.Pipe.Cmds[0].Args) == 1 {
			if f, ok := a.Pipe.Cmds[0].Args[0].(*parse.FieldNode); ok && len(f.Ident) == 1 {
				for i := 1; i < len(am.params); i++ {
					if am.params[i] == f.Ident[0] && isString(am.sig.Params().At(i).Type()) {
						return prompt{param: i}
					}
				}
			}
		}
	}
	return prompt{tmpl: true}
}

// systemPrompt is how a method makes its system message: a constant
// (possibly none) or a template, which a lone parameter is too.
func systemPrompt(am *aiMethod) prompt {
	if am.system == "" {
		return prompt{}
	}
	p := promptOf(am.system, am)
	if p.param > 0 {
		return prompt{tmpl: true}
	}
	return p
}

// methodVar writes the ai.Method describing one method and returns its
// name.
func (e *emitter) methodVar(s *aiModel, am *aiMethod) string {
	iface := s.bean.obj.Name()
	v := am.varName
	fields := []jen.Code{field("Name", jen.Lit(am.fn.Name()))}
	if s.bean.kind != kindChat { // the zero Kind
		fields = append(fields, field("Kind", jen.Qual(chatPkg, s.bean.kind.ident())))
	}
	tmpl := func(what, text string) jen.Code {
		return jen.Qual(templatePkg, "Must").Call(
			jen.Qual(templatePkg, "New").Call(jen.Lit(iface + "." + am.fn.Name() + " " + what)).Dot("Parse").Call(promptLit(text)),
		)
	}
	if system := systemPrompt(am); system.tmpl {
		fields = append(fields, field("SystemTemplate", tmpl("system", am.system)))
	} else if system.text != "" {
		fields = append(fields, field("System", promptLit(system.text)))
	}
	if promptOf(am.user, am).tmpl {
		fields = append(fields, field("UserTemplate", tmpl("user", am.user)))
	}
	if len(am.tools) > 0 {
		var tools []jen.Code
		for _, t := range am.tools {
			if t.agent != nil {
				tools = append(tools, jen.Line().Id(t.agent.varName).Dot("Tool").Call())
				continue
			}
			tools = append(tools, jen.Line().Id(t.funcName))
		}
		fields = append(fields, field("Tools", jen.Index().Qual(aiPkg, "Tool").Values(append(tools, jen.Line())...)))
	}
	if am.content != nil && !isString(am.content) {
		fields = append(fields,
			field("Schema", jen.Qual(jsonPkg, "RawMessage").Call(rawLit(am.schema))),
			field("Output", jen.Qual(aiPkg, "OutputJSON")),
		)
	}
	e.docFor(v, fmt.Sprintf("%s describes %s.%s to the AI service.", v, iface, am.fn.Name()))
	e.f.Var().Id(v).Op("=").Qual(aiPkg, "Method").Values(append(fields, jen.Line())...)
	e.f.Line()
	return v
}

func (e *emitter) aiMethod(s *aiModel, am *aiMethod, methodVar string) {
	sig := am.sig
	names := e.names(am.idents...)
	recv := names.fresh("x")
	var params []jen.Code
	for i, n := range am.idents {
		params = append(params, jen.Id(n).Add(e.typ(sig.Params().At(i).Type())))
	}
	results, err := e.tc.tuple(sig.Results(), false)
	if err != nil && e.err == nil {
		e.err = err
	}
	ctx := am.idents[0]

	// The request: the method, the user message unless a template makes
	// it, the parameters when a template needs them.
	reqFields := []jen.Code{inline("Method", jen.Op("&").Id(methodVar))}
	user := promptOf(am.user, am)
	switch {
	case user.param > 0:
		reqFields = append(reqFields, inline("User", jen.Id(am.idents[user.param])))
	case !user.tmpl && user.text != "":
		reqFields = append(reqFields, inline("User", promptLit(user.text)))
	}
	var req jen.Code
	if user.tmpl || systemPrompt(am).tmpl {
		var data []jen.Code
		for i, n := range am.params[1:] {
			data = append(data, jen.Lit(n).Op(":").Id(am.idents[i+1]))
		}
		reqFields = append(reqFields, inline("Data", jen.Map(jen.String()).Any().Values(data...)))
		lines := make([]jen.Code, 0, len(reqFields)+1)
		for _, f := range reqFields {
			lines = append(lines, jen.Line().Add(f))
		}
		req = jen.Op("&").Qual(aiPkg, "Request").Values(append(lines, jen.Line())...)
	} else {
		req = jen.Op("&").Qual(aiPkg, "Request").Values(reqFields...)
	}

	svc := func() *jen.Statement { return jen.Id(recv).Dot("svc") }
	errV := names.fresh("err")
	var body []jen.Code
	switch {
	case am.output == aiStream:
		body = []jen.Code{jen.Return(svc().Dot("Stream").Call(jen.Id(ctx), req))}
	case am.content != nil && !isString(am.content):
		v, reply := names.forType(typeNameFor(am.content)), "_"
		if am.output == aiResult {
			reply = names.fresh("reply")
		}
		body = []jen.Code{jen.List(jen.Id(v), jen.Id(reply), jen.Id(errV)).Op(":=").Qual(aiPkg, "Structured").Types(e.typ(am.content)).Call(jen.Id(ctx), svc(), req)}
		if am.output == aiResult {
			body = append(body,
				ifErr(errV, e.zero(sig.Results().At(0).Type()), jen.Id(errV)),
				jen.Return(jen.Qual(aiPkg, "NewResult").Call(jen.Id(v), jen.Id(reply)), jen.Nil()))
		} else {
			body = append(body, jen.Return(jen.Id(v), jen.Id(errV))) // Structured returns the zero T with an error
		}
	default:
		reply := names.fresh("reply")
		body = []jen.Code{
			jen.List(jen.Id(reply), jen.Id(errV)).Op(":=").Add(svc().Dot("Chat").Call(jen.Id(ctx), req)),
			ifErr(errV, e.zero(sig.Results().At(0).Type()), jen.Id(errV)),
		}
		if am.output == aiResult {
			body = append(body, jen.Return(jen.Id(reply).Dot("Result").Call(), jen.Nil()))
		} else {
			body = append(body, jen.Return(jen.Id(reply).Dot("Content"), jen.Nil()))
		}
	}
	e.docFor(s.impl, fmt.Sprintf("%s asks the model, as %s.%s describes.", am.fn.Name(), s.bean.obj.Name(), am.fn.Name()))
	e.f.Func().Params(jen.Id(recv).Op("*").Id(s.impl)).Id(am.fn.Name()).Params(params...).Add(resultList(results)).Block(body...)
	e.f.Line()
}

// promptLit renders a prompt: a multi-line one as a raw string literal
// when it can be one, so that chat_gen.go shows it as it was written, line
// by line; a one-line prompt as an interpreted literal.
func promptLit(s string) jen.Code {
	if !strings.Contains(s, "\n") {
		return jen.Lit(s)
	}
	return rawLit(s)
}

// rawLit renders s as a raw string literal when it can be one: JSON reads
// better without escapes.
func rawLit(s string) jen.Code {
	if strings.ContainsAny(s, "`\r") {
		return jen.Lit(s)
	}
	return jen.Op("`" + s + "`")
}
