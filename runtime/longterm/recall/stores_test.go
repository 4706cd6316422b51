package recall_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/recall"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

// factStore is a store of the project with the count of its round trips
// (for bbolt: of its transactions).
type factStore struct {
	name  string
	store longterm.Store
	trips func() int64
}

func factStores(t *testing.T) []factStore { return benchStores(t) }

func benchStores(t testing.TB) []factStore {
	t.Helper()
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "chat.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	bf, err := bs.Facts(nil)
	if err != nil {
		t.Fatal(err)
	}
	bolt := &countingStore{Store: bf} // each call of boltstore.Facts is one transaction

	var rrt redistest.RoundTrips
	rc := redistest.Client(t)
	rc.AddHook(&rrt)
	rs, err := redisstore.New(rc, &redisstore.Options{Prefix: redistest.Prefix(t, rc, "chatgen-test")})
	if err != nil {
		t.Fatal(err)
	}
	rf, err := rs.Facts(nil)
	if err != nil {
		t.Fatal(err)
	}

	var prt pgtest.RoundTrips
	pool := pgtest.Pool(t, &prt)
	if _, err := pgstore.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	ps, err := pgstore.New(t.Context(), pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	pf, err := ps.Facts(nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := &countingStore{Store: longterm.NewMemStore(nil)}
	return []factStore{
		{"memory", mem, mem.calls.Load},
		{"bbolt", bolt, bolt.calls.Load},
		{"redis", rf, rrt.N},
		{"postgres", pf, prt.N},
	}
}

// On every store: with nothing to recall and nothing learnt, a turn adds
// one round trip (one read transaction on bbolt); facts told in one
// conversation are recalled in another of the same principal only; the
// principal's facts are listed, edited, deleted and forgotten in one call
// each.
func TestStores(t *testing.T) {
	for _, fs := range factStores(t) {
		t.Run(fs.name, func(t *testing.T) {
			f := newFixture(t, fs.store, nil, nil)
			ctx := conversation(t, ana)
			f.say(ctx, "Hello") // the first turn: scripts and statements get prepared
			for i := range 2 {
				before := fs.trips()
				f.say(ctx, "Tell me about swords")
				if n := fs.trips() - before; n != 1 {
					t.Fatalf("turn %d with nothing to recall made %d round trips, want 1", i, n)
				}
			}
			odd := chat.User{ID: "ana/../" + strings.Repeat("ü", 2000)}
			f.say(conversation(t, odd), "My sword is named Dawn.")
			f.say(conversation(t, odd), "What is my sword named?")
			if !strings.Contains(f.lastChat().LastUserText(), "Dawn") {
				t.Fatal("the fact was not recalled in the next conversation")
			}
			f.say(ctx, "What is my sword named?")
			if strings.Contains(f.lastChat().LastUserText(), "Dawn") {
				t.Fatal("another principal was sent the fact")
			}
			facts, err := f.mem.List(t.Context(), odd.ID)
			if err != nil || len(facts) != 1 {
				t.Fatalf("List = %+v, %v", facts, err)
			}
			if err := f.mem.Edit(t.Context(), odd.ID, facts[0].ID, "The user's sword is named Dusk."); err != nil {
				t.Fatal(err)
			}
			f.say(conversation(t, odd), "What is my sword named?")
			if last := f.lastChat().LastUserText(); !strings.Contains(last, "Dusk") || strings.Contains(last, "Dawn") {
				t.Fatalf("after Edit:\n%s", last)
			}
			if err := f.mem.Forget(t.Context(), odd.ID); err != nil {
				t.Fatal(err)
			}
			f.say(conversation(t, odd), "What is my sword named?")
			if strings.Contains(f.lastChat().LastUserText(), "<facts>") {
				t.Fatal("facts recalled after Forget")
			}
		})
	}
}

// BenchmarkRecall10kStores: a recall over the 10,000 facts of one
// principal once indexed, on each store: the revision read (a round trip
// on Redis and PostgreSQL) and the search.
func BenchmarkRecall10kStores(b *testing.B) {
	batch := make([]longterm.Fact, longterm.DefaultMaxFacts)
	for i := range batch {
		batch[i] = longterm.Fact{ID: fmt.Sprint(i), Text: factText(i)}
	}
	for _, fs := range benchStores(b) {
		b.Run(fs.name, func(b *testing.B) {
			if _, err := fs.store.Put(b.Context(), "ana", batch...); err != nil {
				b.Fatal(err)
			}
			m := recall.New(fs.store, nil)
			if _, err := m.Search(b.Context(), "ana", "warm up", 5); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				facts, err := m.Search(b.Context(), "ana", "Can you make me a mithril crossbow with a frost enchantment?", recall.DefaultMaxRecall)
				if err != nil || len(facts) == 0 {
					b.Fatalf("%d facts, %v", len(facts), err)
				}
			}
			if n := m.Stats().IndexBuilds; n != 1 {
				b.Fatalf("%d index builds", n)
			}
		})
	}
}
