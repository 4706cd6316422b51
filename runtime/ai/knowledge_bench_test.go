package ai

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/schema"
)

// staticRetriever returns its passages whatever the query: the cost of
// the search itself is left out.
type staticRetriever []schema.Document

func (r staticRetriever) GetRelevantDocuments(context.Context, string) ([]schema.Document, error) {
	return r, nil
}

// BenchmarkAITurnKnowledge is BenchmarkAITurn's bare-model turn on a
// service without knowledge, with generic retrieval of two passages, per
// scope (ForScope) or not, and with agentic retrieval (the search tool
// offered, not called): what the integration costs per turn, the
// retriever's own work aside.
func BenchmarkAITurnKnowledge(b *testing.B) {
	docs := staticRetriever{
		{PageContent: "Dawnbreaker is a sword forged in the Sunken Forge.", Score: 0.9, Metadata: map[string]any{"id": "dawnbreaker.md#1", "title": "Dawnbreaker", "source": "lore/dawnbreaker.md"}},
		{PageContent: "Aldra the smith forged Dawnbreaker.", Score: 0.7, Metadata: map[string]any{"id": "aldra.md#1", "title": "Aldra", "source": "lore/aldra.md"}},
	}
	forScope := func(context.Context) (schema.Retriever, error) { return docs, nil }
	for _, c := range []struct {
		name string
		k    *Knowledge
	}{
		{"none", nil},
		{"generic", &Knowledge{Retriever: docs}},
		{"generic-per-scope", &Knowledge{ForScope: forScope}},
		{"agentic", &Knowledge{Retriever: docs, Mode: RetrievalAgentic}},
	} {
		b.Run(c.name, func(b *testing.B) { benchBareTurn(b, &Config{Knowledge: c.k}, nil) })
	}
}
