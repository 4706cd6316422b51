package gen

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/doc"
	"go/types"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// The manifest: what the generated registration tells clients about the
// package's routes (chatimpl.Manifest). Its types are JSON Schemas of the JSON
// encoding/json reads and writes for the Go types, computed here; named
// structs and enums are listed once and referred to by name, so that
// runtime/ws can declare them as TypeScript interfaces.

// defsRef is chatimpl.DefsRef: the prefix of a reference to a named type.
const defsRef = "#/$defs/"

// manifestModel is the manifest of one package.
type manifestModel struct {
	routes []manifestRoute
	events []manifestEvent // the //chat:event types
	types  []*manifestDef  // sorted by name
}

type manifestRoute struct {
	name      string
	streaming bool
	params    []manifestParam
	events    []manifestEvent
}

type manifestParam struct{ name, schema string }

type manifestEvent struct{ typ, schema string }

// manifestDef is a named type of the manifest.
type manifestDef struct {
	name   string
	t      types.Type
	schema string // "" while it is being computed
}

// manifestBuilder computes the schemas of a manifest.
type manifestBuilder struct {
	m      *pkgModel
	sb     *schemaBuilder
	defs   []*manifestDef
	byName map[string]*manifestDef
	// inline are the named types being inlined (those without a def), to
	// stop at a recursive one.
	inline []types.Type
}

// manifest computes the manifest of the package's routes; nil when there
// are no routes.
func (m *pkgModel) manifest() *manifestModel {
	if len(m.routes) == 0 {
		return nil
	}
	b := &manifestBuilder{m: m, sb: m.schemas(), byName: map[string]*manifestDef{}}
	out := &manifestModel{}
	for _, r := range m.routes {
		out.routes = append(out.routes, b.route(r))
	}
	for _, ev := range m.events {
		out.events = append(out.events, manifestEvent{typ: ev.name, schema: jsonText(b.payload(ev.obj.Type()))})
	}
	out.types = slices.Clone(b.defs)
	slices.SortFunc(out.types, func(a, b *manifestDef) int { return strings.Compare(a.name, b.name) })
	return out
}

func (b *manifestBuilder) route(r *routeModel) manifestRoute {
	mr := manifestRoute{name: r.name}
	for _, p := range r.params {
		switch p.kind {
		case paramUser:
			mr.params = append(mr.params, manifestParam{name: "userMessage", schema: `{"type":"string"}`})
		case paramData:
			mr.params = append(mr.params, manifestParam{name: p.name, schema: jsonText(b.schemaOf(p.typ))})
		}
	}
	var evs []manifestEvent
	if res := r.result; res != nil {
		switch {
		case res.kind == resultSeq || res.kind == resultSeq2:
			mr.streaming = true
			evs = append(evs, manifestEvent{typ: "Stream", schema: `{"type":"string"}`})
		case res.kind == resultAI:
			// ai.Result[T].Send sends the content, or else the results
			// of the tools the model called.
			evs = append(evs, b.valueEvents(aiResultContent(res.typ))...)
			if am := b.aiMethod(r.fn); am != nil {
				for _, t := range am.tools {
					if t.hasResult {
						evs = append(evs, b.valueEvents(t.sig.Results().At(0).Type())...)
					}
				}
			}
		case r.event != "":
			evs = append(evs, manifestEvent{typ: r.event, schema: jsonText(b.payload(res.typ))})
		default:
			evs = append(evs, b.valueEvents(res.typ)...)
		}
	}
	if am := b.aiMethod(r.fn); am != nil {
		for _, t := range am.tools {
			if b.m.sendsEvent(t) {
				// Sent when the tool returns, whatever the route returns.
				evs = append(evs, b.valueEvents(t.sig.Results().At(0).Type())...)
			}
			if t.confirm {
				// A call of the tool pauses the turn on a Confirm event
				// whose data is an ai.Confirmation, streaming or not. (A
				// tool hook may demand confirmation of any tool at run
				// time; such events are not listed.)
				evs = append(evs, manifestEvent{typ: "Confirm", schema: confirmationSchema})
			}
			if t.client {
				// A call of the tool pauses the turn on a ClientTool
				// event whose data is a protocol.ClientToolCall, with the
				// tool's name and typed arguments.
				evs = append(evs, manifestEvent{typ: "ClientTool", schema: clientToolSchema(t)})
			}
		}
	}
	slices.SortFunc(evs, func(x, y manifestEvent) int {
		return cmp.Or(strings.Compare(x.typ, y.typ), strings.Compare(x.schema, y.schema))
	})
	mr.events = slices.Compact(evs)
	return mr
}

// confirmationSchema is the JSON Schema of ai.Confirmation, the data of a
// Confirm event (TestConfirmationSchema checks it against the type).
const confirmationSchema = `{"type":"object","properties":{"id":{"type":"string"},"tool":{"type":"string"},"arguments":{},"callId":{"type":"string"}},"required":["id","tool","arguments","callId"]}`

