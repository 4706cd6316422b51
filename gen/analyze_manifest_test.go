package gen

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
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
