package jsontypes

import (
	"encoding/json"
	"image"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

func manifest(t *testing.T) *chatimpl.Manifest {
	t.Helper()
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.DiscardHandler)}, Register(Deps{Clerk: clerkConfig()}))
	if err != nil {
		t.Fatal(err)
	}
	return r.Manifest()
}

func clerkConfig() *ai.Config { return &ai.Config{Model: llmtest.NewModel(nil, nil)} }

// resolve makes a schema of the manifest a schema of its own, with the
// manifest's named types as its $defs, and resolves it.
func resolve(t *testing.T, m *chatimpl.Manifest, s chatimpl.JSONSchema) *jsonschema.Resolved {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal([]byte(s), &root); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	defs := map[string]any{}
	for _, ti := range m.Types {
		var d any
		if err := json.Unmarshal([]byte(ti.Schema), &d); err != nil {
			t.Fatalf("type %s: %v", ti.Name, err)
		}
		defs[ti.Name] = d
	}
	root["$defs"] = defs
	closeObjects(root)
	b, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatalf("the schema does not parse: %v\n%s", err, b)
	}
	rs, err := js.Resolve(nil)
	if err != nil {
		t.Fatalf("the schema does not resolve: %v\n%s", err, b)
	}
	return rs
}

// closeObjects adds "additionalProperties": false to every object schema
// with properties: the JSON may then have no key the schema leaves out,
// so a field encoding/json writes and the manifest misses fails too.
func closeObjects(v any) {
	switch v := v.(type) {
	case map[string]any:
		if _, ok := v["properties"].(map[string]any); ok {
			if _, set := v["additionalProperties"]; !set {
				v["additionalProperties"] = false
			}
		}
		for _, e := range v {
			closeObjects(e)
		}
	case []any:
		for _, e := range v {
			closeObjects(e)
		}
	}
}

func eventSchema(t *testing.T, m *chatimpl.Manifest, route, typ string) chatimpl.JSONSchema {
	t.Helper()
	for _, r := range m.Routes {
		if r.Name != route {
			continue
		}
		for _, ev := range r.Events {
			if ev.Type == typ {
				return ev.Schema
			}
		}
	}
	t.Fatalf("route %s sends no %s event", route, typ)
	return ""
}

func paramSchema(t *testing.T, m *chatimpl.Manifest, route, param string) chatimpl.JSONSchema {
	t.Helper()
	for _, r := range m.Routes {
		if r.Name != route {
			continue
		}
		for _, p := range r.Params {
			if p.Name == param {
				return p.Schema
			}
		}
	}
	t.Fatalf("route %s has no parameter %s", route, param)
	return ""
}

// validate marshals v as the runtime sends event data (json.Marshal of the
// value as an interface) and validates the JSON against s.
func validate(t *testing.T, rs *jsonschema.Resolved, what string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		t.Fatal(err)
	}
	if err := rs.Validate(inst); err != nil {
		t.Errorf("%s: encoding/json wrote JSON the manifest's schema rejects: %v\n%s", what, err, b)
	}
}

func full() Everything {
	one, s := 1, "set"
	leaf := &Tree{Name: "leaf"}
	root := Tree{Name: "root", Children: []*Tree{leaf, nil}}
	leaf.Children = []*Tree{}
	return Everything{
		Base:       &Base{ID: 7, Note: "base"},
		Meta:       Meta{Tags: []string{"a"}},
		hidden:     hidden{Secret: "s", Visible: 2, private: 3},
		ptrHidden:  &ptrHidden{Deep: "deep"},
		Named:      Meta{Tags: []string{}},
		Skip:       "skipped",
		Dash:       "dash",
		Inline:     Meta{Tags: []string{"i"}},
		ByInt:      map[int]string{1: "one", -2: "minus two"},
		ByLevel:    map[Level]int{Debug: 1},
		Bytes:      []byte{0, 1, 2, 255},
		Octets:     []Octet{1, 2},
		Raw:        json.RawMessage(`{"free":["form",1]}`),
		Any:        []any{1, "two", nil},
		Iface:      map[string]any{"k": true},
		Dur:        1500 * time.Millisecond,
		When:       time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
		Arr:        [4]uint8{1, 2, 3, 4},
		Page:       Page[Item]{Items: []Item{{SKU: "x"}}, Next: &Item{SKU: "y"}},
		Point:      image.Point{X: 1, Y: -1},
		Addr:       netip.MustParseAddr("192.0.2.1"),
		Quoted:     1 << 60,
		QuotePtr:   &one,
		LitStr:     Literal(5),
		Opt:        &s,
		Zero:       Item{SKU: "z"},
		Kept:       Item{},
		Level:      Info,
		Prio:       High,
		Num:        json.Number("3.25"),
		Upper:      "shout",
		Lazy:       Lazy{V: "lazy"},
		LazyPtr:    &Lazy{V: "ptr"},
		Ptrs:       []*Item{{SKU: "p"}, nil},
		Nested:     map[string][]*Tree{"t": {&root}, "none": nil},
		Big:        1<<64 - 1,
		F:          -0.5,
		Diamond:    Diamond{Left: Left{Shared: Shared{X: 1}, L: 2}, Right: Right{Shared: Shared{X: 3}, R: 4}},
		Clash:      Clash{ClashA: ClashA{Same: "a"}, ClashB: ClashB{Same: "b", U: "u"}, U: 5, Kept: "k"},
		Tree:       root,
		unexported: 4,
	}
}

