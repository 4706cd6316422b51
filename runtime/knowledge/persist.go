package knowledge

import (
	"bufio"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// magic starts every index file, before the gob-encoded [indexFile].
const magic = "chatgen knowledge index v1\n"

// indexFile is what an index file holds after the magic line. The BM25
// postings are not stored: Load rebuilds them from the chunks.
type indexFile struct {
	K1, B   float64
	Chunks  []Chunk
	Vectors [][]float32
}

// Save writes the index to the file at path: its chunks, BM25 parameters
// and vectors. It writes a temporary file in the same directory and
// renames it over path, so a reader of path sees the old index or the
// new one, never a part.
func (ix *Index) Save(path string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("knowledge: saving the index: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
			err = fmt.Errorf("knowledge: saving the index to %s: %w", path, err)
		}
	}()
	w := bufio.NewWriter(tmp)
	if err := ix.encode(w); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// encode writes the magic line and the gob-encoded index to w.
func (ix *Index) encode(w io.Writer) error {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if _, err := io.WriteString(w, magic); err != nil {
		return err
	}
	return gob.NewEncoder(w).Encode(indexFile{K1: ix.lex.k1, B: ix.lex.b, Chunks: ix.chunks, Vectors: ix.vectors})
}

// Load reads an index that Save wrote. It keeps the file's BM25
// parameters unless opts sets BM25. Give it the embedder the index was
// built with (opts.Embedder) to search it in the Semantic or Hybrid mode;
// an index saved without vectors is embedded then, chunk by chunk in one
// EmbedDocuments call. A file that is not an index, or is damaged, gives
// an error matching ErrCorrupt.
func Load(ctx context.Context, path string, opts *IndexOptions) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("knowledge: loading the index: %w", err)
	}
	defer f.Close()
	ix, err := decode(ctx, bufio.NewReader(f), opts)
	if err != nil {
		return nil, fmt.Errorf("knowledge: loading the index from %s: %w", path, err)
	}
	return ix, nil
}

// decode reads an index from r.
func decode(ctx context.Context, r io.Reader, opts *IndexOptions) (*Index, error) {
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != magic {
		return nil, fmt.Errorf("%w: it does not start with %q", ErrCorrupt, magic[:len(magic)-1])
	}
	var file indexFile
	if err := gob.NewDecoder(r).Decode(&file); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err := file.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	c, err := applyOptions(config{k1: file.K1, b: file.B}, opts)
	if err != nil {
		return nil, err
	}
	ix := newIndex(c)
	vecs := file.Vectors
	if vecs == nil && c.embedder != nil && len(file.Chunks) > 0 {
		if vecs, err = embedChunks(ctx, c.embedder, file.Chunks); err != nil {
			return nil, err
		}
	}
	ix.insert(file.Chunks, vecs)
	return ix, nil
}

// check reports what makes f inconsistent.
func (f *indexFile) check() error {
	if !validBM25(f.K1, f.B) {
		return fmt.Errorf("invalid BM25 parameters k1 = %v, b = %v (want a finite k1 ≥ 0 and b from 0 to 1)", f.K1, f.B)
	}
	ids := make(map[string]bool, len(f.Chunks))
	for i, c := range f.Chunks {
		if c.ID == "" || c.Text == "" || ids[c.ID] {
			return fmt.Errorf("chunk %d (id %q) has no id, no text or a repeated id", i, c.ID)
		}
		ids[c.ID] = true
	}
	if f.Vectors == nil {
		return nil
	}
	if len(f.Vectors) != len(f.Chunks) {
		return fmt.Errorf("%d vectors for %d chunks", len(f.Vectors), len(f.Chunks))
	}
	for _, v := range f.Vectors {
		if len(v) == 0 || len(v) != len(f.Vectors[0]) {
			return errors.New("the vectors do not all have the same, non-zero, number of dimensions")
		}
	}
	return nil
}
