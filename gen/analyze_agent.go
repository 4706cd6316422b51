package gen

import (
	"go/ast"
	"go/types"
	"strings"
	"time"
)

const subagentPkg = "github.com/chatscopes/chatgen/runtime/agent/subagent"

// agentModel is one //chat:agent method: the //chat:ai service it belongs
// to, offered to the AI services whose //chat:tools name it as a
// sub-agent tool.
type agentModel struct {
	iface    string        // the //chat:ai interface
	fn       *types.Func   // the method that answers a task
	name     string        // the tool's name: name=, else the method's
	desc     string        // the tool's description: the method's doc comment
	timeout  time.Duration // timeout=; 0 for none but the turn's
	sessions int           // sessions=; 0 for subagent's default
	idle     time.Duration // idle=; 0 for subagent's default
	varName  string        // the generated *subagent.Tool
	used     bool          // some //chat:tools names it
}

// analyzeAgent checks a //chat:agent method: a method of a //chat:ai
// interface that takes a context.Context and the task and returns
// (string, error), the only one of its interface.
func (m *pkgModel) analyzeAgent(a *annotated, d *agentDirective, diags *Diagnostics) {
	field, ok := a.node.(*ast.Field)
	if !ok {
		return
	}
	pos := m.fset.Position(d.pos)
	if !m.aiTypes[a.recv] {
		diags.errorf(pos, "//chat:agent on %s.%s needs //chat:ai on %s: only an AI service can be offered as an agent", a.recv, a.name, a.recv)
		return
	}
	if prev, dup := m.agents[a.recv]; dup {
		diags.errorf(pos, "//chat:agent on %s.%s: %s already has one, on %s: an AI service is offered as one agent", a.recv, a.name, a.recv, prev.fn.Name())
		return
	}
	tn, _ := m.pkg.Types.Scope().Lookup(a.recv).(*types.TypeName)
	if tn == nil {
		return
	}
	iface, _ := tn.Type().Underlying().(*types.Interface)
	if iface == nil {
		return
	}
	var fn *types.Func
	for i := range iface.NumMethods() {
		if iface.Method(i).Name() == a.name {
			fn = iface.Method(i)
		}
	}
	if fn == nil {
		return
	}
	sig := fn.Type().(*types.Signature)
	p, r := sig.Params(), sig.Results()
	if p.Len() != 2 || !isContext(p.At(0).Type()) || !isString(p.At(1).Type()) || sig.Variadic() ||
		r.Len() != 2 || !isString(r.At(0).Type()) || !isError(r.At(1).Type()) {
		m.badAgents[a.recv] = true
		diags.errorf(m.fset.Position(fn.Pos()), "//chat:agent %s.%s must be func(ctx context.Context, task string) (string, error): it answers the task the calling model gives", a.recv, a.name)
		return
	}
	ag := &agentModel{iface: a.recv, fn: fn, name: fn.Name(), timeout: d.timeout, sessions: d.sessions, idle: d.idle, varName: "chatAgent" + upperFirst(a.recv)}
	if d.name != "" {
		ag.name = d.name
	}
	ag.desc = strings.TrimSpace(field.Doc.Text())
	if ag.desc == "" {
		diags.warnf(m.fset.Position(fn.Pos()), "agent %s has no doc comment: the model gets no description of what it does", ag.name)
	}
	m.declare(ag.varName, field.Pos(), "//chat:agent "+a.recv+"."+a.name, diags)
	m.agents[a.recv] = ag
}

// agentTool resolves a //chat:tools argument naming a //chat:ai
// interface, for the service s: its agent, or nil (reported) when it has
// none or is s itself. ok is false when the argument is not an AI
// service: a tool box, then.
func (m *pkgModel) agentTool(s *aiModel, arg arg, diags *Diagnostics) (ag *agentModel, ok bool) {
	name := arg.value
	if !m.aiTypes[name] {
		return nil, false
	}
	ag = m.agents[name]
	switch {
	case name == s.bean.obj.Name():
		diags.errorf(m.fset.Position(arg.pos), "//chat:tools: %s cannot be offered to itself as an agent", name)
		return nil, true
	case ag == nil:
		if !m.badAgents[name] {
			diags.errorf(m.fset.Position(arg.pos), "//chat:tools: %s is a //chat:ai service without a //chat:agent method: mark the method that answers a task with //chat:agent to offer it as an agent", name)
		}
		return nil, true
	}
	ag.used = true
	return ag, true
}
