package gen

import (
	"strings"
	"unicode/utf8"

	"github.com/chatscopes/chatgen/internal/textdist"
)

// suggest returns the candidate closest to word, ignoring case: within an
// edit distance of 1 for words of up to four letters and 2 for longer ones,
// or one being a prefix of the other (of at least two letters).
func suggest(word string, candidates []string) (string, bool) {
	w := strings.ToLower(word)
	maxDist := 2
	if utf8.RuneCountInString(w) <= 4 {
		maxDist = 1
	}
	best, bestScore := "", maxDist+2
	for _, c := range candidates {
		score := textdist.Distance(w, c)
		if score > maxDist {
			if len(w) < 2 || len(c) < 2 || !strings.HasPrefix(c, w) && !strings.HasPrefix(w, c) {
				continue
			}
			score = maxDist + 1
		}
		if score < bestScore {
			best, bestScore = c, score
		}
	}
	return best, best != ""
}
