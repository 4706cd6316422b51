package knowledge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tmc/langchaingo/embeddings"
)

// Errors of the index, matchable with errors.Is.
var (
	// ErrEmptyQuery is returned for a query that is empty or only spaces.
	ErrEmptyQuery = errors.New("knowledge: empty query")
	// ErrInvalidK is returned for a number of results k ≤ 0.
	ErrInvalidK = errors.New("knowledge: the number of results must be at least 1")
	// ErrNoEmbedder is returned when a search needs vectors (the
	// Semantic or Hybrid mode) and the index has no embedder or no vectors.
	ErrNoEmbedder = errors.New("knowledge: the index has no embedder")
	// ErrInvalidChunk is returned by Add for a chunk without an id or a
	// text, or whose id is already in the index.
	ErrInvalidChunk = errors.New("knowledge: invalid chunk")
	// ErrCorrupt is returned by Load for a file that is not an index or is
	// damaged.
	ErrCorrupt = errors.New("knowledge: corrupt index file")
)

// Chunk is a passage of a document: what the index stores and a search
// returns.
type Chunk struct {
	// ID identifies the chunk in the index; LoadDir makes it from the
	// source and the chunk's number ("iron.md#2").
	ID string
	// Title is the document's title (its first heading, or its file name).
	Title string
	// Source is where the document came from (its path in the loaded file
	// system).
	Source string
	// Text is the passage.
	Text string
}

// Hit is a chunk found by [Index.Search], with its relevance: a higher
// Score is more relevant. Scores are comparable within a mode only: BM25
// scores in the Lexical mode, cosine similarities in the Semantic mode,
// and the mean of the two, at most 1, in the Hybrid mode, where the BM25
// score is divided by the query's best.
type Hit struct {
	Chunk
	Score float64
}

// Mode is how [Index.Search] ranks passages.
type Mode int

// The search modes.
const (
	// Auto is Hybrid when the index has an embedder and a vector for
	// every chunk, Lexical otherwise.
	Auto Mode = iota
	// Lexical ranks by BM25 over the terms of the query.
	Lexical
	// Semantic ranks by cosine similarity between the embeddings of the
	// query and of the passages.
	Semantic
	// Hybrid ranks by the mean of the BM25 score, divided by the best
	// BM25 score of the query, and the cosine similarity.
	Hybrid
)

// String returns the mode's name, such as "lexical".
func (m Mode) String() string {
	switch m {
	case Auto:
		return "auto"
	case Lexical:
		return "lexical"
	case Semantic:
		return "semantic"
	case Hybrid:
		return "hybrid"
	default:
		return fmt.Sprintf("Mode(%d)", int(m))
	}
}

// Index is an in-memory index of passages: a BM25 lexical index and,
// when it has an embedder, a vector per passage searched by brute-force
// cosine similarity. It needs no server and, lexical only, no model.
// Save writes it to a file and Load reads it back.
//
// An Index is safe for concurrent use: searches run in parallel with each
// other, and Add waits for the searches under way.
type Index struct {
	embedder embeddings.Embedder // nil: lexical only

	mu      sync.RWMutex
	chunks  []Chunk
	ids     map[string]bool
	lex     *bm25
	vectors [][]float32 // one per chunk, unit length; nil when none
}

// IndexOptions configures an [Index] made by [New], [Load] or
// [IndexDir]. A nil *IndexOptions and the zero value are a lexical index
// (no embedder) with the default BM25 parameters.
type IndexOptions struct {
	// Embedder, when not nil, gives the index an embedder: Add embeds
	// every passage and the Semantic and Hybrid modes embed the query. Any
	// langchaingo embedder works, such as embeddings.NewEmbedder over an
	// OpenAI client.
	Embedder embeddings.Embedder
	// BM25, when not nil, sets the BM25 parameters; nil means [DefaultK1]
	// and [DefaultB] (for [Load], the file's). Parameters out of range are
	// an error of [New], [IndexDir] or [Load].
	BM25 *BM25Params
}

