package memory

import "testing"

// The summarizer's call of a warm fold is billed in the turn of the fold,
// before the next turn saves anything: with OpenAI's prices (no write
// premium) the smaller prompt's first turn costs less than the kept one's,
// so the fold's own turn is its dearest, and the guard must hold there
// too.
func TestFoldGuardAtTheFoldsTurn(t *testing.T) {
	k := &TokenCosts{Input: 2.5, CacheWrite: 2.5, CacheRead: 1.25, Output: 10}
	plan := foldPlan{keep: 10000, fold: 1500, summary: 400, sumInput: 10000, reuse: true, trigger: 2400}
	// The fold's call: 10,000 tokens read at 1.25, 400 written at 10;
	// the next turn sends 1,500 tokens at 2.5 instead of reading 10,000
	// at 1.25: 16,500 now, 7,750 after the next turn at worst.
	for _, c := range []struct {
		bill float64
		want bool
	}{
		{500_000, false}, // 7,750 fits within 2% of it, 16,500 does not
		{900_000, true},
	} {
		a := foldAccount{turns: 100, gaps: 99, full: 10000, own: c.bill, shadow: c.bill}
		if got := a.pays(k, plan, false); got != c.want {
			t.Errorf("bill %.0f: pays %v, want %v", c.bill, got, c.want)
		}
	}
}
