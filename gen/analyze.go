package gen

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"

	"golang.org/x/tools/go/packages"
)

// pkgModel is everything chatgen generates for one package, checked.
type pkgModel struct {
	fset    *token.FileSet
	pkg     *packages.Package
	beans   []*beanModel  // every scoped type, in source order
	deps    []*depModel   // the fields of Deps, in first-use order
	routes  []*routeModel // in source order
	events  []*eventModel
	catches []*catchModel
	ais     []*aiModel
	tools   map[string][]*toolModel // the //chat:tool methods, by receiver type name
	sb      *schemaBuilder          // shared by tools and AI results; see schemas
	aiTypes map[string]bool         // the names of the //chat:ai types
	// markdownTypes are the types with //chat:markdown, by name: their
	// routes that answer with text render it.
	markdownTypes map[string]*markdownDirective
	// badTools are the types with a //chat:tool that failed its checks.
	badTools map[string]bool
	// agents are the //chat:agent methods, by interface name.
	agents map[string]*agentModel
	// badAgents are the interfaces with a //chat:agent that failed its
	// checks.
	badAgents map[string]bool
	// textParams memoizes textParam: a route that is also an AI method
	// asks twice, and its problems are reported once.
	textParams map[*types.Func]textParamResult

	// generated is every package-level identifier the output declares.
	generated map[string]token.Pos
	// extraNodes are declarations that are not annotated but belong to an
	// annotated one (constructors): type errors inside them are reported.
	extraNodes []ast.Node
}

// empty reports whether the package has nothing to generate.
func (m *pkgModel) empty() bool {
	return len(m.beans) == 0 && len(m.routes) == 0 && len(m.events) == 0 && len(m.catches) == 0 && len(m.ais) == 0
}

// generates reports whether the output declares name.
func (m *pkgModel) generates(name string) bool {
	_, ok := m.generated[name]
	return ok
}

// declare reserves a generated package-level identifier for the
// declaration at pos. A clash with the user's own declaration, or with
// another generated identifier, is an error.
func (m *pkgModel) declare(name string, pos token.Pos, what string, diags *Diagnostics) {
	if prev, ok := m.generated[name]; ok {
		diags.errorf(m.fset.Position(pos), "chatgen would declare %s twice (for %s)", name, what).Related = []Related{
			{Pos: m.fset.Position(prev), Message: "also generated for this declaration"},
		}
		return
	}
	m.generated[name] = pos
	if obj := m.pkg.Types.Scope().Lookup(name); obj != nil && obj.Pos().IsValid() {
		diags.errorf(m.fset.Position(obj.Pos()), "%s is declared here, but chatgen generates %s for %s; rename this declaration", name, name, what).Related = []Related{
			{Pos: m.fset.Position(pos), Message: "generated for this declaration"},
		}
	}
}

// analyze builds and checks the model of one package from its annotated
// declarations.
func analyze(fset *token.FileSet, pkg *packages.Package, anns []*annotated, diags *Diagnostics) *pkgModel {
	m := &pkgModel{fset: fset, pkg: pkg, generated: map[string]token.Pos{}, tools: map[string][]*toolModel{}, badTools: map[string]bool{},
		agents: map[string]*agentModel{}, badAgents: map[string]bool{}}
	if len(anns) > 0 {
		m.declare("Register", anns[0].node.Pos(), "this package's //chat: directives", diags)
	}
	m.aiTypes = map[string]bool{}
	m.markdownTypes = map[string]*markdownDirective{}
	for _, a := range anns {
		if _, ok := first[*aiDirective](a); ok {
			m.aiTypes[a.name] = true
		}
		if d, ok := first[*markdownDirective](a); ok && a.target&targetTypes != 0 {
			m.markdownTypes[a.name] = d
		}
	}
	// Scoped types first, then tools and AI services: routes look their
	// receivers up among them.
	for _, a := range anns {
		if d, ok := first[*scopedDirective](a); ok {
			m.analyzeBean(a, d, diags)
		}
	}
	for _, a := range anns {
		if d, ok := first[*toolDirective](a); ok {
			m.analyzeTool(a, d, diags)
		}
		m.checkParamsWithoutTool(a, diags)
		if d, ok := first[*agentDirective](a); ok {
			m.analyzeAgent(a, d, diags)
		}
	}
	for _, a := range anns {
		if _, ok := first[*aiDirective](a); ok {
			m.analyzeAI(a, anns, diags)
		}
	}
	for _, a := range anns {
		_, isRoute := first[*routeDirective](a)
		_, isAI := first[*aiDirective](a)
		_, inAI := m.aiByName(a.recv)
		for _, d := range a.directives {
			switch d := d.(type) {
			case *scopedDirective, *toolDirective, *paramDirective, *aiDirective, *agentDirective:
			case *systemDirective, *userDirective, *toolsDirective:
				if !isAI && !inAI {
					diags.errorf(fset.Position(d.common().pos), "%s applies to //chat:ai interfaces and their methods", d)
				}
			case *routeDirective:
				m.analyzeRoute(a, d, diags)
			case *eventDirective:
				if a.target&targetTypes != 0 {
					m.analyzeEvent(a, d, diags)
				} else if !isRoute {
					diags.errorf(fset.Position(d.pos), "//chat:event on %s needs //chat:route: it names the event type of the route's result", a.name)
				}
			case *catchDirective:
				m.analyzeCatch(a, d, diags)
			case *markdownDirective:
				// Read by analyzeRoute; checked by checkMarkdown.
				if a.target&targetTypes == 0 && !isRoute {
					diags.errorf(fset.Position(d.pos), "//chat:markdown on %s needs //chat:route: it renders the text answers a route sends", a.name)
				}
			default:
				diags.errorf(fset.Position(d.common().pos), "%s is not supported by this version of chatgen yet", d)
			}
		}
	}
	// A box that some //chat:tools names is used, even when the AI
	// service naming it has errors of its own and never bound it.
	named := map[string]bool{}
	for _, a := range anns {
		for _, d := range all[*toolsDirective](a) {
			for _, t := range d.types {
				named[t.value] = true
			}
		}
	}
	for recv, tools := range m.tools {
		if tools[0].bean == nil && !named[recv] {
			diags.warnf(fset.Position(tools[0].fn.Pos()), "the tools of %s are not used: no //chat:tools names %s", recv, recv)
		}
	}
	for _, ag := range m.agents {
		if !ag.used && !named[ag.iface] {
			diags.warnf(fset.Position(ag.fn.Pos()), "the agent %s is not used: no //chat:tools names %s", ag.name, ag.iface)
		}
	}
	slices.SortFunc(m.beans, func(a, b *beanModel) int { return comparePos(fset, a.obj.Pos(), b.obj.Pos()) })
	m.checkRoutes(diags)
	m.checkMarkdown(diags)
	m.analyzeDeps(diags)
	return m
}

func (m *pkgModel) aiByName(name string) (*aiModel, bool) {
	for _, s := range m.ais {
		if s.bean.obj.Name() == name {
			return s, true
		}
	}
	return nil, false
}
