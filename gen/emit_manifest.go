package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// manifestFunc writes the package's manifest as a constant: the JSON form
// of a chatimpl.Manifest, which Register hands to Package.DescribeJSON.
// It is data only: the runtime merges it and runtime/ws turns it into
// JavaScript and TypeScript. Each route, parameter, event and type is on a
// line of its own, its schema as the walker wrote it (compact JSON).
func (e *emitter) manifestFunc() {
	mm := e.manifest
	if mm == nil {
		return
	}
	var b strings.Builder
	b.WriteString("{\n\t\"routes\": [")
	for i, r := range mm.routes {
		b.WriteString(sep(i) + "\n\t\t{\"name\": " + manifestString(r.name))
		if r.streaming {
			b.WriteString(", \"streaming\": true")
		}
		if len(r.params) > 0 {
			b.WriteString(", \"params\": [")
			for j, p := range r.params {
				fmt.Fprintf(&b, "%s\n\t\t\t{\"name\": %s, \"schema\": %s}", sep(j), manifestString(p.name), p.schema)
			}
			b.WriteString("\n\t\t]")
		}
		if len(r.events) > 0 {
			b.WriteString(", \"events\": ")
			writeEvents(&b, r.events, "\t\t")
		}
		b.WriteString("}")
	}
	b.WriteString("\n\t]")
	if len(mm.events) > 0 {
		b.WriteString(",\n\t\"events\": ")
		writeEvents(&b, mm.events, "\t")
	}
	if len(mm.types) > 0 {
		b.WriteString(",\n\t\"types\": [")
		for i, d := range mm.types {
			fmt.Fprintf(&b, "%s\n\t\t{\"name\": %s, \"schema\": %s}", sep(i), manifestString(d.name), d.schema)
		}
		b.WriteString("\n\t]")
	}
	b.WriteString("\n}")
	text := b.String()
	if !json.Valid([]byte(text)) {
		e.err = fmt.Errorf("the manifest of package %s is not JSON: %s", e.m.pkg.PkgPath, text)
		return
	}
	e.docFor(e.manifestFn, fmt.Sprintf("%s describes the routes of this package to clients: the request data each route takes and the events it sends, with their JSON Schemas. Register hands it to chatimpl.Package.DescribeJSON; runtime/ws serves it to browsers as a typed module.", e.manifestFn))
	e.f.Const().Id(e.manifestFn).Op("=").Add(rawLit(text))
	e.f.Line()
}

// writeEvents writes events as a JSON array, an event a line, indented
// one tab more than indent.
func writeEvents(b *strings.Builder, evs []manifestEvent, indent string) {
	b.WriteString("[")
	for i, ev := range evs {
		fmt.Fprintf(b, "%s\n%s\t{\"type\": %s, \"schema\": %s}", sep(i), indent, manifestString(ev.typ), ev.schema)
	}
	b.WriteString("\n" + indent + "]")
}

// sep is the separator written before element i of a JSON array.
func sep(i int) string {
	if i == 0 {
		return ""
	}
	return ","
}

// manifestString is s as a JSON string, without HTML escapes.
func manifestString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
