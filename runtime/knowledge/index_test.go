package knowledge_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/knowledge"
)

// forgeChunks are a few passages about the forge.
var forgeChunks = []knowledge.Chunk{
	{ID: "iron#1", Title: "Iron", Source: "iron.md", Text: "Iron was the first gift of the mountain."},
	{ID: "steel#1", Title: "Steel", Source: "steel.md", Text: "Steel is iron that walked through fire twice; the smiths of Varn quench it in snowmelt."},
	{ID: "mithril#1", Title: "Mithril", Source: "mithril.md", Text: "Mithril was forged in starfire, harder than dragon scale."},
	{ID: "bow#1", Title: "Bows", Source: "bows.md", Text: "The elven bow is strung with a hair of the moon."},
}

// newIndex returns an index of chunks built with opts.
func newIndex(t *testing.T, chunks []knowledge.Chunk, opts *knowledge.IndexOptions) *knowledge.Index {
	t.Helper()
	ix, err := knowledge.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Add(context.Background(), chunks...); err != nil {
		t.Fatal(err)
	}
	return ix
}

// ids lists the ids of hits.
func ids(hits []knowledge.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

func TestSearchLexical(t *testing.T) {
	ix := newIndex(t, forgeChunks, nil)
	ctx := context.Background()
	hits, err := ix.Search(ctx, "Who quenches steel in snowmelt?", 3, knowledge.Auto, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hits); !slices.Equal(got, []string{"steel#1"}) {
		t.Fatalf("hits %v, want only steel#1 (the others share no term)", got)
	}
	if hits[0].Title != "Steel" || hits[0].Source != "steel.md" || hits[0].Score <= 0 {
		t.Errorf("hit %+v", hits[0])
	}

	hits, err = ix.Search(ctx, "iron forging", 2, knowledge.Lexical, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hits); len(got) != 2 || !slices.Contains(got, "iron#1") {
		t.Errorf("iron forging: %v, want 2 hits with iron#1", got)
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("hits not best first: %v", hits)
		}
	}

	// The passage's title is indexed with it.
	hits, err = ix.Search(ctx, "bows", 1, knowledge.Lexical, 0)
	if err != nil || len(hits) != 1 || hits[0].ID != "bow#1" {
		t.Errorf("bows: %v, %v", ids(hits), err)
	}

	// minScore drops the weak hits.
	all, err := ix.Search(ctx, "iron forging", 5, knowledge.Lexical, 0)
	if err != nil {
		t.Fatal(err)
	}
	some, err := ix.Search(ctx, "iron forging", 5, knowledge.Lexical, all[0].Score)
	if err != nil || len(some) == 0 || len(some) >= len(all) {
		t.Errorf("minScore %v kept %d of %d hits (%v)", all[0].Score, len(some), len(all), err)
	}

	hits, err = ix.Search(ctx, "the of and", 3, knowledge.Lexical, 0)
	if err != nil || len(hits) != 0 {
		t.Errorf("a query of stop words: %v, %v; want no hit", ids(hits), err)
	}
}

