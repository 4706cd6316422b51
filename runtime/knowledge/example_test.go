package knowledge_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/tmc/langchaingo/embeddings"

	"github.com/chatscopes/chatgen/runtime/knowledge"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// Load a directory of Markdown documents, index it and retrieve the
// passages that answer a question, as a langchaingo retriever.
func Example() {
	ctx := context.Background()
	ix, err := knowledge.IndexDir(ctx, os.DirFS("../../examples/weaponbuilder/lore"), &knowledge.IndexDirOptions{Load: knowledge.LoadOptions{ChunkSize: 300}})
	if err != nil {
		log.Fatal(err)
	}

	docs, err := ix.Retriever(2, nil).GetRelevantDocuments(ctx, "Who carved the first fire runes?")
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range docs {
		fmt.Println(d.Metadata["id"], d.Metadata["title"])
	}
	fmt.Println(strings.Contains(docs[0].PageContent, "salamander priests"))
	// Output:
	// fire-runes.md#1 Fire runes
	// enchanting.md#1 Enchanting a weapon
	// true
}

// A hybrid index over an embedder (here langchaingo's OpenAI embedder
// against llmtest's deterministic embeddings endpoint), saved to a file and
// loaded back.
func ExampleLoad() {
	srv := llmtest.NewServer(llmtest.Sequence(), nil)
	defer srv.Close()
	llm, err := srv.Client()
	if err != nil {
		log.Fatal(err)
	}
	embedder, err := embeddings.NewEmbedder(llm)
	if err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	ix, err := knowledge.New(&knowledge.IndexOptions{Embedder: embedder})
	if err != nil {
		log.Fatal(err)
	}
	err = ix.Add(ctx,
		knowledge.Chunk{ID: "steel#1", Title: "Steel", Source: "steel.md", Text: "The smiths of Varn quench their steel in snowmelt."},
		knowledge.Chunk{ID: "bows#1", Title: "Bows", Source: "bows.md", Text: "The elven bow is strung with a hair of the moon."},
	)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "knowledge")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "lore.idx")
	if err := ix.Save(path); err != nil {
		log.Fatal(err)
	}

	loaded, err := knowledge.Load(ctx, path, &knowledge.IndexOptions{Embedder: embedder})
	if err != nil {
		log.Fatal(err)
	}
	hits, err := loaded.Search(ctx, "quenching steel", 1, knowledge.Auto, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %.2f\n", hits[0].ID, hits[0].Score)
	// Output:
	// steel#1 0.82
}
