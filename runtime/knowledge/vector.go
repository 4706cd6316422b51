package knowledge

import (
	"context"
	"fmt"
	"math"

	"github.com/tmc/langchaingo/embeddings"
)

// embedChunks returns the unit-length embedding of each chunk's indexed
// text, in one EmbedDocuments call.
func embedChunks(ctx context.Context, e embeddings.Embedder, chunks []Chunk) ([][]float32, error) {
	texts := make([]string, len(chunks)) // a new slice: langchaingo's embedder rewrites it
	for i, c := range chunks {
		texts[i] = indexedText(c)
	}
	vecs, err := e.EmbedDocuments(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("knowledge: embedding %d chunks: %w", len(chunks), err)
	}
	if len(vecs) != len(chunks) {
		return nil, fmt.Errorf("knowledge: the embedder returned %d vectors for %d chunks", len(vecs), len(chunks))
	}
	for i, v := range vecs {
		if len(v) == 0 || len(v) != len(vecs[0]) {
			return nil, fmt.Errorf("knowledge: the embedder returned a vector of %d dimensions for chunk %q, want %d",
				len(v), chunks[i].ID, len(vecs[0]))
		}
		vecs[i] = unit(v)
	}
	return vecs, nil
}

// embedQuery returns the unit-length embedding of query.
func embedQuery(ctx context.Context, e embeddings.Embedder, query string) ([]float32, error) {
	v, err := e.EmbedQuery(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("knowledge: embedding the query: %w", err)
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("knowledge: the embedder returned an empty vector for the query")
	}
	return unit(v), nil
}

// unit returns v scaled to length 1 (a zero vector stays zero), so that a
// dot product is the cosine similarity.
func unit(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	out := make([]float32, len(v))
	if sum == 0 {
		return out
	}
	norm := math.Sqrt(sum)
	for i, x := range v {
		out[i] = float32(float64(x) / norm)
	}
	return out
}

// cosines returns the cosine similarity of q to every chunk's vector;
// ix.mu is held.
func (ix *Index) cosines(q []float32) ([]float64, error) {
	switch {
	case len(ix.vectors) != len(ix.chunks):
		return nil, fmt.Errorf("%w: %d of its %d chunks have vectors", ErrNoEmbedder, len(ix.vectors), len(ix.chunks))
	case len(ix.vectors) > 0 && len(ix.vectors[0]) != len(q):
		return nil, fmt.Errorf("knowledge: the query's embedding has %d dimensions, the index's %d", len(q), len(ix.vectors[0]))
	}
	out := make([]float64, len(ix.vectors))
	for i, v := range ix.vectors {
		var dot float64
		for j, x := range v {
			dot += float64(x) * float64(q[j])
		}
		out[i] = dot
	}
	return out, nil
}
