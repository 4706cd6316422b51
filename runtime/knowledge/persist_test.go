package knowledge_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/knowledge"
)

// searchAll returns the hits of query in every mode the index supports,
// printed, for comparing two indexes.
func searchAll(t *testing.T, ix *knowledge.Index, query string, modes ...knowledge.Mode) string {
	t.Helper()
	var out string
	for _, m := range modes {
		hits, err := ix.Search(context.Background(), query, 3, m, 0)
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		out += fmt.Sprintf("%s: %v\n", m, hits)
	}
	return out
}

func TestSaveLoadLexical(t *testing.T) {
	ix := newIndex(t, forgeChunks, &knowledge.IndexOptions{BM25: &knowledge.BM25Params{K1: 2, B: 0.5}})
	path := filepath.Join(t.TempDir(), "lore.idx")
	if err := ix.Save(path); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	got, err := knowledge.Load(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want, have := searchAll(t, ix, "iron steel forging", knowledge.Lexical), searchAll(t, got, "iron steel forging", knowledge.Lexical); want != have {
		t.Errorf("loaded index searches differently:\n%s\nwant\n%s", have, want)
	}
	// The BM25 parameters came with the file: other ones score differently.
	other, err := knowledge.Load(ctx, path, &knowledge.IndexOptions{BM25: &knowledge.BM25Params{K1: 1.2, B: 0.75}})
	if err != nil {
		t.Fatal(err)
	}
	if searchAll(t, other, "iron steel forging", knowledge.Lexical) == searchAll(t, got, "iron steel forging", knowledge.Lexical) {
		t.Error("BM25 given to Load changed nothing")
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil || len(entries) != 1 {
		t.Errorf("the directory holds %v (%v), want only the index", entries, err)
	}

	// Saving over it replaces it.
	if err := got.Add(ctx, knowledge.Chunk{ID: "axe#1", Text: "Axes were tools before they were weapons."}); err != nil {
		t.Fatal(err)
	}
	if err := got.Save(path); err != nil {
		t.Fatal(err)
	}
	again, err := knowledge.Load(ctx, path, nil)
	if err != nil || again.Len() != len(forgeChunks)+1 {
		t.Fatalf("reloaded: %v, %v", again, err)
	}

	// Saving where it cannot leaves nothing behind.
	if err := ix.Save(filepath.Join(t.TempDir(), "missing", "lore.idx")); err == nil {
		t.Error("Save into a missing directory gives no error")
	}
}

func TestSaveLoadVectors(t *testing.T) {
	e, srv := llmtestEmbedder(t)
	ix := newIndex(t, forgeChunks, &knowledge.IndexOptions{Embedder: e})
	path := filepath.Join(t.TempDir(), "lore.idx")
	if err := ix.Save(path); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	calls := srv.EmbeddingCalls()
	got, err := knowledge.Load(ctx, path, &knowledge.IndexOptions{Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	if srv.EmbeddingCalls() != calls {
		t.Error("Load embedded the chunks again though the file has their vectors")
	}
	modes := []knowledge.Mode{knowledge.Lexical, knowledge.Semantic, knowledge.Hybrid}
	if want, have := searchAll(t, ix, "forged in starfire", modes...), searchAll(t, got, "forged in starfire", modes...); want != have {
		t.Errorf("loaded index searches differently:\n%s\nwant\n%s", have, want)
	}

	// Loaded without an embedder, it searches lexically and keeps the
	// vectors for the next save.
	lex, err := knowledge.Load(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lex.Search(ctx, "iron", 2, knowledge.Semantic, 0); !errors.Is(err, knowledge.ErrNoEmbedder) {
		t.Errorf("semantic search without embedder: %v", err)
	}
	if _, err := lex.Search(ctx, "iron", 2, knowledge.Auto, 0); err != nil {
		t.Errorf("auto search without embedder: %v", err)
	}
	if err := lex.Add(ctx, knowledge.Chunk{ID: "axe#1", Text: "Axes were tools."}); !errors.Is(err, knowledge.ErrNoEmbedder) || lex.Len() != len(forgeChunks) {
		t.Errorf("Add to an index with vectors, without embedder: %v, Len %d", err, lex.Len())
	}
	resaved := filepath.Join(t.TempDir(), "resaved.idx")
	if err := lex.Save(resaved); err != nil {
		t.Fatal(err)
	}
	calls = srv.EmbeddingCalls()
	if _, err := knowledge.Load(ctx, resaved, &knowledge.IndexOptions{Embedder: e}); err != nil || srv.EmbeddingCalls() != calls {
		t.Errorf("vectors lost on a save without embedder: %v, %d new calls", err, srv.EmbeddingCalls()-calls)
	}

	// A lexical index loaded with an embedder is embedded, in one call.
	lexPath := filepath.Join(t.TempDir(), "lexical.idx")
	if err := newIndex(t, forgeChunks, nil).Save(lexPath); err != nil {
		t.Fatal(err)
	}
	calls = srv.EmbeddingCalls()
	emb, err := knowledge.Load(ctx, lexPath, &knowledge.IndexOptions{Embedder: e})
	if err != nil {
		t.Fatal(err)
	}
	if srv.EmbeddingCalls() != calls+1 {
		t.Errorf("%d embeddings calls, want 1", srv.EmbeddingCalls()-calls)
	}
	if want, have := searchAll(t, ix, "forged in starfire", modes...), searchAll(t, emb, "forged in starfire", modes...); want != have {
		t.Errorf("embedded on load, the index searches differently:\n%s\nwant\n%s", have, want)
	}

	// A query embedded with other dimensions is refused.
	other, _ := llmtestEmbedderDims(t, 32)
	small, err := knowledge.Load(ctx, path, &knowledge.IndexOptions{Embedder: other})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Search(ctx, "iron", 2, knowledge.Semantic, 0); err == nil {
		t.Error("a 32-dimension query against 256-dimension vectors gives no error")
	}
}

func TestLoadCorrupt(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.idx")
	if err := newIndex(t, forgeChunks, nil).Save(good); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{
		"empty":     nil,
		"not index": []byte("# Iron\nIron was the first gift of the mountain.\n"),
		"truncated": b[:len(b)/2],
		"garbage":   append([]byte("chatgen knowledge index v1\n"), []byte("\x01\x02\x03garbage")...),
		"no gob":    []byte("chatgen knowledge index v1\n"),
	} {
		path := filepath.Join(dir, "bad.idx")
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := knowledge.Load(context.Background(), path, nil)
		if !errors.Is(err, knowledge.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := knowledge.Load(context.Background(), filepath.Join(dir, "missing.idx"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
}

// TestLoadRejectsNonFiniteBM25 hand-crafts index files whose BM25
// parameters are NaN, infinite or out of range: each is refused as
// corrupt, where it used to load and score every search NaN.
func TestLoadRejectsNonFiniteBM25(t *testing.T) {
	// file mirrors the gob-encoded part of an index file: gob matches
	// fields by name.
	type file struct {
		K1, B   float64
		Chunks  []knowledge.Chunk
		Vectors [][]float32
	}
	write := func(t *testing.T, k1, b float64) string {
		t.Helper()
		var buf bytes.Buffer
		buf.WriteString("chatgen knowledge index v1\n")
		if err := gob.NewEncoder(&buf).Encode(file{K1: k1, B: b, Chunks: forgeChunks}); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "bm25.idx")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	ctx := context.Background()
	// The hand-crafted format is the real one.
	if ix, err := knowledge.Load(ctx, write(t, 2, 0.5), nil); err != nil || ix.Len() != len(forgeChunks) {
		t.Fatalf("a well-formed hand-crafted file: %v", err)
	}
	nan, inf := math.NaN(), math.Inf(1)
	for _, p := range [][2]float64{{nan, 0.75}, {1.2, nan}, {inf, 0.75}, {math.Inf(-1), 0.75}, {1.2, inf}, {-1, 0.75}, {1.2, 1.5}, {1.2, -0.5}} {
		ix, err := knowledge.Load(ctx, write(t, p[0], p[1]), nil)
		if err == nil {
			hits, _ := ix.Search(ctx, "iron", 1, knowledge.Lexical, 0)
			t.Errorf("k1 = %v, b = %v: loaded (its search gives %v), want ErrCorrupt", p[0], p[1], hits)
			continue
		}
		if !errors.Is(err, knowledge.ErrCorrupt) || !strings.Contains(err.Error(), "BM25") {
			t.Errorf("k1 = %v, b = %v: %v, want ErrCorrupt naming the BM25 parameters", p[0], p[1], err)
		}
		// BM25 given to Load does not rescue a corrupt file.
		if _, err := knowledge.Load(ctx, write(t, p[0], p[1]), &knowledge.IndexOptions{BM25: &knowledge.BM25Params{K1: 1.2, B: 0.75}}); !errors.Is(err, knowledge.ErrCorrupt) {
			t.Errorf("k1 = %v, b = %v, loaded with BM25: %v, want ErrCorrupt", p[0], p[1], err)
		}
	}
}
