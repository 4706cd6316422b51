package gen

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template/parse"
	"time"
)

const aiPkg = "github.com/chatscopes/chatgen/runtime/ai"

// aiModel is one //chat:ai interface: the generated implementation calls
// the model through an ai.Service configured by a field of Deps.
type aiModel struct {
	bean    *beanModel  // the interface as a bean, chat-scoped by default
	field   string      // its ai.Config field in Deps
	impl    string      // the generated implementation type
	methods []*aiMethod // the interface's methods, in the type checker's order
}

// aiOutput says what an AI method returns.
type aiOutput uint8

const (
	aiText       aiOutput = iota // string
	aiStructured                 // a struct decoded from JSON
	aiResult                     // ai.Result[T]
	aiStream                     // iter.Seq2[string, error]
)

// aiMethod is one method of a //chat:ai interface.
type aiMethod struct {
	fn     *types.Func
	sig    *types.Signature
	params []string // parameter names (ctx first): the templates' keys
	idents []string // the parameters' identifiers in the generated code

	// system is the system message template: the method's own
	// //chat:system lines, else the interface's; "" for none.
	system string
	// user is the user message template: the //chat:user lines, else
	// {{.P}} for the text parameter P (see textParam).
	user    string
	userPos token.Pos // the first //chat:user; NoPos for a text parameter

	output aiOutput
	// The following are only set for aiStructured and aiResult.
	content types.Type // the structured type, or T of ai.Result[T]
	schema  string     // the JSON schema of content; "" when it is a string

	// tools are the tools offered to the model: those of the method's own
	// //chat:tools boxes, else of the interface's, in order.
	tools []*toolModel

	varName string // the generated ai.Method, named by the emitter
}

// toolModel is one //chat:tool method.
type toolModel struct {
	// bean is the tool box the method belongs to, set when a //chat:tools
	// first names it; nil for a box no AI service uses.
	bean      *beanModel
	fn        *types.Func
	sig       *types.Signature
	name      string      // the name the model calls it by: name=, else the method's
	desc      string      // its description: the method's doc comment
	immediate bool        // the immediate flag: a step of only these ends the loop
	confirm   bool        // the confirm flag: a call waits for the user's confirmation
	client    bool        // the client flag: the client runs the tool
	params    []toolParam // all its parameters, in order
	schema    string      // the JSON schema of its arguments
	funcName  string      // the generated invoker
	hasResult bool        // it returns a value, sent back to the model
	errResult bool        // its last result is an error

	// timeout is timeout=: the longest a call may run; 0 for the
	// service's default.
	timeout time.Duration

	// agent is set for a //chat:agent offered as a tool, whose other
	// fields but name are then zero.
	agent *agentModel
}

// toolParam is one parameter of a tool method.
type toolParam struct {
	name  string // the parameter name, which is also its JSON argument name
	typ   types.Type
	isCtx bool // the leading context.Context: not an argument of the model's
}