// BM25Params are the parameters of BM25 ranking ([IndexOptions.BM25]).
type BM25Params struct {
	// K1, finite and ≥ 0, is how fast a term's repeats stop counting.
	K1 float64
	// B, from 0 to 1, is how much a long passage is penalized.
	B float64
}

// config is what the options set.
type config struct {
	embedder embeddings.Embedder
	k1, b    float64
}

// newConfig applies opts, which may be nil, to the defaults.
func newConfig(opts *IndexOptions) (config, error) {
	return applyOptions(config{k1: DefaultK1, b: DefaultB}, opts)
}

// applyOptions returns c with opts, which may be nil, applied.
func applyOptions(c config, opts *IndexOptions) (config, error) {
	if opts == nil {
		return c, nil
	}
	if p := opts.BM25; p != nil {
		if !validBM25(p.K1, p.B) {
			return c, fmt.Errorf("knowledge: IndexOptions.BM25 {K1: %v, B: %v}: want a finite K1 ≥ 0 and B from 0 to 1", p.K1, p.B)
		}
		c.k1, c.b = p.K1, p.B
	}
	if opts.Embedder != nil {
		c.embedder = opts.Embedder
	}
	return c, nil
}

// New returns an empty index configured by opts; nil opts is a lexical
// index with the default BM25 parameters.
func New(opts *IndexOptions) (*Index, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return newIndex(c), nil
}

// newIndex returns an empty index configured by c.
func newIndex(c config) *Index {
	return &Index{embedder: c.embedder, ids: map[string]bool{}, lex: newBM25(c.k1, c.b)}
}

// Len returns the number of chunks in the index.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return len(ix.chunks)
}

// Chunks returns a copy of the chunks in the index, in the order they were
// added.
func (ix *Index) Chunks() []Chunk {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return slices.Clone(ix.chunks)
}

// Add indexes chunks. Each needs an ID not already in the index and a
// Text. With an embedder, Add embeds the chunks first (one
// EmbedDocuments call); if that fails, nothing is added. An index loaded
// with vectors but without its embedder takes no new chunk
// (ErrNoEmbedder): they would have no vector. Add adds all the chunks or,
// on error, none.
func (ix *Index) Add(ctx context.Context, chunks ...Chunk) error {
	batch := map[string]bool{}
	for i, c := range chunks {
		switch {
		case c.ID == "":
			return fmt.Errorf("%w: chunk %d has no id", ErrInvalidChunk, i)
		case strings.TrimSpace(c.Text) == "":
			return fmt.Errorf("%w: chunk %q has no text", ErrInvalidChunk, c.ID)
		case batch[c.ID]:
			return fmt.Errorf("%w: id %q is given twice", ErrInvalidChunk, c.ID)
		}
		batch[c.ID] = true
	}
	var vecs [][]float32
	if ix.embedder != nil && len(chunks) > 0 {
		var err error
		if vecs, err = embedChunks(ctx, ix.embedder, chunks); err != nil {
			return err
		}
	}

	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, c := range chunks {
		if ix.ids[c.ID] {
			return fmt.Errorf("%w: id %q is already in the index", ErrInvalidChunk, c.ID)
		}
	}
	switch {
	case vecs == nil && len(ix.vectors) > 0 && len(chunks) > 0:
		return fmt.Errorf("%w to embed the new chunks of an index with vectors (load it with IndexOptions.Embedder)", ErrNoEmbedder)
	case vecs != nil && len(ix.chunks) > 0 && (len(ix.vectors) != len(ix.chunks) || len(ix.vectors[0]) != len(vecs[0])):
		return fmt.Errorf("knowledge: the embedder's vectors (%d dimensions) do not match the index's (%d chunks, %d with vectors)",
			len(vecs[0]), len(ix.chunks), len(ix.vectors))
	}
	ix.insert(chunks, vecs)
	return nil
}

// insert appends chunks and their vectors (nil for none); ix.mu is held
// for writing.
func (ix *Index) insert(chunks []Chunk, vecs [][]float32) {
	for _, c := range chunks {
		ix.chunks = append(ix.chunks, c)
		ix.ids[c.ID] = true
		ix.lex.add(terms(indexedText(c)))
	}
	ix.vectors = append(ix.vectors, vecs...)
}

