package skills

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// DefaultBeanName is the name of the bean of loaded skills when
// [Options.BeanName] is empty.
const DefaultBeanName = "github.com/chatscopes/chatgen/runtime/skills.Loaded"

// The names of the tools the tool box offers.
const (
	ToolLoad         = "load_skill"
	ToolReadResource = "read_skill_resource"
)

// DefaultMaxResourceBytes is the most of a resource read_skill_resource
// returns unless [Options.MaxResourceBytes] says otherwise: 64 KiB.
const DefaultMaxResourceBytes = 64 << 10

// ErrNotLoaded is matched (errors.Is) by the error of a tool call refused
// because a skill it needs is not loaded: a gated tool, or
// read_skill_resource before load_skill. The model is told the message.
var ErrNotLoaded = errors.New("skill not loaded")

// ErrUnknown is matched by the error of a tool call naming a skill or a
// resource that the set does not have.
var ErrUnknown = errors.New("skills: unknown")

// Options configure a [Toolbox]; nil and the zero value work.
type Options struct {
	// BeanName names the bean of loaded skills; empty means
	// [DefaultBeanName].
	BeanName string
	// Gated are tools that a skill gates, by the skill's name: they are
	// offered from the first turn (so the tools block never changes) and
	// refused, with an error matching [ErrNotLoaded], until the skill is
	// loaded in the conversation.
	Gated map[string][]ai.Tool
	// GatedNames names, by skill, tools the service has of its own — its
	// generated tools, or another source's — that the skill gates: the
	// hook [Toolbox.ToolHook] (for [ai.Config.ToolHooks]) refuses their
	// calls, with an error matching [ErrNotLoaded], until the skill is
	// loaded. They stay in the tools block from the start, unchanged.
	GatedNames map[string][]string
	// MaxResourceBytes is the most of a resource read_skill_resource
	// returns; 0 means DefaultMaxResourceBytes. A longer one is cut, and
	// the model told so.
	MaxResourceBytes int
}

// A Toolbox offers an AI service a [Set]'s skills (an [ai.ToolSource] for
// [ai.Config.ToolSources]). Make one with [New]; it is safe for concurrent
// use.
type Toolbox struct {
	set   *Set
	bean  *chat.Bean[*Loaded]
	max   int
	tools []ai.Tool
	gated map[string]string // tool name → skill, of GatedNames
}

// New returns a tool box for set. It fails when a gated tool names a
// skill set does not have, or has no name.
func New(set *Set, opts *Options) (*Toolbox, error) {
	if opts == nil {
		opts = &Options{}
	}
	name := opts.BeanName
	if name == "" {
		name = DefaultBeanName
	}
	tb := &Toolbox{set: set, max: opts.MaxResourceBytes}
	if tb.max <= 0 {
		tb.max = DefaultMaxResourceBytes
	}
	tb.bean = chat.NewBean(name, &chat.BeanOptions{Durable: true}, func(context.Context) (*Loaded, error) { return &Loaded{}, nil })
	tb.tools = tb.makeTools()
	gates := make([]string, 0, len(opts.Gated))
	for g := range opts.Gated {
		gates = append(gates, g)
	}
	slices.Sort(gates)
	for _, g := range gates {
		if set.Skill(g) == nil {
			return nil, fmt.Errorf("%w skill %q gates tools", ErrUnknown, g)
		}
		for _, t := range opts.Gated[g] {
			if t.Name == "" || t.Invoke == nil {
				return nil, fmt.Errorf("skills: a tool gated by %q has no name or no Invoke", g)
			}
			tb.tools = append(tb.tools, tb.gate(g, t))
		}
	}
	tb.gated = map[string]string{}
	for g, names := range opts.GatedNames {
		if set.Skill(g) == nil {
			return nil, fmt.Errorf("%w skill %q gates tools", ErrUnknown, g)
		}
		for _, n := range names {
			if other, ok := tb.gated[n]; ok && other != g {
				return nil, fmt.Errorf("skills: the tool %q is gated by both %q and %q", n, other, g)
			}
			tb.gated[n] = g
		}
	}
	return tb, nil
}