// analyzeTool checks a //chat:tool method; its box is resolved when an AI
// service names it.
func (m *pkgModel) analyzeTool(a *annotated, d *toolDirective, diags *Diagnostics) {
	fd, ok := a.node.(*ast.FuncDecl)
	if !ok {
		return
	}
	fn, _ := m.pkg.TypesInfo.Defs[fd.Name].(*types.Func)
	if fn == nil {
		return
	}
	t := &toolModel{fn: fn, sig: fn.Type().(*types.Signature), name: fn.Name(), immediate: d.immediate, confirm: d.confirm, client: d.client, timeout: d.timeout}
	if d.name != "" {
		t.name = d.name
	}
	if d.client && d.confirm {
		diags.errorf(m.fset.Position(fd.Name.Pos()), "tool %s: client and confirm exclude each other: a client tool's call already waits for the client, which may ask the user", t.name)
		m.badTools[a.recv] = true
		return
	}
	t.desc = strings.TrimSpace(fd.Doc.Text())
	if t.desc == "" {
		diags.warnf(m.fset.Position(fd.Name.Pos()), "tool %s has no doc comment: the model gets no description of it", t.name)
	}
	paramDocs := m.paramDocs(a, fn, diags)
	sb := m.schemas()
	props := &schema{}
	var required []string
	params := t.sig.Params()
	good := true
	if t.sig.Variadic() {
		diags.errorf(m.fset.Position(fd.Name.Pos()), "tool %s cannot be variadic", t.name)
		return
	}
	for i := range params.Len() {
		p := params.At(i)
		tp := toolParam{name: p.Name(), typ: p.Type()}
		if i == 0 && isContext(p.Type()) {
			tp.isCtx = true
			t.params = append(t.params, tp)
			continue
		}
		if p.Name() == "" || p.Name() == "_" {
			diags.errorf(m.fset.Position(p.Pos()), "tool %s: parameter %d needs a name: it is the argument's name for the model", t.name, i+1)
			good = false
			continue
		}
		s, why := sb.typeSchema(p.Type(), nil)
		if why != "" {
			diags.errorf(m.fset.Position(p.Pos()), "tool %s: parameter %s has no JSON schema: %s", t.name, p.Name(), why)
			good = false
			continue
		}
		if doc := paramDocs[p.Name()]; doc != "" {
			s.set("description", doc)
		}
		props.set(p.Name(), s)
		if _, isPtr := p.Type().(*types.Pointer); !isPtr {
			required = append(required, p.Name())
		}
		t.params = append(t.params, tp)
	}
	res := t.sig.Results()
	switch {
	case res.Len() == 0:
	case res.Len() == 1 && isError(res.At(0).Type()):
		t.errResult = true
	case res.Len() == 1:
		t.hasResult = true
	case res.Len() == 2 && isError(res.At(1).Type()):
		t.hasResult, t.errResult = true, true
	default:
		diags.errorf(m.fset.Position(fd.Name.Pos()), "tool %s must return at most one value and an error", t.name)
		good = false
	}
	if !good {
		m.badTools[a.recv] = true
		return
	}
	s := newSchema("type", "object", "properties", props)
	if len(required) > 0 {
		s.set("required", required)
	}
	s.set("additionalProperties", false)
	t.schema = jsonText(s)
	t.funcName = "chatTool" + a.recv + fn.Name()
	m.declare(t.funcName, fd.Pos(), "tool "+t.name, diags)
	m.tools[a.recv] = append(m.tools[a.recv], t)
}

// paramDocs returns the //chat:param descriptions of the method fn
// annotated by a, by parameter name, and reports those naming no parameter.
func (m *pkgModel) paramDocs(a *annotated, fn *types.Func, diags *Diagnostics) map[string]string {
	docs := map[string]string{}
	params := fn.Type().(*types.Signature).Params()
	for _, pd := range all[*paramDirective](a) {
		name := pd.param.value
		if paramIndex(params, name) < 0 {
			d := diags.errorf(m.fset.Position(pd.param.pos), "//chat:param %s: %s has no parameter %s", name, fn.Name(), name)
			if s, ok := suggest(name, paramNames(params)); ok {
				d.Message += "; did you mean " + s + "?"
			}
			continue
		}
		docs[name] = pd.text
	}
	return docs
}

// checkParamsWithoutTool reports the //chat:param directives of a method
// without //chat:tool, which describe nothing to any model, and checks
// their names all the same.
func (m *pkgModel) checkParamsWithoutTool(a *annotated, diags *Diagnostics) {
	params := all[*paramDirective](a)
	if len(params) == 0 {
		return
	}
	if _, ok := first[*toolDirective](a); ok {
		return
	}
	for _, pd := range params {
		diags.errorf(m.fset.Position(pd.pos), "//chat:param on %s needs //chat:tool: it describes a parameter of a tool to the model", a.name)
	}
	if fd, ok := a.node.(*ast.FuncDecl); ok {
		if fn, _ := m.pkg.TypesInfo.Defs[fd.Name].(*types.Func); fn != nil {
			m.paramDocs(a, fn, diags)
		}
	}
}

// isEventValue reports whether a value of type t is sent as a //chat:event
// type: t (or *t's element) is one of this package's //chat:event types,
// or t has a ChatEventType method of its own.
func (m *pkgModel) isEventValue(t types.Type) bool {
	e := t
	if p, ok := t.(*types.Pointer); ok {
		e = p.Elem()
	}
	if n, ok := types.Unalias(e).(*types.Named); ok {
		for _, ev := range m.events {
			if ev.obj == n.Obj() {
				return true
			}
		}
	}
	if _, isIface := t.Underlying().(*types.Interface); isIface {
		return false // the dynamic type decides, at run time
	}
	obj, _, _ := types.LookupFieldOrMethod(t, false, nil, "ChatEventType")
	fn, ok := obj.(*types.Func)
	if !ok {
		return false
	}
	sig := fn.Type().(*types.Signature)
	return sig.Params().Len() == 0 && sig.Results().Len() == 1 && isString(sig.Results().At(0).Type())
}