func TestSearchErrors(t *testing.T) {
	ix := newIndex(t, forgeChunks, nil)
	ctx := context.Background()
	for _, tc := range []struct {
		query string
		k     int
		mode  knowledge.Mode
		want  error
	}{
		{"", 3, knowledge.Auto, knowledge.ErrEmptyQuery},
		{"  \n", 3, knowledge.Auto, knowledge.ErrEmptyQuery},
		{"iron", 0, knowledge.Auto, knowledge.ErrInvalidK},
		{"iron", -1, knowledge.Lexical, knowledge.ErrInvalidK},
		{"iron", 3, knowledge.Semantic, knowledge.ErrNoEmbedder},
		{"iron", 3, knowledge.Hybrid, knowledge.ErrNoEmbedder},
	} {
		_, err := ix.Search(ctx, tc.query, tc.k, tc.mode, 0)
		if !errors.Is(err, tc.want) {
			t.Errorf("Search(%q, %d, %v) = %v, want %v", tc.query, tc.k, tc.mode, err, tc.want)
		}
	}
	if _, err := ix.Search(ctx, "iron", 3, knowledge.Mode(9), 0); err == nil {
		t.Error("an unknown mode gives no error")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ix.Search(cancelled, "iron", 3, knowledge.Auto, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	empty := newIndex(t, nil, nil)
	if hits, err := empty.Search(ctx, "iron", 3, knowledge.Auto, 0); err != nil || len(hits) != 0 {
		t.Errorf("empty index: %v, %v", hits, err)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	for _, opts := range []*knowledge.IndexOptions{{BM25: &knowledge.BM25Params{K1: -1, B: 0.5}}, {BM25: &knowledge.BM25Params{K1: 1.2, B: 1.5}}} {
		if _, err := knowledge.New(opts); err == nil {
			t.Error("New accepted a bad option")
		}
	}
	if _, err := knowledge.New(&knowledge.IndexOptions{BM25: &knowledge.BM25Params{K1: 0, B: 0}}); err != nil {
		t.Errorf("BM25 0, 0: %v", err)
	}
}

// TestBM25RejectsNonFinite checks that NaN and infinite BM25
// parameters, with which every search would score NaN, are refused.
func TestBM25RejectsNonFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, p := range [][2]float64{{nan, 0.75}, {1.2, nan}, {inf, 0.75}, {math.Inf(-1), 0.75}, {1.2, inf}, {1.2, math.Inf(-1)}, {nan, nan}} {
		ix, err := knowledge.New(&knowledge.IndexOptions{BM25: &knowledge.BM25Params{K1: p[0], B: p[1]}})
		if err == nil {
			hits, _ := newIndex(t, forgeChunks, nil).Search(context.Background(), "iron", 1, knowledge.Lexical, 0)
			if ix != nil {
				_ = ix.Add(context.Background(), forgeChunks...)
				hits, _ = ix.Search(context.Background(), "iron", 1, knowledge.Lexical, 0)
			}
			t.Errorf("BM25 %v, %v accepted (its search gives %v)", p[0], p[1], hits)
			continue
		}
		if !strings.Contains(err.Error(), "IndexOptions.BM25") {
			t.Errorf("BM25 %v, %v: %v, want an error naming IndexOptions.BM25", p[0], p[1], err)
		}
	}
	// Large finite parameters are fine and score numbers.
	ix := newIndex(t, forgeChunks, &knowledge.IndexOptions{BM25: &knowledge.BM25Params{K1: math.MaxFloat64, B: 1}})
	hits, err := ix.Search(context.Background(), "iron steel", 4, knowledge.Lexical, 0)
	if err != nil || len(hits) == 0 {
		t.Fatalf("k1 = MaxFloat64: %v, %v", hits, err)
	}
	for _, h := range hits {
		if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
			t.Errorf("k1 = MaxFloat64: %s scores %v", h.ID, h.Score)
		}
	}
}

func TestAddIsAllOrNothing(t *testing.T) {
	ix := newIndex(t, forgeChunks[:1], nil)
	ctx := context.Background()
	for _, batch := range [][]knowledge.Chunk{
		{forgeChunks[1], {ID: "", Text: "no id"}},
		{forgeChunks[1], {ID: "x", Text: " \n"}},
		{forgeChunks[1], forgeChunks[1]},
		{forgeChunks[1], forgeChunks[0]}, // already in the index
	} {
		if err := ix.Add(ctx, batch...); !errors.Is(err, knowledge.ErrInvalidChunk) {
			t.Errorf("Add(%v) = %v, want ErrInvalidChunk", batch, err)
		}
	}
	if ix.Len() != 1 {
		t.Fatalf("Len = %d after failed adds, want 1", ix.Len())
	}
	if hits, _ := ix.Search(ctx, "steel", 1, knowledge.Auto, 0); len(hits) != 0 {
		t.Errorf("a chunk of a failed add is searchable: %v", ids(hits))
	}
}

func TestSearchSemanticAndHybrid(t *testing.T) {
	e, srv := llmtestEmbedder(t)
	ix := newIndex(t, forgeChunks, &knowledge.IndexOptions{Embedder: e})
	if got := srv.EmbeddingCalls(); got != 1 {
		t.Errorf("Add made %d embeddings calls, want 1", got)
	}
	ctx := context.Background()

	// "forging" and "starfire" share trigrams with "forged" and "starfire".
	hits, err := ix.Search(ctx, "forging in starfires", 2, knowledge.Semantic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 2 || hits[0].ID != "mithril#1" || hits[0].Score <= hits[1].Score || hits[0].Score > 1 {
		t.Fatalf("semantic hits %+v, want mithril#1 first with a cosine ≤ 1", hits)
	}
	// Semantic search returns k hits even when no term is shared.
	hits, err = ix.Search(ctx, "zzz", 4, knowledge.Semantic, 0)
	if err != nil || len(hits) != 4 {
		t.Errorf("semantic: %d hits, %v; want 4", len(hits), err)
	}

	// Auto is Hybrid with an embedder; its scores are between 0 and 1.
	auto, err := ix.Search(ctx, "Who quenches steel in snowmelt?", 4, knowledge.Auto, 0)
	if err != nil {
		t.Fatal(err)
	}
	hybrid, err := ix.Search(ctx, "Who quenches steel in snowmelt?", 4, knowledge.Hybrid, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(auto) != fmt.Sprint(hybrid) || hybrid[0].ID != "steel#1" || hybrid[0].Score > 1 {
		t.Errorf("auto %v, hybrid %v", auto, hybrid)
	}
	if got := srv.EmbeddingCalls(); got != 5 {
		t.Errorf("%d embeddings calls, want 5 (one per add and per search)", got)
	}

	// A failing embedder fails the add, which adds nothing.
	srv.Close()
	if err := ix.Add(ctx, knowledge.Chunk{ID: "new", Text: "new passage"}); err == nil || ix.Len() != len(forgeChunks) {
		t.Errorf("Add with the server down: %v, Len %d", err, ix.Len())
	}
	if _, err := ix.Search(ctx, "steel", 1, knowledge.Hybrid, 0); err == nil {
		t.Error("Search with the server down gives no error")
	}
	if hits, err := ix.Search(ctx, "steel", 1, knowledge.Lexical, 0); err != nil || len(hits) != 1 {
		t.Errorf("a lexical search needs no embedder: %v, %v", hits, err)
	}
}

func TestRetriever(t *testing.T) {
	ix := newIndex(t, forgeChunks, nil)
	ctx := context.Background()
	docs, err := ix.Retriever(2, nil).GetRelevantDocuments(ctx, "iron and steel")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 2 {
		t.Fatalf("%d documents, want 2", len(docs))
	}
	d := docs[0]
	id, _ := d.Metadata["id"].(string)
	title, _ := d.Metadata["title"].(string)
	source, _ := d.Metadata["source"].(string)
	i := slices.IndexFunc(forgeChunks, func(c knowledge.Chunk) bool { return c.ID == id })
	if i < 0 || title != forgeChunks[i].Title || source != forgeChunks[i].Source || d.PageContent != forgeChunks[i].Text || d.Score <= 0 {
		t.Errorf("document %+v", d)
	}
	if docs[1].Score > docs[0].Score {
		t.Errorf("documents not best first")
	}

	if _, err := ix.Retriever(0, nil).GetRelevantDocuments(ctx, "iron"); !errors.Is(err, knowledge.ErrInvalidK) {
		t.Errorf("k = 0: %v", err)
	}
	if _, err := ix.Retriever(3, &knowledge.RetrieverOptions{Mode: knowledge.Semantic}).GetRelevantDocuments(ctx, "iron"); !errors.Is(err, knowledge.ErrNoEmbedder) {
		t.Errorf("semantic without embedder: %v", err)
	}
	docs, err = ix.Retriever(3, &knowledge.RetrieverOptions{MinScore: 1e9}).GetRelevantDocuments(ctx, "iron")
	if err != nil || len(docs) != 0 {
		t.Errorf("min score 1e9: %v, %v", docs, err)
	}
}

func TestConcurrentAddAndSearch(t *testing.T) {
	e, _ := llmtestEmbedder(t)
	ix := newIndex(t, forgeChunks, &knowledge.IndexOptions{Embedder: e})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Go(func() {
			errs <- ix.Add(ctx, knowledge.Chunk{ID: fmt.Sprintf("extra#%d", i), Text: fmt.Sprintf("extra passage %d about iron", i)})
		})
		wg.Go(func() {
			_, err := ix.Search(ctx, "iron", 3, knowledge.Auto, 0)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if ix.Len() != len(forgeChunks)+20 {
		t.Errorf("Len = %d, want %d", ix.Len(), len(forgeChunks)+20)
	}
}

func TestModeString(t *testing.T) {
	for m, want := range map[knowledge.Mode]string{knowledge.Auto: "auto", knowledge.Lexical: "lexical",
		knowledge.Semantic: "semantic", knowledge.Hybrid: "hybrid", knowledge.Mode(7): "Mode(7)"} {
		if m.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(m), m.String(), want)
		}
	}
}
