package gen

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// The Confirm event's schema in route manifests describes what
// encoding/json writes for an ai.Confirmation: the same keys, all required.
func TestConfirmationSchema(t *testing.T) {
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal([]byte(confirmationSchema), &schema); err != nil {
		t.Fatalf("confirmationSchema is not JSON: %v", err)
	}
	b, err := json.Marshal(ai.Confirmation{ID: "c1", Tool: "deleteItem", Arguments: json.RawMessage(`{"name":"x"}`), CallID: "call_1"})
	if err != nil {
		t.Fatal(err)
	}
	var written map[string]json.RawMessage
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(written))
	if props := slices.Sorted(maps.Keys(schema.Properties)); !slices.Equal(props, keys) {
		t.Errorf("schema properties %v, ai.Confirmation writes %v", props, keys)
	}
	if req := slices.Sorted(slices.Values(schema.Required)); !slices.Equal(req, keys) {
		t.Errorf("schema requires %v, ai.Confirmation always writes %v", req, keys)
	}
	if schema.Type != "object" {
		t.Errorf("schema type %q, want object", schema.Type)
	}
}

func TestClientToolSchema(t *testing.T) {
	tm := &toolModel{name: "locate", schema: `{"type":"object"}`}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal([]byte(clientToolSchema(tm)), &schema); err != nil {
		t.Fatalf("clientToolSchema is not JSON: %v", err)
	}
	d := time.Unix(1, 0)
	b, err := json.Marshal(protocol.ClientToolCall{ID: "c1", Tool: "locate", Arguments: json.RawMessage(`{}`), CallID: "call_1", Deadline: &d})
	if err != nil {
		t.Fatal(err)
	}
	var written map[string]json.RawMessage
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(written))
	if props := slices.Sorted(maps.Keys(schema.Properties)); !slices.Equal(props, keys) {
		t.Errorf("schema properties %v, protocol.ClientToolCall writes %v", props, keys)
	}
	b, err = json.Marshal(protocol.ClientToolCall{ID: "c1", Tool: "locate", Arguments: json.RawMessage(`{}`), CallID: "call_1"})
	if err != nil {
		t.Fatal(err)
	}
	written = nil
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	if req := slices.Sorted(slices.Values(schema.Required)); !slices.Equal(req, slices.Sorted(maps.Keys(written))) {
		t.Errorf("schema requires %v, protocol.ClientToolCall always writes %v", req, slices.Sorted(maps.Keys(written)))
	}
	if string(schema.Properties["tool"]) != `{"enum":["locate"]}` || string(schema.Properties["arguments"]) != `{"type":"object"}` {
		t.Errorf("tool %s, arguments %s", schema.Properties["tool"], schema.Properties["arguments"])
	}
}