// sendsEvent reports whether the tool sends its result to the client when
// it returns: the result is a //chat:event value.
func (m *pkgModel) sendsEvent(t *toolModel) bool {
	return t.hasResult && !t.client && m.isEventValue(t.sig.Results().At(0).Type())
}

// aiMethodOf returns the AI method fn is, or nil.
func (m *pkgModel) aiMethodOf(fn *types.Func) *aiMethod {
	for _, s := range m.ais {
		for _, am := range s.methods {
			if am.fn == fn {
				return am
			}
		}
	}
	return nil
}

// paramNames returns the names of params, the leading context.Context and
// unnamed ones left out.
func paramNames(params *types.Tuple) []string {
	var names []string
	for i := range params.Len() {
		p := params.At(i)
		if p.Name() == "" || p.Name() == "_" || i == 0 && isContext(p.Type()) {
			continue
		}
		names = append(names, p.Name())
	}
	return names
}

func (m *pkgModel) schemas() *schemaBuilder {
	if m.sb == nil {
		m.sb = newSchemaBuilder(m)
	}
	return m.sb
}

// analyzeAI checks a //chat:ai interface and its methods.
func (m *pkgModel) analyzeAI(a *annotated, anns []*annotated, diags *Diagnostics) {
	spec, ok := a.node.(*ast.TypeSpec)
	if !ok {
		return
	}
	name := spec.Name.Name
	b := m.beanNamed(name)
	if b == nil {
		b = m.addBean(spec, kindChat, "//chat:ai "+name, diags)
		if b == nil {
			return
		}
	}
	s := &aiModel{bean: b, field: upperFirst(name), impl: "chatAI" + upperFirst(name)}
	b.ai = s
	m.declare(s.impl, spec.Pos(), "//chat:ai "+name, diags)

	typeSystem, _ := m.systemText(a, diags)
	typeTools := all[*toolsDirective](a)
	methodAnns := map[string]*annotated{}
	for _, x := range anns {
		if x.target == targetInterfaceMethod && x.recv == name {
			methodAnns[x.name] = x
		}
	}
	iface := b.obj.Type().Underlying().(*types.Interface)
	for i := range iface.NumMethods() {
		fn := iface.Method(i)
		ma := methodAnns[fn.Name()]
		am := m.analyzeAIMethod(s, fn, ma, typeSystem, typeTools, diags)
		if am != nil {
			s.methods = append(s.methods, am)
		}
	}
	m.ais = append(m.ais, s)
}

