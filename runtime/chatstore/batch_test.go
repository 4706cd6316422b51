package chatstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chatstore"
)

func TestBatchKeepsFirstWriteOrderAndLastValue(t *testing.T) {
	b := chatstore.NewBatch()
	b.Put("m1", []byte("a"))
	b.Put("m2", []byte("b"))
	b.Put("m1", nil) // a deletion replaces the value, keeps the place
	b.Put("m3", []byte{})

	if b.Len() != 3 {
		t.Fatalf("Len = %d, want 3", b.Len())
	}
	var got []string
	b.All(func(key string, value []byte) {
		got = append(got, fmt.Sprintf("%s=%q/%t", key, value, value == nil))
	})
	want := []string{`m1=""/true`, `m2="b"/false`, `m3=""/false`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("All = %v, want %v", got, want)
	}
	if v, ok := b.Get("m1"); !ok || v != nil {
		t.Fatalf("Get(m1) = %q, %t: want a staged deletion", v, ok)
	}
	if _, ok := b.Get("nope"); ok {
		t.Fatal("Get of a key never written reports it staged")
	}
}

func TestBatchCopiesValues(t *testing.T) {
	b := chatstore.NewBatch()
	v := []byte("abc")
	b.Put("k", v)
	v[0] = 'X'
	got, _ := b.Get("k")
	if string(got) != "abc" {
		t.Fatalf("the batch shares the caller's slice: %q", got)
	}
	got[0] = 'Y'
	again, _ := b.Get("k")
	if string(again) != "abc" {
		t.Fatalf("Get hands out the batch's own slice: %q", again)
	}
}

func TestBatchIsSafeForConcurrentUse(t *testing.T) {
	b := chatstore.NewBatch()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				b.Put(fmt.Sprintf("k%d", j%10), []byte{byte(i)})
				b.Get("k1")
				b.Len()
			}
		})
	}
	wg.Wait()
	if b.Len() != 10 {
		t.Fatalf("Len = %d, want 10", b.Len())
	}
}

func TestBatchInContext(t *testing.T) {
	ctx := context.Background()
	if chatstore.BatchFrom(ctx) != nil {
		t.Fatal("BatchFrom of a context without a batch is not nil")
	}
	b := chatstore.NewBatch()
	if chatstore.BatchFrom(chatstore.WithBatch(ctx, b)) != b {
		t.Fatal("BatchFrom does not return the batch WithBatch put in")
	}
}

func TestBatchSnapshotForget(t *testing.T) {
	b := chatstore.NewBatch()
	b.Put("kept", []byte("a"))
	b.Put("rewritten", []byte("b"))
	b.Put("deleted", nil)
	s := b.Snapshot()
	b.Put("rewritten", []byte("b2")) // after the snapshot: stays
	b.Put("new", []byte("c"))        // after the snapshot: stays
	if s.Len() != 3 {
		t.Fatalf("snapshot Len = %d, want 3", s.Len())
	}
	b.Forget(s)
	var got []string
	b.All(func(key string, value []byte) { got = append(got, key+"="+string(value)) })
	if want := []string{"rewritten=b2", "new=c"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after Forget: %v, want %v", got, want)
	}
	if _, ok := b.Get("kept"); ok {
		t.Fatal("a committed write is still staged")
	}
}