// indexedText is the text of c that is indexed and embedded: its title
// and its passage.
func indexedText(c Chunk) string {
	if c.Title == "" || strings.Contains(c.Text, c.Title) {
		return c.Text
	}
	return c.Title + "\n" + c.Text
}

// Search returns the k chunks most relevant to query, best first, ranked
// as mode says (see [Mode]); with minScore > 0 only those scoring at
// least minScore. Chunks that share nothing with the query (a BM25 score
// of 0 in the Lexical mode) are never returned. It returns ErrEmptyQuery
// for an empty query, ErrInvalidK for k ≤ 0, and ErrNoEmbedder for the
// Semantic or Hybrid mode without vectors.
func (ix *Index) Search(ctx context.Context, query string, k int, mode Mode, minScore float64) ([]Hit, error) {
	if strings.TrimSpace(query) == "" {
		return nil, ErrEmptyQuery
	}
	if k <= 0 {
		return nil, fmt.Errorf("%w (k = %d)", ErrInvalidK, k)
	}
	if mode < Auto || mode > Hybrid {
		return nil, fmt.Errorf("knowledge: unknown search mode %v", mode)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if mode == Auto {
		mode = ix.autoMode()
	}
	var qvec []float32
	if mode != Lexical {
		if !ix.hasVectors() {
			return nil, fmt.Errorf("%w for a %s search (create it with IndexOptions.Embedder)", ErrNoEmbedder, mode)
		}
		var err error
		if qvec, err = embedQuery(ctx, ix.embedder, query); err != nil {
			return nil, err
		}
	}

	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if len(ix.chunks) == 0 {
		return nil, nil
	}
	var scores []float64
	if mode == Lexical {
		scores = ix.lex.scores(terms(query))
	} else {
		cos, err := ix.cosines(qvec)
		if err != nil {
			return nil, err
		}
		scores = cos
		if mode == Hybrid {
			scores = blend(ix.lex.scores(terms(query)), cos)
		}
	}
	return ix.top(scores, k, mode, minScore), nil
}

// autoMode is the mode Auto stands for.
func (ix *Index) autoMode() Mode {
	if ix.hasVectors() {
		return Hybrid
	}
	return Lexical
}

// hasVectors reports whether the index has an embedder and a vector for
// every chunk.
func (ix *Index) hasVectors() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.embedder != nil && len(ix.vectors) == len(ix.chunks)
}

// top returns the hits of the k best scores, best first (on a tie, the
// chunk added first); ix.mu is held. It keeps the best k in a sorted
// slice as it scans, so a search costs O(n·log k) comparisons and
// O(k) memory beyond the scores.
func (ix *Index) top(scores []float64, k int, mode Mode, minScore float64) []Hit {
	best := make([]int, 0, k+1)
	for i, s := range scores {
		if mode == Lexical && s <= 0 || minScore > 0 && s < minScore {
			continue
		}
		if len(best) == k && s <= scores[best[k-1]] {
			continue
		}
		at, _ := slices.BinarySearchFunc(best, s, func(j int, s float64) int {
			if scores[j] >= s {
				return -1 // j stays before i: higher score, or added first
			}
			return 1
		})
		best = slices.Insert(best, at, i)
		if len(best) > k {
			best = best[:k]
		}
	}
	hits := make([]Hit, len(best))
	for n, i := range best {
		hits[n] = Hit{Chunk: ix.chunks[i], Score: scores[i]}
	}
	return hits
}

// blend is the Hybrid score: the mean of the BM25 score divided by the
// best one, and the cosine similarity.
func blend(lex, cos []float64) []float64 {
	best := slices.Max(lex)
	out := make([]float64, len(lex))
	for i := range lex {
		l := 0.0
		if best > 0 {
			l = lex[i] / best
		}
		out[i] = (l + cos[i]) / 2
	}
	return out
}
