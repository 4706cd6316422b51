package ws

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/schema"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// passages is a retriever that returns its documents whatever the query.
type passages []schema.Document

func (p passages) GetRelevantDocuments(context.Context, string) ([]schema.Document, error) {
	return p, nil
}

// The Sources event of an AI service with a Knowledge, on the wire: before
// the answer, with the passages' id, title, source and score.
func TestKnowledgeSourcesOnTheWire(t *testing.T) {
	docs := passages{
		{PageContent: "Dawnbreaker was forged by Aldra.", Score: 0.75, Metadata: map[string]any{"id": "dawnbreaker.md#1", "title": "Dawnbreaker", "source": "lore/dawnbreaker.md"}},
		{PageContent: "An untitled note.", Score: 0.5, Metadata: map[string]any{"id": "note"}},
	}
	rig := newAIRig(t, &ai.Config{Knowledge: &ai.Knowledge{Retriever: docs}}, llmtest.Reply{Text: "Aldra forged it."})
	c := dialRaw(t, rig.ts.url, nil)
	scope := c.connect("s", "smith")
	fs := c.chat("s", scope, "who forged Dawnbreaker?")
	if len(fs) != 3 || fs[0].Type != "Sources" || fs[1].text() != "Aldra forged it." || fs[2].Type != "Completed" {
		t.Fatalf("frames %v", fs)
	}
	want := `{"query":"who forged Dawnbreaker?","sources":[{"id":"dawnbreaker.md#1","title":"Dawnbreaker","source":"lore/dawnbreaker.md","score":0.75},{"id":"note","score":0.5}]}`
	if string(fs[0].Data) != want {
		t.Fatalf("Sources data\n got %s\nwant %s", fs[0].Data, want)
	}
}
