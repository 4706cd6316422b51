package jsroutes

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// TypeScript from the JSON Schemas of a chatimpl.Manifest: the subset chatgen
// writes (types, enums, arrays, objects with properties or
// additionalProperties, anyOf, $ref to the manifest's types). Anything
// else is unknown, which is always true of the value.

var jsIdent = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

// jsReserved are the words a const cannot be named in a module:
// JavaScript's reserved words (strict mode included), and undefined,
// which TypeScript does not let a declaration shadow.
var jsReserved = wordSet(`await break case catch class const continue debugger default delete do
	else enum export extends false finally for function if import in instanceof new null return super
	switch this throw true try typeof var void while with implements interface let package private
	protected public static yield arguments eval undefined`)

// tsReserved are the words a type cannot be named besides: TypeScript's
// predefined types.
var tsReserved = wordSet(`any unknown never string number boolean symbol object bigint`)

func wordSet(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// tsHelpers are the names the declarations give their own types.
var tsHelpers = []string{"ChatEvents", "ChatEventHandlers", "ChatHandlers", "ChatRoute", "ChatRouteSession", "ChatRoutes"}

// tsTypes renders schemas as TypeScript type expressions.
type tsTypes struct {
	// names maps the manifest's type names to their TypeScript names.
	names map[string]string
}

func newTSTypes(m *chatimpl.Manifest) *tsTypes {
	ts := &tsTypes{names: map[string]string{}}
	taken := map[string]bool{}
	for _, h := range tsHelpers {
		taken[h] = true
	}
	for _, t := range m.Types {
		n := t.Name
		if !jsIdent.MatchString(n) {
			n = strings.Map(func(r rune) rune {
				if r < 128 && jsIdent.MatchString(string(r)) {
					return r
				}
				return '_'
			}, n)
			if !jsIdent.MatchString(n) {
				n = "T" + n
			}
		}
		for taken[n] || jsReserved[n] || tsReserved[n] || strings.HasPrefix(n, "__cs_") {
			n += "_"
		}
		taken[n] = true
		ts.names[t.Name] = n
	}
	return ts
}

// decode parses a schema; an empty or invalid one is {} (any value).
func decodeSchema(s chatimpl.JSONSchema) map[string]any {
	var v map[string]any
	d := json.NewDecoder(strings.NewReader(string(s)))
	d.UseNumber()
	if s == "" || d.Decode(&v) != nil || v == nil {
		return map[string]any{}
	}
	return v
}

// expr renders the schema as a type expression.
func (ts *tsTypes) expr(v any) string {
	s, ok := v.(map[string]any)
	if !ok {
		if v == false {
			return "never"
		}
		return "unknown"
	}
	if ref, ok := s["$ref"].(string); ok {
		if n, ok := strings.CutPrefix(ref, chatimpl.DefsRef); ok && ts.names[n] != "" {
			return ts.names[n]
		}
		return "unknown"
	}
	if alts, ok := s["anyOf"].([]any); ok {
		var parts []string
		for _, a := range alts {
			parts = append(parts, ts.expr(a))
		}
		return union(parts)
	}
	if enum, ok := s["enum"].([]any); ok && len(enum) > 0 {
		var parts []string
		for _, e := range enum {
			b, err := json.Marshal(e)
			if err != nil {
				return "unknown"
			}
			parts = append(parts, string(b))
		}
		return union(parts)
	}
	switch t := s["type"].(type) {
	case string:
		return ts.typed(t, s)
	case []any:
		var parts []string
		for _, e := range t {
			if name, ok := e.(string); ok {
				parts = append(parts, ts.typed(name, s))
			}
		}
		return union(parts)
	}
	return "unknown"
}

func (ts *tsTypes) typed(t string, s map[string]any) string {
	switch t {
	case "string":
		return "string"
	case "integer", "number":
		return "number"
	case "boolean":
		return "boolean"
	case "null":
		return "null"
	case "array":
		elem := ts.expr(s["items"])
		if _, ok := s["items"]; !ok {
			elem = "unknown"
		}
		if strings.Contains(elem, " | ") {
			elem = "(" + elem + ")"
		}
		return elem + "[]"
	case "object":
		if props, ok := s["properties"].(map[string]any); ok && len(props) > 0 {
			var b strings.Builder
			b.WriteString("{ ")
			for _, p := range ts.props(s, props) {
				fmt.Fprintf(&b, "%s%s: %s; ", propName(p.name), p.opt, p.typ)
			}
			b.WriteString("}")
			return b.String()
		}
		if ap, ok := s["additionalProperties"]; ok && ap != true {
			if ap == false {
				return "Record<string, never>"
			}
			return "Record<string, " + ts.expr(ap) + ">"
		}
		return "Record<string, unknown>"
	}
	return "unknown"
}

// tsProp is one property of an object type.
type tsProp struct {
	name, opt, typ, doc string
}

// props lists an object schema's properties in the order of its JSON
// text (properties keeps it: see orderedKeys).
func (ts *tsTypes) props(s map[string]any, props map[string]any) []tsProp {
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if n, ok := r.(string); ok {
				required[n] = true
			}
		}
	}
	keys, _ := s[orderKey].([]string)
	if keys == nil {
		for k := range props {
			keys = append(keys, k)
		}
		slices.Sort(keys)
	}
	var out []tsProp
	for _, k := range keys {
		p := props[k]
		tp := tsProp{name: k, typ: ts.expr(p)}
		if !required[k] {
			tp.opt = "?"
		}
		if ps, ok := p.(map[string]any); ok {
			tp.doc, _ = ps["description"].(string)
			if tp.doc == "" && ps["format"] == "date-time" {
				tp.doc = "A time, in RFC 3339 format."
			}
		}
		out = append(out, tp)
	}
	return out
}

