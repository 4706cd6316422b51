package chat

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A Manifest describes routes to clients: the request data each route
// takes and the events the routes send, with the JSON types of both.
// chatgen generates one per package and registers it with
// [Package.Describe]; [Router.Manifest] merges those of a router's
// packages, and runtime/ws serves the result to browsers as an ES module
// with TypeScript declarations.
//
// Types are JSON Schemas of the JSON that encoding/json reads and writes
// for the Go types. Named types (structs, and string or number types with
// a typed const block) are listed once in Types and referred to as
// {"$ref":"#/$defs/Name"}.
type Manifest struct {
	// Routes are the routes, sorted by name in a Router's manifest.
	Routes []RouteInfo
	// Events are the event types the package declares (//chat:event) with
	// their data: any route may send them, with [ResponseChannel.Send].
	Events []EventInfo
	// Types are the named types the schemas refer to.
	Types []TypeInfo
}

// A RouteInfo describes one route.
type RouteInfo struct {
	// Name is the route's name.
	Name string
	// Default marks the default route. [Router.Manifest] sets it (a lone
	// route is the default); packages leave it false.
	Default bool
	// Streaming marks a route whose answer is streamed (Stream events).
	Streaming bool
	// Untyped marks a route registered without a description: its
	// parameters and events are not known.
	Untyped bool
	// Params are the request data keys the route reads, in the order of
	// the route's parameters. The user's text is the key "userMessage".
	// Every key may be left out: the parameter is then its zero value.
	Params []ParamInfo
	// Events are the events the route's results are sent as. A route
	// that runs another (Execute) or sends events itself may send more.
	Events []EventInfo
}

// A ParamInfo describes one request data key of a route.
type ParamInfo struct {
	Name   string     // the data key: the parameter's name, or "userMessage"
	Schema JSONSchema // the JSON type of its value
}

// An EventInfo describes one event type and its data.
type EventInfo struct {
	Type   string     // the event type
	Schema JSONSchema // the JSON type of its data
}

// A TypeInfo is a named type the schemas of a manifest refer to.
type TypeInfo struct {
	Name   string     // the name a schema refers to with "#/$defs/Name"
	Schema JSONSchema // its JSON type
}

// A JSONSchema is a JSON Schema as JSON text. The empty schema "" (like
// "{}") allows any value.
type JSONSchema string

// MarshalJSON returns the schema as JSON: {} for the empty schema, an
// error for text that is not JSON.
func (s JSONSchema) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte("{}"), nil
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("chat: a JSON schema is not JSON: %.40q", string(s))
	}
	return []byte(s), nil
}

// DefsRef is the prefix of a reference to a named type of a [Manifest]
// in a schema: {"$ref": DefsRef + name}.
const DefsRef = "#/$defs/"

// Describe registers the manifest of the package's routes (generated code
// calls it). A later call replaces it.
func (p *Package) Describe(m *Manifest) {
	p.manifest = m
}

