package boltstore_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/longtermtest"
)

func TestFactsConformance(t *testing.T) {
	longtermtest.Run(t, func(t *testing.T, o longtermtest.Options) longterm.Store {
		s, err := boltstore.Open(filepath.Join(t.TempDir(), "chat.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f, err := s.Facts(&boltstore.FactsOptions{Limits: o.Limits, Retention: o.Retention})
		if err != nil {
			t.Fatal(err)
		}
		return f
	})
}

// Facts outlive the conversations' TTL and a reopening of the file;
// Sweep deletes those past their own retention.
func TestFactsDurableAndSwept(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.db")
	s, err := boltstore.Open(path, &boltstore.Options{TTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Facts(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Put(t.Context(), "ana", longterm.Fact{ID: "1", Text: "The user's name is Ana."}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f, err = s.Facts(&boltstore.FactsOptions{Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.Get(t.Context(), "ana", "1"); err != nil || got.Text != "The user's name is Ana." {
		t.Fatalf("after reopening: %+v, %v", got, err)
	}
	if n, err := f.Sweep(); err != nil || n != 0 {
		t.Fatalf("Sweep within retention = %d, %v", n, err)
	}
	short, err := s.Facts(&boltstore.FactsOptions{Retention: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := short.Sweep(); err != nil || n != 1 {
		t.Fatalf("Sweep past retention = %d, %v", n, err)
	}
	if facts, _, _ := f.List(t.Context(), "ana"); len(facts) != 0 {
		t.Fatal("swept facts are still listed")
	}
}
