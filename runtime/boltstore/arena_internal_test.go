package boltstore

import (
	"bytes"
	"testing"
)

// TestArena fills slices from an arena past its first buffer: none
// overlaps another, each holds what was written to it until reset, and
// the buffer is reused after reset. A nil arena allocates.
func TestArena(t *testing.T) {
	var a arena
	var got [][]byte
	for i := range 200 {
		n := 1 + i*97%2000
		b := a.alloc(n)
		if len(b) != 0 || cap(b) != n {
			t.Fatalf("alloc(%d): len %d, cap %d", n, len(b), cap(b))
		}
		got = append(got, append(b, bytes.Repeat([]byte{byte(i)}, n)...))
	}
	for i, b := range got {
		if !bytes.Equal(b, bytes.Repeat([]byte{byte(i)}, len(b))) {
			t.Fatalf("slice %d was overwritten", i)
		}
	}
	size := cap(a.buf)
	a.reset()
	if b := a.alloc(10); cap(a.buf) != size || len(a.buf) != 10 || cap(b) != 10 {
		t.Fatalf("after reset: a buffer of %d (was %d), %d used", cap(a.buf), size, len(a.buf))
	}
	var none *arena
	if b := none.alloc(5); len(b) != 0 || cap(b) != 5 {
		t.Fatalf("nil arena: len %d, cap %d", len(b), cap(b))
	}
}
