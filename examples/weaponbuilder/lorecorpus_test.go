package main

import (
	"context"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/knowledge"
)

// TestLoreCorpusTellsTheLegends indexes the embedded lore corpus and
// checks that it tells every legend of the MCP lore server: searching for
// a legend finds, first, the document about its topic, which repeats the
// legend's first words.
func TestLoreCorpusTellsTheLegends(t *testing.T) {
	ctx := context.Background()
	corpus, err := loreCorpus()
	if err != nil {
		t.Fatal(err)
	}
	ix, err := knowledge.IndexDir(ctx, corpus, nil)
	if err != nil {
		t.Fatal(err)
	}
	documents := map[string]string{
		"iron": "iron.md", "steel": "steel.md", "mithril": "mithril.md", "leather": "leather.md",
		"fire": "fire-runes.md", "frost": "frost-runes.md", "lightning": "lightning-runes.md",
		"sword": "swords.md", "axe": "axes.md", "bow": "bows.md", "dagger": "daggers.md", "staff": "staves.md",
	}
	for topic, legend := range legends {
		want, ok := documents[topic]
		if !ok {
			t.Errorf("no lore document for the legend of %s", topic)
			continue
		}
		hits, err := ix.Search(ctx, legend, 1, knowledge.Lexical, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].Source != want {
			t.Errorf("the legend of %s finds %v first, want %s", topic, hits, want)
			continue
		}
		opening := strings.Join(strings.Fields(legend)[:4], " ")
		if !strings.Contains(strings.Join(strings.Fields(hits[0].Text), " "), opening) {
			t.Errorf("%s does not tell the legend of %s (%q…)", want, topic, opening)
		}
	}
}
