// Package textdist measures how far apart two short strings are, for the
// "did you mean" suggestions of the generator (package gen) and of the
// runtime (runtime/chat's unknown routes). It uses the standard library
// only.
package textdist

// Distance returns the optimal string alignment distance between a and
// b, counted in runes: the Levenshtein distance, with the transposition of
// two adjacent runes ("Dsek" for "Desk") as one edit. Long strings are never
// near: it returns a large distance for them.
func Distance(a, b string) int {
	const limit = 64
	ra, rb := []rune(a), []rune(b)
	if len(ra) > limit || len(rb) > limit {
		return limit
	}
	// Rows i-2, i-1 and i of the distance matrix.
	before := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], before[j-2]+1)
			}
		}
		before, prev, cur = prev, cur, before
	}
	return prev[len(rb)]
}