// Manifest describes the router's routes for clients: the manifests of its
// packages merged, with the default route marked. Routes registered
// without a description are listed as Untyped. Routes, events and types
// are sorted, so the manifest of a router is always the same. Named types
// of two packages that share a name but differ are told apart by
// prefixing the later one's name with its package name. The result is the
// caller's to change.
func (r *Router) Manifest() *Manifest {
	out := &Manifest{}
	types := map[string]JSONSchema{}
	events := map[EventInfo]bool{}
	for _, p := range r.pkgs {
		m := p.manifest
		if m == nil {
			m = &Manifest{}
		}
		rename := mergeTypes(types, m.Types, p.path)
		infos := make(map[string]*RouteInfo, len(m.Routes))
		for i := range m.Routes {
			infos[m.Routes[i].Name] = &m.Routes[i]
		}
		for i := range p.routes {
			spec := &p.routes[i]
			if r.routes[spec.Name] != spec {
				continue
			}
			ri := RouteInfo{Name: spec.Name, Default: spec.Name == r.def, Untyped: true}
			if info := infos[spec.Name]; info != nil {
				ri.Untyped = info.Untyped
				ri.Streaming = info.Streaming
				for _, pi := range info.Params {
					ri.Params = append(ri.Params, ParamInfo{Name: pi.Name, Schema: renameRefs(pi.Schema, rename)})
				}
				ri.Events = renameEvents(info.Events, rename)
			}
			out.Routes = append(out.Routes, ri)
		}
		for _, ev := range renameEvents(m.Events, rename) {
			if !events[ev] {
				events[ev] = true
				out.Events = append(out.Events, ev)
			}
		}
	}
	slices.SortFunc(out.Routes, func(a, b RouteInfo) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(out.Events, func(a, b EventInfo) int {
		return cmp.Or(strings.Compare(a.Type, b.Type), strings.Compare(string(a.Schema), string(b.Schema)))
	})
	for name, s := range types {
		out.Types = append(out.Types, TypeInfo{Name: name, Schema: s})
	}
	slices.SortFunc(out.Types, func(a, b TypeInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// mergeTypes adds the named types of one package to types and returns the
// new names of those that clash with a different type of the same name
// (nil when none does).
func mergeTypes(types map[string]JSONSchema, add []TypeInfo, pkgPath string) map[string]string {
	var rename map[string]string
	own := make(map[string]bool, len(add))
	for _, t := range add {
		own[t.Name] = true
	}
	// A renamed type changes the schemas that refer to it, which may then
	// clash in turn: repeat until no new clash appears.
	for changed := true; changed; {
		changed = false
		for _, t := range add {
			if _, done := rename[t.Name]; done {
				continue
			}
			prev, taken := types[t.Name]
			if !taken || prev == renameRefs(t.Schema, rename) {
				continue
			}
			if rename == nil {
				rename = map[string]string{}
			}
			rename[t.Name] = freshTypeName(types, own, rename, pkgPrefix(pkgPath)+t.Name)
			changed = true
		}
	}
	for _, t := range add {
		name := t.Name
		if n, ok := rename[name]; ok {
			name = n
		}
		types[name] = renameRefs(t.Schema, rename)
	}
	return rename
}

// freshTypeName returns base, or base followed by a number, unused by
// types, own and the renames so far.
func freshTypeName(types map[string]JSONSchema, own map[string]bool, rename map[string]string, base string) string {
	used := func(n string) bool {
		if _, ok := types[n]; ok || own[n] {
			return true
		}
		for _, v := range rename {
			if v == n {
				return true
			}
		}
		return false
	}
	n := base
	for i := 2; used(n); i++ {
		n = fmt.Sprintf("%s%d", base, i)
	}
	return n
}

// pkgPrefix is the last element of an import path as the start of a type
// name: "example.com/shop-items" gives "Shopitems".
func pkgPrefix(pkgPath string) string {
	var b strings.Builder
	for _, r := range path.Base(pkgPath) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' {
			b.WriteRune(r)
		}
	}
	s := b.String()
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return "Pkg"
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

func renameEvents(evs []EventInfo, rename map[string]string) []EventInfo {
	if len(evs) == 0 {
		return nil
	}
	out := make([]EventInfo, len(evs))
	for i, ev := range evs {
		out[i] = EventInfo{Type: ev.Type, Schema: renameRefs(ev.Schema, rename)}
	}
	return out
}

// renameRefs returns s with its references to the named types in rename
// changed to their new names. Without renames, or for a schema that is not
// JSON, s is returned as it is.
func renameRefs(s JSONSchema, rename map[string]string) JSONSchema {
	if len(rename) == 0 || !strings.Contains(string(s), DefsRef) {
		return s
	}
	d := json.NewDecoder(strings.NewReader(string(s)))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return s
	}
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if ref, ok := e.(string); ok && k == "$ref" {
					if name, ok := strings.CutPrefix(ref, DefsRef); ok && rename[name] != "" {
						v[k] = DefsRef + rename[name]
						changed = true
					}
					continue
				}
				v[k] = walk(e)
			}
		case []any:
			for i, e := range v {
				v[i] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return s
	}
	return JSONSchema(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
