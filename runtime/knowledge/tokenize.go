package knowledge

import (
	"strings"
	"unicode"
)

// terms splits text into the terms the lexical index counts: runs of
// letters and digits, lower-cased, without English stop words and
// one-letter words, each reduced by stem. Queries and documents go through
// the same function, so "forged" finds "forge".
func terms(text string) []string {
	var out []string
	for w := range strings.FieldsFuncSeq(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if stopWords[w] || len(w) == 1 && !unicode.IsDigit(rune(w[0])) {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// stem reduces an English word to a stem with a few suffix rules (a
// light stemmer, not Porter's): plurals, -ed, -ing and -ly go, then a
// final e and a doubled final consonant, so that forge, forges, forged and
// forging share the stem "forg". A rule applies only when at least three
// letters including a vowel remain, so that "sing", "bed" and "string"
// stay whole. Words with other letters than a to z are left as they are.
func stem(w string) string {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	switch {
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") &&
		!strings.HasSuffix(w, "is") && len(w) > 3:
		w = w[:len(w)-1]
	}
	for _, suf := range []string{"ing", "ed", "ly"} {
		if s, ok := strings.CutSuffix(w, suf); ok && len(s) >= 3 && hasVowel(s) {
			w = s
			break
		}
	}
	if s, ok := strings.CutSuffix(w, "e"); ok && len(s) >= 3 && hasVowel(s) {
		w = s
	}
	if n := len(w); n >= 4 && w[n-1] == w[n-2] && !isVowel(w[n-1]) && w[n-1] != 's' && w[n-1] != 'l' {
		w = w[:n-1]
	}
	return w
}

// hasVowel reports whether s holds a, e, i, o, u or y.
func hasVowel(s string) bool { return strings.ContainsAny(s, "aeiouy") }

// isVowel reports whether c is a, e, i, o or u.
func isVowel(c byte) bool { return strings.IndexByte("aeiou", c) >= 0 }

// stopWords are English words too common to tell passages apart.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for w := range strings.FieldsSeq(`a about above after again against all am an and any are as at be because been
		before being below between both but by can could did do does doing down during each few for from further
		had has have having he her here hers herself him himself his how i if in into is it its itself just me
		more most my myself no nor not now of off on once only or other our ours ourselves out over own same she
		should so some such than that the their theirs them themselves then there these they this those through
		to too under until up very was we were what when where which while who whom why will with would you your
		yours yourself yourselves tell told know say said does did`) {
		m[w] = true
	}
	return m
}()