// TestManifestSchemasMatchEncodingJSON validates what encoding/json writes
// for values of every kind of field — zero values, nil pointers, slices
// and maps, and full ones — against the JSON Schemas chatgen generated for
// the route results and parameters that carry them.
func TestManifestSchemasMatchEncodingJSON(t *testing.T) {
	m := manifest(t)
	put := resolve(t, m, eventSchema(t, m, "put", protocol.EventObject))
	putPtr := resolve(t, m, eventSchema(t, m, "putPtr", protocol.EventObject))
	everything := resolve(t, m, paramSchema(t, m, "put", "everything"))
	everythingPtr := resolve(t, m, paramSchema(t, m, "putPtr", "everything"))
	for name, v := range map[string]Everything{"zero": {}, "full": full()} {
		// A route returning a value sends a value: encoding/json cannot
		// take the address of its fields.
		validate(t, put, "put, "+name, v)
		validate(t, everything, "put's parameter, "+name, v)
		// A route returning a pointer sends the pointer: it can.
		validate(t, putPtr, "putPtr, "+name, &v)
		validate(t, everythingPtr, "putPtr's parameter, "+name, &v)
	}
	validate(t, everythingPtr, "putPtr's parameter, null", (*Everything)(nil))

	tree := resolve(t, m, eventSchema(t, m, "tree", protocol.EventObject))
	validate(t, tree, "tree, zero", Tree{})
	validate(t, tree, "tree, full", full().Tree)
	pages := resolve(t, m, eventSchema(t, m, "pages", protocol.EventObject))
	validate(t, pages, "pages, zero", Page[Tree]{})
	validate(t, pages, "pages, full", Page[Tree]{Items: []Tree{full().Tree}, Next: &Tree{Name: "n"}})
	report := resolve(t, m, eventSchema(t, m, "report", "report"))
	validate(t, report, "report, zero", &Report{})
	validate(t, report, "report, full", &Report{Level: Debug, Tree: &Tree{Name: "t"}, Data: []byte("data")})
	clerkObject := resolve(t, m, eventSchema(t, m, "clerk", protocol.EventObject))
	validate(t, clerkObject, "clerk's Find result", Shelf{}.Find("sku"))
	clerkReport := resolve(t, m, eventSchema(t, m, "clerk", "report"))
	validate(t, clerkReport, "clerk's Log result", Shelf{}.Log(Info))
}

// TestManifestSchemasReject checks that the schemas are not so loose as to
// accept anything: JSON encoding/json never writes for the type fails.
func TestManifestSchemasReject(t *testing.T) {
	m := manifest(t)
	put := resolve(t, m, eventSchema(t, m, "put", protocol.EventObject))
	b, err := json.Marshal(full())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, key, value string }{
		{"a string for an int", "dur", `"1s"`},
		{"a level that is not one", "level", `"loud"`},
		{"a priority that is not one", "prio", `3`},
		{"an array of 3 for [4]uint8", "arr", `[1,2,3]`},
		{"numbers for []byte", "bytes", `[1,2]`},
		{"a missing required field", "tree", `{"children":null}`},
		{"a number for a quoted int64", "quoted", `5`},
	} {
		var obj map[string]any
		if err := json.Unmarshal(b, &obj); err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal([]byte(tc.value), &v); err != nil {
			t.Fatal(err)
		}
		obj[tc.key] = v
		if err := put.Validate(obj); err == nil {
			t.Errorf("%s (%s: %s) validates", tc.what, tc.key, tc.value)
		}
	}
	// The fields encoding/json never writes are not in the schema.
	var everything map[string]any
	for _, ti := range m.Types {
		if ti.Name == "Everything" {
			if err := json.Unmarshal([]byte(ti.Schema), &everything); err != nil {
				t.Fatal(err)
			}
		}
	}
	props, _ := everything["properties"].(map[string]any)
	for _, absent := range []string{"Skip", "unexported", "private", "Base", "Meta", "hidden"} {
		if _, ok := props[absent]; ok {
			t.Errorf("Everything's schema has the property %s, which encoding/json never writes", absent)
		}
	}
	// And those it writes are, promoted ones included.
	for _, present := range []string{"id", "Note", "tags", "secret", "Visible", "deep", "-", "Inline"} {
		if _, ok := props[present]; !ok {
			t.Errorf("Everything's schema lacks the property %s, which encoding/json writes", present)
		}
	}
	for _, ti := range m.Types {
		if ti.Name == "Diamond" && strings.Contains(string(ti.Schema), `"X"`) {
			t.Errorf("Diamond's schema has X, which encoding/json leaves out (Shared is embedded twice at one depth): %s", ti.Schema)
		}
		if ti.Name == "Clash" && strings.Contains(string(ti.Schema), `"Same"`) {
			t.Errorf("Clash's schema has Same, which encoding/json leaves out (two at one depth): %s", ti.Schema)
		}
	}
}
