package pgstore_test

import (
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/longtermtest"
	"github.com/chatscopes/chatgen/runtime/pgstore"
)

func TestFactsConformance(t *testing.T) {
	longtermtest.Run(t, func(t *testing.T, o longtermtest.Options) longterm.Store {
		s := migrated(t, pgtest.Pool(t, nil), nil)
		f, err := s.Facts(&pgstore.FactsOptions{Limits: o.Limits, Retention: o.Retention})
		if err != nil {
			t.Fatal(err)
		}
		return f
	})
}

// Revision is one round trip (once pgx has prepared its statement); Sweep deletes the principals past their
// retention, and only those.
func TestFactsRoundTripAndSweep(t *testing.T) {
	var rt pgtest.RoundTrips
	pool := pgtest.Pool(t, &rt)
	s := migrated(t, pool, nil)
	f, err := s.Facts(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := f.Put(ctx, "ana", longterm.Fact{ID: "1", Text: "The user's name is Ana."}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Revision(ctx, "ana"); err != nil { // pgx prepares the statement
		t.Fatal(err)
	}
	before := rt.N()
	if _, err := f.Revision(ctx, "ana"); err != nil {
		t.Fatal(err)
	}
	if n := rt.N() - before; n != 1 {
		t.Fatalf("Revision took %d round trips", n)
	}
	long, _ := s.Facts(&pgstore.FactsOptions{Retention: time.Hour})
	if n, err := long.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("Sweep within retention = %d, %v", n, err)
	}
	short, _ := s.Facts(&pgstore.FactsOptions{Retention: time.Microsecond})
	if n, err := short.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("Sweep past retention = %d, %v", n, err)
	}
	if facts, _, _ := f.List(ctx, "ana"); len(facts) != 0 {
		t.Fatal("swept facts are listed")
	}
}