func (m *pkgModel) analyzeAIMethod(s *aiModel, fn *types.Func, ma *annotated, typeSystem string, typeTools []*toolsDirective, diags *Diagnostics) *aiMethod {
	sig := fn.Type().(*types.Signature)
	pos := m.fset.Position(fn.Pos())
	am := &aiMethod{fn: fn, sig: sig, system: typeSystem}
	params := sig.Params()
	if params.Len() == 0 || !isContext(params.At(0).Type()) {
		diags.errorf(pos, "//chat:ai %s.%s must take a context.Context first: it calls the model", s.bean.obj.Name(), fn.Name())
		return nil
	}
	if sig.Variadic() {
		diags.errorf(pos, "//chat:ai %s.%s cannot be variadic", s.bean.obj.Name(), fn.Name())
		return nil
	}
	for i := range params.Len() {
		n := params.At(i).Name()
		if n == "" || n == "_" {
			diags.errorf(pos, "//chat:ai %s.%s: parameter %d needs a name: templates refer to parameters by name", s.bean.obj.Name(), fn.Name(), i+1)
			return nil
		}
		am.params = append(am.params, n)
	}
	am.idents = m.unshadow(am.params)

	// Result.
	res := sig.Results()
	switch {
	case res.Len() == 1:
		if seq, elems, ok := iterSeq(res.At(0).Type()); ok && seq == "Seq2" && isString(elems[0]) && isError(elems[1]) {
			am.output = aiStream
			break
		}
		diags.errorf(pos, "//chat:ai %s.%s must return (T, error) or iter.Seq2[string, error]", s.bean.obj.Name(), fn.Name())
		return nil
	case res.Len() == 2 && isError(res.At(1).Type()):
		t := res.At(0).Type()
		switch {
		case isString(t):
			am.output = aiText
		case isAIResult(t):
			am.output = aiResult
			am.content = types.Unalias(t).(*types.Named).TypeArgs().At(0)
		default:
			am.output = aiStructured
			am.content = t
		}
		if am.content != nil && !isString(am.content) {
			sc, why := m.schemas().typeSchema(am.content, nil)
			if why != "" {
				diags.errorf(pos, "//chat:ai %s.%s: the result has no JSON schema: %s", s.bean.obj.Name(), fn.Name(), why)
				return nil
			}
			am.schema = jsonText(sc)
		}
	default:
		diags.errorf(pos, "//chat:ai %s.%s must return (T, error) or iter.Seq2[string, error]", s.bean.obj.Name(), fn.Name())
		return nil
	}

	// Prompts.
	if sys, ok := m.systemText(ma, diags); ok {
		am.system = sys
	}
	users := all[*userDirective](ma)
	if len(users) > 0 {
		lines := make([]string, len(users))
		for i, u := range users {
			lines[i] = u.text
		}
		am.user = strings.Join(lines, "\n")
		am.userPos = users[0].pos
	}
	toolDirs := all[*toolsDirective](ma)
	_, isAgent := first[*agentDirective](ma)
	route, _ := first[*routeDirective](ma)
	switch {
	case len(users) > 0: // a //chat:user without text was reported
	case isAgent && params.Len() == 2 && isString(params.At(1).Type()):
		// An agent's task is its user message, whatever its name.
		am.user = "{{." + params.At(1).Name() + "}}"
	default:
		who := fmt.Sprintf("//chat:ai %s.%s", s.bean.obj.Name(), fn.Name())
		name, ok := m.textParam(fn, route, who, diags)
		if !ok {
			return nil
		}
		if name == "" {
			diags.errorf(pos, "%s: no user message: %s", who, noTextParamHint(params, route != nil))
			return nil
		}
		am.user = "{{." + name + "}}"
	}
	ok := true
	for _, tmpl := range []struct {
		text, what string
		at         token.Pos
	}{{am.system, "system", fn.Pos()}, {am.user, "user", am.userPos}} {
		if tmpl.text == "" {
			continue
		}
		at := tmpl.at
		if !at.IsValid() {
			at = fn.Pos()
		}
		if err := checkTemplate(tmpl.text, am.params[1:]); err != "" {
			diags.errorf(m.fset.Position(at), "//chat:ai %s.%s: %s message: %s", s.bean.obj.Name(), fn.Name(), tmpl.what, err)
			ok = false
		}
	}

	// Tools: the method's own //chat:tools replace the interface's.
	if len(toolDirs) == 0 {
		toolDirs = typeTools
	}
	seen := map[string]string{} // tool name: the method it calls
	for _, d := range toolDirs {
		for _, arg := range d.types {
			var box []*toolModel
			if ag, isAI := m.agentTool(s, arg, diags); isAI {
				if ag == nil {
					ok = false
					continue
				}
				box = []*toolModel{{name: ag.name, fn: ag.fn, agent: ag}}
			} else {
				box = m.toolBox(arg, diags)
			}
			for _, t := range box {
				method := t.fn.Name()
				if t.agent != nil {
					method = t.agent.iface + "." + method
				} else {
					method = t.bean.obj.Name() + "." + method
				}
				if prev, dup := seen[t.name]; dup {
					diags.errorf(m.fset.Position(arg.pos), "//chat:ai %s.%s: two tools are called %s (%s and %s)", s.bean.obj.Name(), fn.Name(), t.name, prev, method)
					ok = false
					continue
				}
				seen[t.name] = method
				am.tools = append(am.tools, t)
			}
		}
	}
	if !ok {
		return nil
	}
	return am
}

// noTextParamHint says how to give an AI method without //chat:user and
// without a text parameter its user message, naming the parameter meant
// when there is exactly one string parameter.
func noTextParamHint(params *types.Tuple, isRoute bool) string {
	hint := "name the text parameter userMessage, msg or message, or add //chat:user"
	if isRoute {
		hint = "name the text parameter userMessage, msg or message, add user=NAME to //chat:route, or add //chat:user"
	}
	var strs []string
	for i := range params.Len() {
		if isString(params.At(i).Type()) {
			strs = append(strs, params.At(i).Name())
		}
	}
	switch {
	case len(strs) != 1:
	case isRoute:
		hint += "; did you mean user=" + strs[0] + "?"
	default:
		hint += "; did you mean //chat:user {{." + strs[0] + "}}?"
	}
	return hint
}