// clientToolSchema is the JSON Schema of the protocol.ClientToolCall of a
// call of the client tool t (TestClientToolSchema checks it against the
// type).
func clientToolSchema(t *toolModel) string {
	return `{"type":"object","properties":{"id":{"type":"string"},"tool":{"enum":[` + strconv.Quote(t.name) +
		`]},"arguments":` + t.schema + `,"callId":{"type":"string"},"deadline":{"type":"string"}},"required":["id","tool","arguments","callId"]}`
}

// aiMethod returns the AI method fn is, or nil.
func (b *manifestBuilder) aiMethod(fn *types.Func) *aiMethod { return b.m.aiMethodOf(fn) }

// aiResultContent is T of ai.Result[T].
func aiResultContent(t types.Type) types.Type {
	if n, ok := types.Unalias(t).(*types.Named); ok && n.TypeArgs().Len() == 1 {
		return n.TypeArgs().At(0)
	}
	return types.NewInterfaceType(nil, nil)
}

// valueEvents returns the event a value of type t is sent as by
// chat.SendValue: a string as Message, a //chat:event type as its event,
// anything else as Object. An interface, or a type whose ChatEventType
// method is not generated here, gives no event: its event type is only
// known when it is sent.
func (b *manifestBuilder) valueEvents(t types.Type) []manifestEvent {
	if types.Identical(t, types.Typ[types.String]) {
		return []manifestEvent{{typ: "Message", schema: `{"type":"string"}`}}
	}
	if _, isIface := t.Underlying().(*types.Interface); isIface {
		return nil
	}
	// The package's own //chat:event types have no ChatEventType method
	// yet: it is generated.
	if typ, ok := b.eventType(t); ok {
		return []manifestEvent{{typ: typ, schema: jsonText(b.payload(t))}}
	}
	if obj, _, _ := types.LookupFieldOrMethod(t, false, nil, "ChatEventType"); obj != nil {
		return nil
	}
	return []manifestEvent{{typ: "Object", schema: jsonText(b.payload(t))}}
}

// eventType returns the //chat:event type of t (or of *t's element), when
// this package declares it.
func (b *manifestBuilder) eventType(t types.Type) (string, bool) {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok {
		return "", false
	}
	for _, ev := range b.m.events {
		if ev.obj == n.Obj() {
			return ev.name, true
		}
	}
	return "", false
}

// payload is the schema of event data of type t: a nil value sends no
// event, so the data is never null.
func (b *manifestBuilder) payload(t types.Type) *schema {
	return nonNull(b.schemaOf(t))
}

// nullable is s or null.
func nullable(s *schema) *schema {
	if len(s.keys) == 0 || isNullable(s) {
		return s // {} allows null already
	}
	return newSchema("anyOf", []any{s, newSchema("type", "null")})
}

func isNullable(s *schema) bool {
	if len(s.keys) != 1 || s.keys[0] != "anyOf" {
		return false
	}
	alts, _ := s.vals[0].([]any)
	if len(alts) != 2 {
		return false
	}
	n, _ := alts[1].(*schema)
	return n != nil && len(n.keys) == 1 && n.keys[0] == "type" && n.vals[0] == "null"
}

// nonNull is s without its null alternative.
func nonNull(s *schema) *schema {
	if isNullable(s) {
		return s.vals[0].([]any)[0].(*schema)
	}
	return s
}

// schemaOf returns the schema of the JSON encoding/json writes for a
// value of type t (jsonEncode): nil pointers, slices and maps are null.
func (b *manifestBuilder) schemaOf(t types.Type) *schema {
	return b.formSchema(jsonFormOf(t, jsonEncode))
}

// formSchema renders a form: a named struct or enum as a reference to its
// def, a recursive unnamed shape as any JSON.
func (b *manifestBuilder) formSchema(f jsonForm) *schema {
	if f.plainToo != nil {
		// Written as a string when the value is addressable (behind a
		// pointer, in a slice) and as it is otherwise (in a value sent as
		// an event, in a map).
		plain := b.formSchema(plainForm(f.plainToo, jsonEncode))
		return newSchema("anyOf", []any{newSchema("type", "string"), plain})
	}
	s := b.formSchemaNonNull(f)
	if f.nullable {
		s = nullable(s)
	}
	return s
}

func (b *manifestBuilder) formSchemaNonNull(f jsonForm) *schema {
	if n := f.named; n != nil {
		if b.wantsDef(n) {
			return newSchema("$ref", defsRef+b.def(n).name)
		}
		if slices.ContainsFunc(b.inline, func(u types.Type) bool { return types.Identical(u, n) }) {
			return newSchema() // a recursive unnamed shape: any JSON
		}
		b.inline = append(b.inline, n)
		defer func() { b.inline = b.inline[:len(b.inline)-1] }()
	}
	var s *schema
	switch f.kind {
	case jsonAny, jsonUnsupported:
		// Marshal fails on an unsupported type; the manifest describes
		// what a client may receive, and a client receives nothing.
		return newSchema()
	case jsonBool, jsonInteger, jsonNumber, jsonString:
		return scalarSchema(f)
	case jsonArray:
		s = newSchema("type", "array", "items", b.schemaOf(f.elem))
		if f.length >= 0 {
			s.set("minItems", int(f.length)).set("maxItems", int(f.length))
		}
	case jsonMap:
		s = newSchema("type", "object", "additionalProperties", b.schemaOf(f.elem))
	case jsonObject:
		return b.structSchema(f.fields)
	}
	return s
}

