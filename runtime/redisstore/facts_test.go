package redisstore_test

import (
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/longtermtest"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

func newFacts(t *testing.T, o longtermtest.Options, rt *redistest.RoundTrips) (*redisstore.Facts, string) {
	c := redistest.Client(t)
	if rt != nil {
		c.AddHook(rt)
	}
	s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(t, c, "chatgen-test")})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Facts(&redisstore.FactsOptions{Limits: o.Limits, Retention: o.Retention})
	if err != nil {
		t.Fatal(err)
	}
	return f, s.Prefix()
}

func TestFactsConformance(t *testing.T) {
	longtermtest.Run(t, func(t *testing.T, o longtermtest.Options) longterm.Store {
		f, _ := newFacts(t, o, nil)
		return f
	})
}

// Reading a revision is one round trip; a principal's facts are one key,
// and DeleteAll leaves none.
func TestFactsRoundTripsAndKeys(t *testing.T) {
	var rt redistest.RoundTrips
	f, prefix := newFacts(t, longtermtest.Options{}, &rt)
	ctx := t.Context()
	name := "ana/{x}*" + strings.Repeat("é", 3000)
	if _, err := f.Put(ctx, name, longterm.Fact{ID: "1", Text: "The user's name is Ana."}); err != nil {
		t.Fatal(err)
	}
	rt.Reset()
	if _, err := f.Revision(ctx, name); err != nil {
		t.Fatal(err)
	}
	if n := rt.N(); n != 1 {
		t.Fatalf("Revision took %d round trips", n)
	}
	c := redistest.Client(t)
	if ks := redistest.Keys(t, c, prefix); len(ks) != 1 || len(ks[0]) > len(prefix)+80 {
		t.Fatalf("keys of one principal: %q", ks)
	}
	if err := f.DeleteAll(ctx, name); err != nil {
		t.Fatal(err)
	}
	if ks := redistest.Keys(t, c, prefix); len(ks) != 0 {
		t.Fatalf("DeleteAll left keys %q", ks)
	}
}