// orderKey is where decodeOrdered keeps the order of an object's
// properties.
const orderKey = "\x00order"

// decodeOrdered decodes a schema keeping the order of the keys of every
// "properties" object (under orderKey in the schema holding it), so that
// interfaces list their fields in the order of the Go struct.
func decodeOrdered(s chatimpl.JSONSchema) map[string]any {
	v := decodeSchema(s)
	addOrder(v, string(s))
	return v
}

// addOrder records, for each schema with properties, the order of their
// keys in the JSON text.
func addOrder(v any, text string) {
	// Walk the text with a decoder in step with the decoded value.
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var walk func(v any)
	walk = func(v any) {
		tok, err := d.Token()
		if err != nil {
			return
		}
		switch tok {
		case json.Delim('{'):
			obj, _ := v.(map[string]any)
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return
				}
				k, _ := kt.(string)
				if k == "properties" && obj != nil {
					props, _ := obj[k].(map[string]any)
					obj[orderKey] = propKeys(d, props, walk)
					continue
				}
				var child any
				if obj != nil {
					child = obj[k]
				}
				walk(child)
			}
			_, _ = d.Token() // '}'
		case json.Delim('['):
			arr, _ := v.([]any)
			for i := 0; d.More(); i++ {
				var child any
				if i < len(arr) {
					child = arr[i]
				}
				walk(child)
			}
			_, _ = d.Token() // ']'
		}
	}
	walk(v)
}

// propKeys reads a "properties" object from d, walking each property's
// schema, and returns its keys in order.
func propKeys(d *json.Decoder, props map[string]any, walk func(any)) []string {
	var keys []string
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for d.More() {
		kt, err := d.Token()
		if err != nil {
			return keys
		}
		k, _ := kt.(string)
		keys = append(keys, k)
		walk(props[k])
	}
	_, _ = d.Token() // '}'
	return keys
}

// union joins type expressions with |, once each.
func union(parts []string) string {
	var out []string
	for _, p := range parts {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if slices.Contains(out, "unknown") {
		return "unknown"
	}
	if len(out) == 0 {
		return "never"
	}
	return strings.Join(out, " | ")
}

// propName is a property name as TypeScript needs it: quoted unless it is
// an identifier.
func propName(name string) string {
	if jsIdent.MatchString(name) {
		return name
	}
	return jsString(name)
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s) // escapes <, > and &, and U+2028/9, which JavaScript reads the same
	return string(b)
}

// docComment renders text as a JSDoc comment at indent, or nothing.
func docComment(b *strings.Builder, indent, text string) {
	text = strings.TrimSpace(strings.ReplaceAll(text, "*/", "*\u2215"))
	if text == "" {
		return
	}
	lines := strings.Split(text, "\n")
	if len(lines) == 1 {
		fmt.Fprintf(b, "%s/** %s */\n", indent, lines[0])
		return
	}
	fmt.Fprintf(b, "%s/**\n", indent)
	for _, l := range lines {
		fmt.Fprintf(b, "%s * %s\n", indent, strings.TrimSpace(l))
	}
	fmt.Fprintf(b, "%s */\n", indent)
}