// ToolHook returns the hook that gates the tools of [Options.GatedNames]:
// put it in the service's [ai.Config.ToolHooks]. A call of such a tool
// before its skill is loaded in the conversation does not run: the model
// is told that the skill must be loaded first, and the turn goes on.
func (tb *Toolbox) ToolHook() ai.ToolHook {
	return func(next ai.ToolHandler) ai.ToolHandler {
		return func(ctx context.Context, call *ai.ToolCall) (any, error) {
			skill, ok := tb.gated[call.Name]
			if !ok {
				return next(ctx, call)
			}
			l, err := tb.bean.Lookup(ctx)
			if err != nil {
				return nil, err
			}
			if !l.Has(skill) {
				return nil, notLoaded(call.Name, skill)
			}
			return next(ctx, call)
		}
	}
}

func notLoaded(tool, skill string) error {
	return fmt.Errorf("%w: %s needs the skill %q: load it with %s first", ErrNotLoaded, tool, skill, ToolLoad)
}

// Name returns "skills".
func (tb *Toolbox) Name() string { return "skills" }

// Tools returns the tool box's tools: the same slice on every call, so
// the service's tools block does not change.
func (tb *Toolbox) Tools(context.Context) ([]ai.Tool, error) { return tb.tools, nil }

// ListTools returns the tools, for [ai.Service.Check].
func (tb *Toolbox) ListTools() []ai.Tool { return tb.tools }

// Bean returns the durable chat-scoped bean of the skills loaded in a
// conversation.
func (tb *Toolbox) Bean() *chat.Bean[*Loaded] { return tb.bean }

// LoadedSkills reports the names of the skills loaded in the conversation of ctx.
func (tb *Toolbox) LoadedSkills(ctx context.Context) ([]string, error) {
	l, err := tb.bean.Lookup(ctx)
	if err != nil {
		return nil, err
	}
	return l.Names(), nil
}

// Loaded is the durable chat-scoped bean of the skills loaded in a
// conversation, saved as JSON {"skills": [names]}.
type Loaded struct {
	mu    sync.Mutex
	names []string // sorted
}

// Names returns the loaded skills' names, sorted.
func (l *Loaded) Names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.names)
}

// Has reports whether the skill called name is loaded.
func (l *Loaded) Has(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := slices.BinarySearch(l.names, name)
	return ok
}

func (l *Loaded) add(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i, ok := slices.BinarySearch(l.names, name); !ok {
		l.names = slices.Insert(l.names, i, name)
	}
}

type loadedJSON struct {
	Skills []string `json:"skills"`
}

// MarshalJSON encodes the bean for a durable conversation's state.
func (l *Loaded) MarshalJSON() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return json.Marshal(loadedJSON{Skills: l.names})
}

// UnmarshalJSON restores the bean from a durable conversation's state.
func (l *Loaded) UnmarshalJSON(data []byte) error {
	var v loadedJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	names := slices.Clone(v.Skills)
	slices.Sort(names)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.names = slices.Compact(names)
	return nil
}

func decode(arguments string, v any) error {
	d := json.NewDecoder(strings.NewReader(arguments))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return &ai.ArgumentsError{Err: err}
	}
	return nil
}

func (tb *Toolbox) skill(name string) (*Skill, error) {
	s := tb.set.Skill(name)
	if s == nil {
		return nil, fmt.Errorf("%w skill %q: the skills are %s", ErrUnknown, name, strings.Join(tb.names(), ", "))
	}
	return s, nil
}

func (tb *Toolbox) names() []string {
	out := make([]string, len(tb.set.skills))
	for i, s := range tb.set.skills {
		out[i] = s.Name
	}
	return out
}

