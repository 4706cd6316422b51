package recall_test

import (
	"fmt"
	"testing"

	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/recall"
)

// words make the facts of the benchmarks differ.
var words = []string{"sword", "axe", "bow", "crossbow", "spear", "mace", "dagger", "shield", "helm", "staff",
	"iron", "steel", "mithril", "bronze", "silver", "gold", "oak", "yew", "ash", "bone",
	"fire", "frost", "storm", "venom", "light", "shadow", "north", "south", "river", "mountain"}

func factText(i int) string {
	w := func(k int) string { return words[(i/k)%len(words)] }
	return fmt.Sprintf("The user once asked for a %s of %s with a %s enchantment near the %s, order %d.", w(1), w(7), w(31), w(211), i)
}

// BenchmarkRecall10k: one recall over the 10,000 facts of one principal
// (the default cap), once its index is built: the revision check and the
// BM25 search of the turn's message.
func BenchmarkRecall10k(b *testing.B) {
	store := longterm.NewMemStore(nil)
	batch := make([]longterm.Fact, longterm.DefaultMaxFacts)
	for i := range batch {
		batch[i] = longterm.Fact{ID: fmt.Sprint(i), Text: factText(i)}
	}
	if _, err := store.Put(b.Context(), "ana", batch...); err != nil {
		b.Fatal(err)
	}
	m := recall.New(store, nil)
	if _, err := m.Search(b.Context(), "ana", "warm up", 5); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		facts, err := m.Search(b.Context(), "ana", "Can you make me a mithril crossbow with a frost enchantment?", recall.DefaultMaxRecall)
		if err != nil || len(facts) == 0 {
			b.Fatalf("%d facts, %v", len(facts), err)
		}
	}
	if n := m.Stats().IndexBuilds; n != 1 {
		b.Fatalf("%d index builds", n)
	}
}

// BenchmarkIndexBuild10k: building the index of 10,000 facts, as the
// first turn of a principal does.
func BenchmarkIndexBuild10k(b *testing.B) {
	store := longterm.NewMemStore(nil)
	batch := make([]longterm.Fact, longterm.DefaultMaxFacts)
	for i := range batch {
		batch[i] = longterm.Fact{ID: fmt.Sprint(i), Text: factText(i)}
	}
	if _, err := store.Put(b.Context(), "ana", batch...); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		m := recall.New(store, nil)
		if _, err := m.Search(b.Context(), "ana", "mithril crossbow", 5); err != nil {
			b.Fatal(err)
		}
	}
}