// suggestToolBox returns the type with //chat:tool methods, or the
// //chat:ai interface with a //chat:agent method, whose name is
// closest to name, if one is close enough to be a typo of it.
func (m *pkgModel) suggestToolBox(name string) (string, bool) {
	byLower := map[string]string{}
	var cands []string
	for _, box := range slices.Concat(slices.Collect(maps.Keys(m.tools)), slices.Collect(maps.Keys(m.agents))) {
		l := strings.ToLower(box)
		byLower[l] = box
		cands = append(cands, l)
	}
	slices.Sort(cands)
	s, ok := suggest(name, cands)
	return byLower[s], ok
}

// toolBox resolves a //chat:tools argument: a type of this package with
// //chat:tool methods, used as a scoped bean (chat-scoped unless it says
// otherwise).
func (m *pkgModel) toolBox(arg arg, diags *Diagnostics) []*toolModel {
	name := arg.value
	tools := m.tools[name]
	if len(tools) == 0 {
		if m.pkg.Types.Scope().Lookup(name) == nil {
			d := diags.errorf(m.fset.Position(arg.pos), "//chat:tools: no type %s in this package", name)
			if s, ok := m.suggestToolBox(name); ok {
				d.Message += "; did you mean " + s + "?"
			}
		} else if !m.badTools[name] {
			diags.errorf(m.fset.Position(arg.pos), "//chat:tools: %s has no //chat:tool methods", name)
		}
		return nil
	}
	if tools[0].bean == nil {
		b := m.beanNamed(name)
		if b == nil {
			spec := m.typeSpec(name)
			if spec == nil {
				return nil
			}
			if _, isStruct := spec.Type.(*ast.StructType); !isStruct {
				diags.errorf(m.fset.Position(arg.pos), "//chat:tools: %s must be a struct type (or a scoped interface)", name)
				return nil
			}
			b = m.addBean(spec, kindChat, "the tools of "+name, diags)
			if b == nil {
				return nil
			}
		}
		for _, t := range tools {
			t.bean = b
		}
	}
	return tools
}

// systemText joins the //chat:system lines of a (nil allowed) with
// newlines, reading the file= forms. ok is false when a has none.
func (m *pkgModel) systemText(a *annotated, diags *Diagnostics) (string, bool) {
	ds := all[*systemDirective](a)
	if len(ds) == 0 {
		return "", false
	}
	var lines []string
	for _, d := range ds {
		if d.file.value != "" {
			dir := filepath.Dir(m.fset.Position(d.pos).Filename)
			data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(d.file.value)))
			if err != nil {
				diags.errorf(m.fset.Position(d.file.pos), "//chat:system file=%s: %v", d.file.value, unwrapPathError(err))
				continue
			}
			lines = append(lines, strings.TrimRight(string(data), "\n"))
			continue
		}
		lines = append(lines, d.text)
	}
	return strings.Join(lines, "\n"), true
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// checkTemplate parses a text/template and checks that every field it
// names is a parameter. It returns "" or the problem.
func checkTemplate(text string, params []string) string {
	trees, err := parse.Parse("t", text, "{{", "}}", map[string]any{
		"and": nil, "or": nil, "not": nil, "len": nil, "index": nil, "print": nil, "printf": nil, "println": nil,
		"eq": nil, "ne": nil, "lt": nil, "le": nil, "gt": nil, "ge": nil, "html": nil, "js": nil, "urlquery": nil,
		"slice": nil, "call": nil,
	})
	if err != nil {
		msg := err.Error()
		if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "template: ") {
			msg = msg[i+2:]
		}
		return msg
	}
	var bad []string
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			if n == nil {
				return
			}
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.ActionNode:
			walk(n.Pipe)
		case *parse.PipeNode:
			if n == nil {
				return
			}
			for _, c := range n.Cmds {
				walk(c)
			}
		case *parse.CommandNode:
			for _, a := range n.Args {
				walk(a)
			}
		case *parse.FieldNode:
			if !slices.Contains(params, n.Ident[0]) && !slices.Contains(bad, n.Ident[0]) {
				bad = append(bad, n.Ident[0])
			}
		case *parse.ChainNode:
			walk(n.Node)
		case *parse.IfNode:
			walk(n.Pipe)
			walk(n.List)
			walk(n.ElseList)
		case *parse.RangeNode:
			walk(n.Pipe)
			// Inside range, dot is the element: fields there are not parameters.
		case *parse.WithNode:
			walk(n.Pipe)
		}
	}
	walk(trees["t"].Root)
	if len(bad) > 0 {
		return fmt.Sprintf("{{.%s}} names no parameter (the parameters are %s)", bad[0], strings.Join(params, ", "))
	}
	return ""
}

func isAIResult(t types.Type) bool {
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == aiPkg && n.Obj().Name() == "Result"
}
