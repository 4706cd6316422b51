package knowledge_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tmc/langchaingo/embeddings"

	"github.com/chatscopes/chatgen/runtime/knowledge"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// inProcessEmbedder embeds with llmtest.Embed without HTTP, so that the
// benchmarks measure the index, not the loopback round trip.
func inProcessEmbedder(b *testing.B) embeddings.Embedder {
	b.Helper()
	e, err := embeddings.NewEmbedder(embeddings.EmbedderClientFunc(func(_ context.Context, texts []string) ([][]float32, error) {
		out := make([][]float32, len(texts))
		for i, t := range texts {
			out[i] = llmtest.Embed(t, llmtest.EmbeddingDimensions)
		}
		return out, nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// scaledLore returns the lore corpus's chunks copied times times, with
// distinct ids.
func scaledLore(b *testing.B, times int) []knowledge.Chunk {
	b.Helper()
	chunks, err := knowledge.LoadDir(context.Background(), os.DirFS(loreDir), &knowledge.LoadOptions{ChunkSize: 300})
	if err != nil {
		b.Fatal(err)
	}
	var out []knowledge.Chunk
	for i := range times {
		for _, c := range chunks {
			c.ID = fmt.Sprintf("%s/%d", c.ID, i)
			out = append(out, c)
		}
	}
	return out
}

// BenchmarkSearch searches the lore corpus (44 passages) and 100 copies of
// it (4,400 passages) in each mode, the query embedded in process.
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	for _, times := range []int{1, 100} {
		chunks := scaledLore(b, times)
		ix, err := knowledge.New(&knowledge.IndexOptions{Embedder: inProcessEmbedder(b)})
		if err != nil {
			b.Fatal(err)
		}
		if err := ix.Add(ctx, chunks...); err != nil {
			b.Fatal(err)
		}
		for _, mode := range []knowledge.Mode{knowledge.Lexical, knowledge.Semantic, knowledge.Hybrid} {
			b.Run(fmt.Sprintf("%s/passages=%d", mode, len(chunks)), func(b *testing.B) {
				for b.Loop() {
					if _, err := ix.Search(ctx, "Why do the smiths of Varn quench blades in snowmelt?", 3, mode, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkLoadAndIndex loads the lore corpus from disk, splits it and
// indexes it lexically: what an application does at start without a saved
// index.
func BenchmarkLoadAndIndex(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		if _, err := knowledge.IndexDir(ctx, os.DirFS(loreDir), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveLoad saves and loads 4,400 passages with their vectors.
func BenchmarkSaveLoad(b *testing.B) {
	ctx := context.Background()
	e := inProcessEmbedder(b)
	ix, err := knowledge.New(&knowledge.IndexOptions{Embedder: e})
	if err != nil {
		b.Fatal(err)
	}
	if err := ix.Add(ctx, scaledLore(b, 100)...); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "lore.idx")
	for b.Loop() {
		if err := ix.Save(path); err != nil {
			b.Fatal(err)
		}
		if _, err := knowledge.Load(ctx, path, &knowledge.IndexOptions{Embedder: e}); err != nil {
			b.Fatal(err)
		}
	}
	if st, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(st.Size()), "file-bytes")
	}
}
