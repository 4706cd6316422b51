package knowledge

import (
	"slices"
	"testing"
)

func TestTerms(t *testing.T) {
	got := terms("The smiths FORGED a dragon's scale — and 3 swords, forging 10 of them!")
	want := []string{"smith", "forg", "dragon", "scal", "3", "sword", "forg", "10"}
	if !slices.Equal(got, want) {
		t.Fatalf("terms = %q, want %q", got, want)
	}
}

func TestStem(t *testing.T) {
	for _, tc := range [][]string{
		{"forge", "forg"}, {"forges", "forg"}, {"forged", "forg"}, {"forging", "forg"},
		{"stories", "story"}, {"glasses", "glass"}, {"runes", "run"}, {"quickly", "quick"},
		{"running", "run"}, {"staffs", "staf"}, {"spell", "spell"}, {"wedding", "wed"},
		// too short or no vowel left: unchanged
		{"sing", "sing"}, {"bed", "bed"}, {"string", "string"}, {"is", "is"}, {"us", "us"},
		{"bus", "bus"}, {"bless", "bless"},
		// not a to z: unchanged
		{"forgé", "forgé"}, {"42s", "42s"},
	} {
		if got := stem(tc[0]); got != tc[1] {
			t.Errorf("stem(%q) = %q, want %q", tc[0], got, tc[1])
		}
	}
}

func TestBM25(t *testing.T) {
	x := newBM25(DefaultK1, DefaultB)
	x.add(terms("iron iron iron sword"))          // 0: iron three times
	x.add(terms("iron sword"))                    // 1: iron once, short
	x.add(terms("mithril sword"))                 // 2: rare term
	x.add(terms("iron " + longFiller + " sword")) // 3: iron once, long
	s := x.scores(terms("iron"))
	if !(s[0] > s[1] && s[1] > s[3] && s[2] == 0) {
		t.Errorf("iron: scores %v, want tf to raise and length to lower the score, and 0 without the term", s)
	}
	s = x.scores(terms("mithril sword"))
	if !(s[2] > s[1]) {
		t.Errorf("mithril sword: scores %v, want the rare term to weigh more", s)
	}
	if s := x.scores(terms("sword")); s[0] <= 0 {
		t.Errorf("a term in every passage scores %v, want a small positive score (Lucene's idf)", s)
	}
	if got := x.scores(terms("iron iron")); got[1] != x.scores(terms("iron"))[1] {
		t.Errorf("a repeated query term counts twice")
	}
	if got := newBM25(1, 1).scores([]string{"x"}); len(got) != 0 {
		t.Errorf("empty index scores %v", got)
	}
}

// longFiller is a run of words that lengthens a passage.
const longFiller = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda"