func (tb *Toolbox) load(ctx context.Context, arguments string) (any, error) {
	var args struct {
		Name string `json:"name"`
	}
	if err := decode(arguments, &args); err != nil {
		return nil, err
	}
	s, err := tb.skill(args.Name)
	if err != nil {
		return nil, err
	}
	l, err := tb.bean.Lookup(ctx)
	if err != nil {
		return nil, err
	}
	l.add(s.Name)
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %q is loaded.\n\n%s\n", s.Name, s.Body)
	if res := s.Resources(); len(res) > 0 {
		fmt.Fprintf(&b, "\nResources (read one with %s):\n", ToolReadResource)
		for _, r := range res {
			fmt.Fprintf(&b, "- %s (%d bytes)\n", r, len(s.resources[r]))
		}
	}
	return b.String(), nil
}

func (tb *Toolbox) readResource(ctx context.Context, arguments string) (any, error) {
	var args struct {
		Skill string `json:"skill"`
		Path  string `json:"path"`
	}
	if err := decode(arguments, &args); err != nil {
		return nil, err
	}
	s, err := tb.skill(args.Skill)
	if err != nil {
		return nil, err
	}
	l, err := tb.bean.Lookup(ctx)
	if err != nil {
		return nil, err
	}
	if !l.Has(s.Name) {
		return nil, fmt.Errorf("%w: load skill %q with %s before reading its resources", ErrNotLoaded, s.Name, ToolLoad)
	}
	p := strings.TrimPrefix(args.Path, "./")
	if !fs.ValidPath(p) || p == "." || p == FileName {
		return nil, &ai.ArgumentsError{Err: fmt.Errorf("path %q is not the path of a resource: use one that %s listed, relative to the skill's directory", args.Path, ToolLoad)}
	}
	data, ok := s.Resource(p)
	if !ok {
		return nil, fmt.Errorf("%w resource %q of skill %q: its resources are %s", ErrUnknown, p, s.Name, strings.Join(s.Resources(), ", "))
	}
	if len(data) <= tb.max {
		return string(data), nil
	}
	cut := data[:tb.max]
	for len(cut) > 0 && !utf8.Valid(cut) {
		cut = cut[:len(cut)-1]
	}
	return fmt.Sprintf("%s\n[cut: the first %d of %d bytes]", cut, len(cut), len(data)), nil
}

// gate wraps t so that it is refused until skill is loaded.
func (tb *Toolbox) gate(skill string, t ai.Tool) ai.Tool {
	invoke := t.Invoke
	t.Description = strings.TrimSpace(t.Description + fmt.Sprintf(" (Needs the skill %q: load it with %s first.)", skill, ToolLoad))
	t.Invoke = func(ctx context.Context, arguments string) (any, error) {
		l, err := tb.bean.Lookup(ctx)
		if err != nil {
			return nil, err
		}
		if !l.Has(skill) {
			return nil, notLoaded(t.Name, skill)
		}
		return invoke(ctx, arguments)
	}
	return t
}

func (tb *Toolbox) makeTools() []ai.Tool {
	var b strings.Builder
	b.WriteString("Loads a skill: returns its instructions and lists its resource files. Load a skill when the task matches its description; a loaded skill stays loaded for the conversation. The skills:")
	for _, s := range tb.set.skills {
		fmt.Fprintf(&b, "\n- %s: %s", s.Name, s.Description)
	}
	names, _ := json.Marshal(tb.names())
	return []ai.Tool{
		{
			Name:        ToolLoad,
			Description: b.String(),
			Parameters:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","enum":` + string(names) + `,"description":"The skill's name."}},"required":["name"],"additionalProperties":false}`),
			Invoke:      tb.load,
		},
		{
			Name:        ToolReadResource,
			Description: fmt.Sprintf("Returns a resource file of a loaded skill (at most %d bytes), by the path %s listed.", tb.max, ToolLoad),
			Parameters: json.RawMessage(`{"type":"object","properties":{` +
				`"skill":{"type":"string","description":"The skill's name."},` +
				`"path":{"type":"string","description":"The resource's path, relative to the skill's directory."}},` +
				`"required":["skill","path"],"additionalProperties":false}`),
			Invoke: tb.readResource,
		},
	}
}
