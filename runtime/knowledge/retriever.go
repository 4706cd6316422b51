package knowledge

import (
	"context"

	"github.com/tmc/langchaingo/schema"
)

// Retriever searches an [Index] as a langchaingo schema.Retriever, so it
// plugs in wherever one is taken. Make one with [Index.Retriever].
type Retriever struct {
	ix       *Index
	k        int
	mode     Mode
	minScore float64
}

var _ schema.Retriever = (*Retriever)(nil)

// RetrieverOptions configures a [Retriever]. A nil *RetrieverOptions and
// the zero value rank in the Auto mode and drop no passage by score.
type RetrieverOptions struct {
	// Mode is how the retriever ranks passages; the zero value is Auto.
	Mode Mode
	// MinScore drops passages scoring below it (0: none is dropped but, in
	// the Lexical mode, those sharing no term with the query). Scores
	// depend on the mode: see [Hit].
	MinScore float64
}

// Retriever returns a retriever of the k most relevant passages of the
// index, configured by opts (nil: the zero [RetrieverOptions]).
func (ix *Index) Retriever(k int, opts *RetrieverOptions) *Retriever {
	r := &Retriever{ix: ix, k: k}
	if opts != nil {
		r.mode, r.minScore = opts.Mode, opts.MinScore
	}
	return r
}

// GetRelevantDocuments returns the passages most relevant to query, best
// first, as [Index.Search] finds them: each document's PageContent is the
// passage, its Score the relevance and its Metadata has "id", "title" and
// "source" (strings).
func (r *Retriever) GetRelevantDocuments(ctx context.Context, query string) ([]schema.Document, error) {
	hits, err := r.ix.Search(ctx, query, r.k, r.mode, r.minScore)
	if err != nil {
		return nil, err
	}
	docs := make([]schema.Document, len(hits))
	for i, h := range hits {
		docs[i] = schema.Document{
			PageContent: h.Text,
			Score:       float32(h.Score),
			Metadata:    map[string]any{"id": h.ID, "title": h.Title, "source": h.Source},
		}
	}
	return docs, nil
}
