package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"
)

// manifestFunc writes the function returning the package's chatimpl.Manifest,
// which Register hands to Package.Describe. It is data only: the runtime
// merges it and runtime/ws turns it into JavaScript and TypeScript.
func (e *emitter) manifestFunc() {
	mm := e.manifest
	if mm == nil {
		return
	}
	var routes []jen.Code
	for _, r := range mm.routes {
		fields := []jen.Code{field("Name", jen.Lit(r.name))}
		if r.streaming {
			fields = append(fields, field("Streaming", jen.True()))
		}
		if len(r.params) > 0 {
			var params []jen.Code
			for _, p := range r.params {
				params = append(params, jen.Values(inline("Name", jen.Lit(p.name)), inline("Schema", rawLit(p.schema))))
			}
			fields = append(fields, field("Params", jen.Index().Qual(implPkg, "ParamInfo").Values(lines(params)...)))
		}
		if len(r.events) > 0 {
			fields = append(fields, field("Events", eventInfos(r.events)))
		}
		if len(fields) == 1 {
			routes = append(routes, jen.Values(inline("Name", jen.Lit(r.name))))
			continue
		}
		routes = append(routes, jen.Values(append(fields, jen.Line())...))
	}
	fields := []jen.Code{field("Routes", jen.Index().Qual(implPkg, "RouteInfo").Values(lines(routes)...))}
	if len(mm.events) > 0 {
		fields = append(fields, field("Events", eventInfos(mm.events)))
	}
	if len(mm.types) > 0 {
		var defs []jen.Code
		for _, d := range mm.types {
			defs = append(defs, jen.Values(inline("Name", jen.Lit(d.name)), inline("Schema", rawLit(d.schema))))
		}
		fields = append(fields, field("Types", jen.Index().Qual(implPkg, "TypeInfo").Values(lines(defs)...)))
	}
	e.docFor(e.manifestFn, fmt.Sprintf("%s describes the routes of this package to clients: the request data each route takes and the events it sends, with their JSON Schemas. Register hands it to chatimpl.Package.Describe; runtime/ws serves it to browsers as a typed module.", e.manifestFn))
	e.f.Func().Id(e.manifestFn).Params().Op("*").Qual(implPkg, "Manifest").Block(
		jen.Return(jen.Op("&").Qual(implPkg, "Manifest").Values(append(fields, jen.Line())...)),
	)
	e.f.Line()
}

func eventInfos(evs []manifestEvent) jen.Code {
	var out []jen.Code
	for _, ev := range evs {
		out = append(out, jen.Values(inline("Type", jen.Lit(ev.typ)), inline("Schema", rawLit(ev.schema))))
	}
	return jen.Index().Qual(implPkg, "EventInfo").Values(lines(out)...)
}

// lines puts each element of a composite literal on a line of its own.
func lines(elems []jen.Code) []jen.Code {
	out := make([]jen.Code, 0, len(elems)+1)
	for _, el := range elems {
		out = append(out, jen.Line().Add(el))
	}
	return append(out, jen.Line())
}
