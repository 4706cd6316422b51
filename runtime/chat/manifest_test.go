package chat_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

func noop(context.Context) error { return nil }

// TestRouterManifest merges the manifests of three packages: the same
// type twice, two different types of one name (the later one, and what
// refers to it, renamed), a package registered without a manifest
// (Untyped routes), the default route marked.
func TestRouterManifest(t *testing.T) {
	shop := chatimpl.NewPackage("example.com/shop")
	shop.AddRoute(chatimpl.RouteSpec{Name: "buy", Default: true, Handle: noop})
	shop.Describe(&chatimpl.Manifest{
		Routes: []chatimpl.RouteInfo{{Name: "buy", Params: []chatimpl.ParamInfo{{Name: "item", Schema: `{"$ref":"#/$defs/Item"}`}},
			Events: []chatimpl.EventInfo{{Type: "Message", Schema: `{"type":"string"}`}}}},
		Events: []chatimpl.EventInfo{{Type: "money", Schema: `{"$ref":"#/$defs/Money"}`}},
		Types: []chatimpl.TypeInfo{
			{Name: "Item", Schema: `{"type":"object","properties":{"name":{"type":"string"},"price":{"$ref":"#/$defs/Money"}}}`},
			{Name: "Money", Schema: `{"type":"integer"}`},
		},
	})
	forge := chatimpl.NewPackage("example.com/the-forge")
	forge.AddRoute(chatimpl.RouteSpec{Name: "forge", Handle: noop})
	forge.Describe(&chatimpl.Manifest{
		Routes: []chatimpl.RouteInfo{{Name: "forge", Streaming: true, Params: []chatimpl.ParamInfo{{Name: "order", Schema: `{"$ref":"#/$defs/Order"}`}},
			Events: []chatimpl.EventInfo{{Type: "Stream", Schema: `{"type":"string"}`}}}},
		Events: []chatimpl.EventInfo{{Type: "money", Schema: `{"$ref":"#/$defs/Money"}`}},
		Types: []chatimpl.TypeInfo{
			// Order refers to Item, which differs from the shop's: both
			// are renamed in this package's schemas.
			{Name: "Item", Schema: `{"type":"string"}`},
			{Name: "Money", Schema: `{"type":"integer"}`},
			{Name: "Order", Schema: `{"type":"array","items":{"$ref":"#/$defs/Item"}}`},
		},
	})
	plain := chatimpl.NewPackage("example.com/plain")
	plain.AddRoute(chatimpl.RouteSpec{Name: "hand", Handle: noop})

	r, err := chat.NewRouter(nil, shop, forge, plain)
	if err != nil {
		t.Fatal(err)
	}
	want := &chatimpl.Manifest{
		Routes: []chatimpl.RouteInfo{
			{Name: "buy", Default: true, Params: []chatimpl.ParamInfo{{Name: "item", Schema: `{"$ref":"#/$defs/Item"}`}},
				Events: []chatimpl.EventInfo{{Type: "Message", Schema: `{"type":"string"}`}}},
			{Name: "forge", Streaming: true, Params: []chatimpl.ParamInfo{{Name: "order", Schema: `{"$ref":"#/$defs/Order"}`}},
				Events: []chatimpl.EventInfo{{Type: "Stream", Schema: `{"type":"string"}`}}},
			{Name: "hand", Untyped: true},
		},
		Events: []chatimpl.EventInfo{{Type: "money", Schema: `{"$ref":"#/$defs/Money"}`}},
		Types: []chatimpl.TypeInfo{
			{Name: "Item", Schema: `{"type":"object","properties":{"name":{"type":"string"},"price":{"$ref":"#/$defs/Money"}}}`},
			{Name: "Money", Schema: `{"type":"integer"}`},
			{Name: "Order", Schema: `{"items":{"$ref":"#/$defs/TheforgeItem"},"type":"array"}`},
			{Name: "TheforgeItem", Schema: `{"type":"string"}`},
		},
	}
	got := r.Manifest()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("manifest:\n%s\nwant:\n%s", g, w)
	}
	// The manifest is the caller's to change.
	got.Routes[0].Name = "changed"
	if r.Manifest().Routes[0].Name != "buy" {
		t.Error("changing a manifest changed the router's")
	}
}

// TestRouterManifestLoneRoute: a lone route is the default, as the
// router treats it.
func TestRouterManifestLoneRoute(t *testing.T) {
	p := chatimpl.NewPackage("example.com/one")
	p.AddRoute(chatimpl.RouteSpec{Name: "only", Handle: noop})
	r, err := chat.NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	m := r.Manifest()
	if len(m.Routes) != 1 || !m.Routes[0].Default || !m.Routes[0].Untyped {
		t.Fatalf("%+v", m.Routes)
	}
}

func TestJSONSchemaMarshal(t *testing.T) {
	b, err := json.Marshal(chatimpl.ParamInfo{Name: "x", Schema: `{"type":"string"}`})
	if err != nil || string(b) != `{"name":"x","schema":{"type":"string"}}` {
		t.Errorf("%s %v", b, err)
	}
	if b, err := json.Marshal(chatimpl.JSONSchema("")); err != nil || string(b) != "{}" {
		t.Errorf("empty schema: %s %v", b, err)
	}
	if _, err := json.Marshal(chatimpl.JSONSchema("{not json")); err == nil {
		t.Error("a schema that is not JSON was marshalled")
	}
}
