package knowledge

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"math"
	"testing"
)

// FuzzDecode feeds damaged index files to the decoder: each gives an
// index or an error matching ErrCorrupt, never a panic, and a decoded
// index searches, scoring finite numbers (never NaN).
func FuzzDecode(f *testing.F) {
	ix, err := New(nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := ix.Add(context.Background(),
		Chunk{ID: "a#1", Title: "A", Source: "a.md", Text: "Iron was the first gift of the mountain."},
		Chunk{ID: "b#1", Source: "b.md", Text: "Steel is iron that walked through fire twice."},
	); err != nil {
		f.Fatal(err)
	}
	var good bytes.Buffer
	if err := ix.encode(&good); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes())
	for _, p := range [][2]float64{{math.NaN(), DefaultB}, {math.Inf(1), DefaultB}, {DefaultK1, math.NaN()}, {math.MaxFloat64, 1}} {
		var bad bytes.Buffer
		bad.WriteString(magic)
		if err := gob.NewEncoder(&bad).Encode(indexFile{K1: p[0], B: p[1], Chunks: ix.chunks}); err != nil {
			f.Fatal(err)
		}
		f.Add(bad.Bytes())
	}
	f.Add([]byte(magic))
	f.Add([]byte("not an index"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := decode(context.Background(), bytes.NewReader(data), nil)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			return
		}
		if got.Len() > 0 {
			hits, err := got.Search(context.Background(), "iron", 2, Lexical, 0)
			if err != nil {
				t.Fatalf("a decoded index does not search: %v", err)
			}
			for _, h := range hits {
				if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
					t.Fatalf("a decoded index (k1 = %v, b = %v) scores %v", got.lex.k1, got.lex.b, h.Score)
				}
			}
		}
	})
}
