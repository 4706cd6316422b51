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

	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// Manifest describes the router's routes for clients: the manifests of its
// packages merged, with the default route marked. Routes registered
// without a description are listed as Untyped. Routes, events and types
// are sorted, so the manifest of a router is always the same. Named types
// of two packages that share a name but differ are told apart by
// prefixing the later one's name with its package name. The result is the
// caller's to change.
func (r *Router) Manifest() *chatimpl.Manifest {
	out := &chatimpl.Manifest{}
	types := map[string]chatimpl.JSONSchema{}
	events := map[chatimpl.EventInfo]bool{}
	for _, p := range r.pkgs {
		m := p.Manifest()
		if m == nil {
			m = &chatimpl.Manifest{}
		}
		rename := mergeTypes(types, m.Types, p.Path())
		infos := make(map[string]*chatimpl.RouteInfo, len(m.Routes))
		for i := range m.Routes {
			infos[m.Routes[i].Name] = &m.Routes[i]
		}
		routes := p.Routes()
		for i := range routes {
			spec := &routes[i]
			if r.routes[spec.Name] != spec {
				continue
			}
			ri := chatimpl.RouteInfo{Name: spec.Name, Default: spec.Name == r.def, Untyped: true}
			if info := infos[spec.Name]; info != nil {
				ri.Untyped = info.Untyped
				ri.Streaming = info.Streaming
				for _, pi := range info.Params {
					ri.Params = append(ri.Params, chatimpl.ParamInfo{Name: pi.Name, Schema: renameRefs(pi.Schema, rename)})
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
	slices.SortFunc(out.Routes, func(a, b chatimpl.RouteInfo) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(out.Events, func(a, b chatimpl.EventInfo) int {
		return cmp.Or(strings.Compare(a.Type, b.Type), strings.Compare(string(a.Schema), string(b.Schema)))
	})
	for name, s := range types {
		out.Types = append(out.Types, chatimpl.TypeInfo{Name: name, Schema: s})
	}
	slices.SortFunc(out.Types, func(a, b chatimpl.TypeInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// mergeTypes adds the named types of one package to types and returns the
// new names of those that clash with a different type of the same name
// (nil when none does).
func mergeTypes(types map[string]chatimpl.JSONSchema, add []chatimpl.TypeInfo, pkgPath string) map[string]string {
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
func freshTypeName(types map[string]chatimpl.JSONSchema, own map[string]bool, rename map[string]string, base string) string {
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

func renameEvents(evs []chatimpl.EventInfo, rename map[string]string) []chatimpl.EventInfo {
	if len(evs) == 0 {
		return nil
	}
	out := make([]chatimpl.EventInfo, len(evs))
	for i, ev := range evs {
		out[i] = chatimpl.EventInfo{Type: ev.Type, Schema: renameRefs(ev.Schema, rename)}
	}
	return out
}

// renameRefs returns s with its references to the named types in rename
// changed to their new names. Without renames, or for a schema that is not
// JSON, s is returned as it is.
func renameRefs(s chatimpl.JSONSchema, rename map[string]string) chatimpl.JSONSchema {
	if len(rename) == 0 || !strings.Contains(string(s), chatimpl.DefsRef) {
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
					if name, ok := strings.CutPrefix(ref, chatimpl.DefsRef); ok && rename[name] != "" {
						v[k] = chatimpl.DefsRef + rename[name]
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
	return chatimpl.JSONSchema(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}
