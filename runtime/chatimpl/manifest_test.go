package chatimpl_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// The JSON form generated code registers reads as the Manifest it
// describes, each schema's text kept as it was written.
func TestDescribeJSON(t *testing.T) {
	p := chatimpl.NewPackage("example.com/shop")
	p.DescribeJSON(`{
	"routes": [
		{"name": "menu", "streaming": true, "params": [
			{"name": "userMessage", "schema": {"type":"string"}}
		], "events": [
			{"type": "Stream", "schema": {"type":"string"}}
		]},
		{"name": "bare"}
	],
	"events": [
		{"type": "item", "schema": {"$ref":"#/$defs/Item"}}
	],
	"types": [
		{"name": "Item", "schema": {"type":"object","properties":{"name":{"type":"string","description":"say \"hi\""}}}}
	]
}`)
	want := &chatimpl.Manifest{
		Routes: []chatimpl.RouteInfo{
			{
				Name:      "menu",
				Streaming: true,
				Params:    []chatimpl.ParamInfo{{Name: "userMessage", Schema: `{"type":"string"}`}},
				Events:    []chatimpl.EventInfo{{Type: "Stream", Schema: `{"type":"string"}`}},
			},
			{Name: "bare"},
		},
		Events: []chatimpl.EventInfo{{Type: "item", Schema: `{"$ref":"#/$defs/Item"}`}},
		Types:  []chatimpl.TypeInfo{{Name: "Item", Schema: `{"type":"object","properties":{"name":{"type":"string","description":"say \"hi\""}}}`}},
	}
	if got := p.Manifest(); !reflect.DeepEqual(got, want) {
		t.Errorf("DescribeJSON gave\n%#v\nwant\n%#v", got, want)
	}
	if n := len(p.Checks()); n != 0 {
		t.Errorf("a valid manifest added %d checks", n)
	}
}

// A manifest that cannot be read registers none and adds a check that
// fails with ErrManifest, so that the router refuses the package.
func TestDescribeJSONInvalid(t *testing.T) {
	for name, text := range map[string]string{
		"not JSON":       `{"routes": [`,
		"unknown field":  `{"routes": [{"name": "menu", "kind": "x"}]}`,
		"wrong type":     `{"routes": {"name": "menu"}}`,
		"trailing data":  `{"routes": []} {}`,
		"empty":          ``,
		"schema not set": `{"routes": [{"name": "menu", "params": [{"name": "a", "schema": }]}]}`,
	} {
		p := chatimpl.NewPackage("example.com/shop")
		p.DescribeJSON(text)
		if p.Manifest() != nil {
			t.Errorf("%s: a manifest was registered", name)
		}
		checks := p.Checks()
		if len(checks) != 1 {
			t.Fatalf("%s: %d checks, want 1", name, len(checks))
		}
		if err := checks[0](); !errors.Is(err, chatimpl.ErrManifest) {
			t.Errorf("%s: the check returned %v, want an error matching ErrManifest", name, err)
		}
	}
}

// An empty schema encodes as {}: it allows any value.
func TestJSONSchemaMarshal(t *testing.T) {
	for s, want := range map[chatimpl.JSONSchema]string{"": "{}", `{"type":"string"}`: `{"type":"string"}`} {
		b, err := s.MarshalJSON()
		if err != nil || string(b) != want {
			t.Errorf("%q.MarshalJSON() = %s, %v; want %s", s, b, err, want)
		}
	}
	if _, err := chatimpl.JSONSchema(`{"type":`).MarshalJSON(); err == nil {
		t.Error("a schema that is not JSON marshalled")
	}
}
