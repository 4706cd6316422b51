package ai

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// A ToolSource offers a service tools that chatgen did not generate: the
// tools of an MCP server (package runtime/mcptools makes such sources), or
// any tools an application builds at run time. A service's sources
// ([Config.ToolSources]) add their tools to every method of the service,
// after the method's generated tools, so a nested conversation's service
// offers its own sources' tools and no others.
//
// Tools from a source run like generated ones: their errors, their
// *[ArgumentsError]s and their panics are told to the model as the tool's
// result, and the turn goes on.
type ToolSource interface {
	// Name describes the source in errors and logs, such as
	// `MCP server "lore"`.
	Name() string
	// Tools returns the tools the source offers to the turn running in
	// ctx; ctx carries the turn's chat scope when it has one. The service
	// calls it once per turn, before the first model call, and only reads
	// the slice; it may reuse what it made of a slice it has seen, so a
	// source whose tools change returns a new slice rather than changing
	// the old one. An error fails the turn before any model call.
	Tools(ctx context.Context) ([]Tool, error)
}

// A ToolLister is a [ToolSource] whose tools are known outside any turn
// (an application-wide MCP session's are, once it is connected).
// [Service.Check] lists them to report a name clash with a generated tool
// when the router is built, rather than on the first turn.
type ToolLister interface {
	ToolSource
	// ListTools returns the tools the source offers now.
	ListTools() []Tool
}

// ErrToolClash: two tools offered to one method have the same name (a
// generated tool and a source's, or two sources'). The error names both.
// Check reports it for the sources that are [ToolLister]s; otherwise the
// turn that meets it fails.
var ErrToolClash = errors.New("tool name clash")

// ErrNilToolSource: an entry of [Config.ToolSources] is nil. Check
// reports it, and so does each turn, before any model call.
var ErrNilToolSource = errors.New("nil tool source")

// nilSource reports the first nil entry of the service's sources.
func (s *Service) nilSource() error {
	for i, src := range s.sources {
		if src == nil {
			return fmt.Errorf("%w: ToolSources[%d]", ErrNilToolSource, i)
		}
	}
	return nil
}

// AddMethods tells the service the methods it is called with, so that
// [Service.Check] can compare their tools with those of the service's
// tool sources. [Register] declares the methods of generated code's
// services ([ServiceSpec.Methods]); call AddMethods for a service made
// with [NewService], before the router is built.
func (s *Service) AddMethods(methods ...*Method) {
	s.methods = append(s.methods, methods...)
}

// checkSources reports the clashes between the tools of the declared
// methods and those of the sources that list their tools.
func (s *Service) checkSources() error {
	if err := s.nilSource(); err != nil {
		return fmt.Errorf("ai: %s: %w", s.name, err)
	}
	var lists [][]Tool
	var names []string
	for _, src := range s.sources {
		if l, ok := src.(ToolLister); ok {
			lists = append(lists, l.ListTools())
			names = append(names, src.Name())
		}
	}
	if len(lists) == 0 {
		return nil
	}
	var errs []error
	for _, m := range s.methods {
		if err := clash(m, names, lists); err != nil {
			errs = append(errs, fmt.Errorf("ai: %s.%s: %w", s.name, m.Name, err))
		}
	}
	return errors.Join(errs...)
}

// sourceTools returns the tools of a turn of m on a service with sources:
// m's tools then the sources', and their definitions. What it makes is
// kept on m and reused while the sources return the same slices.
func (s *Service) sourceTools(ctx context.Context, m *Method) ([]Tool, []llms.Tool, error) {
	var buf [4][]Tool
	lists := buf[:0]
	for i, src := range s.sources {
		if src == nil {
			return nil, nil, fmt.Errorf("%w: ToolSources[%d]", ErrNilToolSource, i)
		}
		tools, err := src.Tools(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("the tools of %s: %w", src.Name(), err)
		}
		lists = append(lists, tools)
	}
	if mt := m.merged.Load(); mt != nil && mt.from(s, lists) {
		return mt.tools, mt.defs, nil
	}
	names := make([]string, len(s.sources))
	for i, src := range s.sources {
		names[i] = src.Name()
	}
	if err := clash(m, names, lists); err != nil {
		return nil, nil, err
	}
	mt := &mergedTools{svc: s, lists: make([]listID, len(lists))}
	n := len(m.Tools)
	for i, l := range lists {
		mt.lists[i] = idOf(l)
		n += len(l)
	}
	mt.tools = make([]Tool, 0, n)
	mt.tools = append(mt.tools, m.Tools...)
	for _, l := range lists {
		mt.tools = append(mt.tools, l...)
	}
	defs, err := s.dialect.definitions(mt.tools)
	if err != nil {
		return nil, nil, err
	}
	mt.defs = defs
	m.merged.Store(mt)
	return mt.tools, mt.defs, nil
}

// mergedTools is the tool table of a method on a service with sources,
// and the source slices it was made from.
type mergedTools struct {
	svc   *Service
	lists []listID
	tools []Tool
	defs  []llms.Tool
}

// listID identifies a slice returned by a source.
type listID struct {
	first *Tool
	n     int
}

func idOf(l []Tool) listID {
	if len(l) == 0 {
		return listID{}
	}
	return listID{first: &l[0], n: len(l)}
}

// from reports whether mt was made by s from lists.
func (mt *mergedTools) from(s *Service, lists [][]Tool) bool {
	if mt.svc != s || len(mt.lists) != len(lists) {
		return false
	}
	for i, l := range lists {
		if idOf(l) != mt.lists[i] {
			return false
		}
	}
	return true
}

// clash reports the first tool of the lists (of the sources named names)
// whose name is that of a tool of m or of an earlier tool of the lists.
func clash(m *Method, names []string, lists [][]Tool) error {
	// origin of each name: -1 for a generated tool, else the source's index.
	origin := make(map[string]int, len(m.Tools))
	for i := range m.Tools {
		if n := toolName(&m.Tools[i]); n != "" {
			origin[n] = -1
		}
	}
	for i, l := range lists {
		for k := range l {
			n := toolName(&l[k])
			if n == "" {
				return fmt.Errorf("%w: %s offers a tool without a name", ErrToolClash, names[i])
			}
			switch o, ok := origin[n]; {
			case !ok:
				origin[n] = i
			case o < 0:
				return fmt.Errorf("%w: tool %q of %s clashes with the generated tool %q of method %s", ErrToolClash, n, names[i], n, m.Name)
			default:
				return fmt.Errorf("%w: tool %q of %s clashes with tool %q of %s", ErrToolClash, n, names[i], n, names[o])
			}
		}
	}
	return nil
}

func toolName(t *Tool) string {
	if t.Name != "" || t.Definition.Function == nil {
		return t.Name
	}
	return t.Definition.Function.Name
}

// findTool returns the tool called name.
func findTool(tools []Tool, name string) (*Tool, bool) {
	for i := range tools {
		if toolName(&tools[i]) == name {
			return &tools[i], true
		}
	}
	return nil, false
}

// toolNames lists the names of tools for a message to the model: "a, b".
func toolNames(tools []Tool) string {
	var b strings.Builder
	for i := range tools {
		n := toolName(&tools[i])
		if n == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n)
	}
	return b.String()
}
