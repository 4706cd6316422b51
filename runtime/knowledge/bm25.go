package knowledge

import "math"

// The BM25 parameters that [New] uses unless [IndexOptions.BM25] says otherwise:
// the usual defaults of Lucene and Elasticsearch.
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// bm25 is an inverted index scored with Okapi BM25: for each query term t
// found in passage d,
//
//	idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl))
//
// with idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5)), Lucene's variant, which
// is never negative. It is not safe for concurrent use: Index guards it.
type bm25 struct {
	k1, b    float64
	postings map[string][]posting
	lengths  []int // terms in each passage
	total    int   // terms in all passages
}

// posting is a passage holding a term, and how many times.
type posting struct {
	doc, tf int
}

// newBM25 returns an empty index with parameters k1 and b.
func newBM25(k1, b float64) *bm25 {
	return &bm25{k1: k1, b: b, postings: map[string][]posting{}}
}

// add indexes the terms of the next passage, whose number is the count of
// passages added before it.
func (x *bm25) add(ts []string) {
	doc := len(x.lengths)
	counts := map[string]int{}
	for _, t := range ts {
		counts[t]++
	}
	for t, n := range counts {
		x.postings[t] = append(x.postings[t], posting{doc: doc, tf: n})
	}
	x.lengths = append(x.lengths, len(ts))
	x.total += len(ts)
}

// scores returns the BM25 score of every passage for the query terms
// (each distinct term counted once); passages sharing no term score 0.
func (x *bm25) scores(query []string) []float64 {
	out := make([]float64, len(x.lengths))
	if len(x.lengths) == 0 {
		return out
	}
	n := float64(len(x.lengths))
	avg := float64(x.total) / n
	if avg == 0 {
		return out
	}
	seen := map[string]bool{}
	for _, t := range query {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := x.postings[t]
		if len(ps) == 0 {
			continue
		}
		df := float64(len(ps))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			out[p.doc] += termScore(idf, float64(p.tf), x.k1, 1-x.b+x.b*float64(x.lengths[p.doc])/avg)
		}
	}
	return out
}

// termScore is a term's BM25 score in a passage, idf · tf·(k1+1) /
// (tf + k1·f), f being the passage's length normalization. Above k1 =
// 1e6 it is computed divided through by k1, so that no finite k1
// overflows into Inf/Inf = NaN; below, as written, so that the usual
// parameters score bit for bit as they always did.
func termScore(idf, tf, k1, f float64) float64 {
	if k1 <= 1e6 {
		return idf * tf * (k1 + 1) / (tf + k1*f)
	}
	return idf * tf * (1 + 1/k1) / (tf/k1 + f)
}

// validBM25 reports whether k1 and b are BM25 parameters: k1 finite and
// at least 0, b from 0 to 1 (NaN is neither).
func validBM25(k1, b float64) bool {
	return k1 >= 0 && !math.IsInf(k1, 1) && b >= 0 && b <= 1
}