// wantsDef reports whether named type n is listed in the manifest's types:
// structs, and basic types with a typed const block (enums).
func (b *manifestBuilder) wantsDef(n *types.Named) bool {
	switch n.Underlying().(type) {
	case *types.Struct:
		return true
	case *types.Basic:
		return len(b.sb.enum(n)) > 0
	}
	return false
}

// def returns the def of n, computing it on first use.
func (b *manifestBuilder) def(n *types.Named) *manifestDef {
	for _, d := range b.defs {
		if types.Identical(d.t, n) {
			return d
		}
	}
	d := &manifestDef{name: b.defName(n), t: n}
	b.defs = append(b.defs, d)
	b.byName[d.name] = d
	f := plainForm(n, jsonEncode)
	f.named = nil // this is its def
	s := b.formSchemaNonNull(f)
	if f.kind != jsonObject {
		s.set("enum", withZero(b.sb.enum(n), n))
	}
	if text := b.typeDoc(n.Obj()); text != "" {
		s.set("description", text)
	}
	d.schema = jsonText(s)
	return d
}

// defName names the def of n: its Go name (with its type arguments for an
// instance of a generic type), prefixed with its package's name when
// another type has that name.
func (b *manifestBuilder) defName(n *types.Named) string {
	name := n.Obj().Name()
	for i := range n.TypeArgs().Len() {
		name += typeArgName(n.TypeArgs().At(i))
	}
	pkg := n.Obj().Pkg()
	if pkg != nil && pkg != b.m.pkg.Types {
		if _, local := b.m.pkg.Types.Scope().Lookup(name).(*types.TypeName); local || b.byName[name] != nil {
			name = upperFirst(pkg.Name()) + name
		}
	}
	base := name
	for i := 2; b.byName[name] != nil; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	return name
}

// typeArgName renders a type argument as letters and digits: []Item gives
// "SliceItem", map[string]int "MapStringInt".
func typeArgName(t types.Type) string {
	s := types.TypeString(t, func(*types.Package) string { return "" })
	s = strings.NewReplacer("[]", "Slice ", "*", "Ptr ", "map[", "Map ", "]", " ").Replace(s)
	var out strings.Builder
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		out.WriteString(upperFirst(w))
	}
	return out.String()
}

// typeDoc is the first sentence of the doc comment of a type declared in
// this package.
func (b *manifestBuilder) typeDoc(obj *types.TypeName) string {
	if obj.Pkg() != b.m.pkg.Types {
		return ""
	}
	for _, f := range b.m.pkg.Syntax {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				ts, ok := spec.(*ast.TypeSpec)
				if !ok || ts.Name.Pos() != obj.Pos() {
					continue
				}
				text := ts.Doc.Text()
				if text == "" && len(gd.Specs) == 1 {
					text = gd.Doc.Text()
				}
				return synopsis(text)
			}
		}
	}
	return ""
}

// synopsis is the first sentence of a doc comment.
func synopsis(text string) string {
	return (&doc.Package{}).Synopsis(text)
}

// structSchema is the schema of a struct's JSON object, with the fields
// encoding/json writes.
func (b *manifestBuilder) structSchema(fields []jsonField) *schema {
	props := &schema{}
	var required []string
	for _, jf := range fields {
		f, optional := fieldForm(jf, jsonEncode)
		fs := b.formSchema(f)
		if text := synopsis(b.sb.fieldDocs[jf.f.Pos()]); text != "" {
			fs = cloneSchema(fs)
			fs.set("description", text)
		}
		props.set(jf.name, fs)
		if !optional {
			required = append(required, jf.name)
		}
	}
	s := newSchema("type", "object", "properties", props)
	if len(required) > 0 {
		s.set("required", required)
	}
	return s
}

func cloneSchema(s *schema) *schema {
	return &schema{keys: slices.Clone(s.keys), vals: slices.Clone(s.vals)}
}

// withZero is the values of enum type t and its zero value, which a field
// of type t holds until it is set: "" for a string type, 0 for a number.
func withZero(values []any, t types.Type) []any {
	var zero any
	if u, ok := t.Underlying().(*types.Basic); ok {
		switch {
		case u.Info()&types.IsString != 0:
			zero = ""
		case u.Info()&types.IsBoolean != 0:
			zero = false
		case u.Info()&types.IsNumeric != 0:
			zero = int64(0)
		}
	}
	if zero == nil {
		return values
	}
	for _, v := range values {
		if v == zero || v == 0.0 && zero == int64(0) {
			return values
		}
	}
	return append(values, zero)
}
