package main

import (
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

// TestRun moves a memory written in the old layout and finds it in the
// store's.
func TestRun(t *testing.T) {
	ctx := t.Context()
	c := redistest.Client(t)
	old := redistest.Prefix(t, c, "chatgen-test")
	prefix := redistest.Prefix(t, c, "chatgen-test")
	if err := c.RPush(ctx, old+"mem:m", `{"role":"human","text":"hello"}`).Err(); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, c, prefix, old, time.Hour); err != nil {
		t.Fatal(err)
	}
	s, err := redisstore.New(c, &redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.Memories().IDs(ctx)
	if err != nil || len(ids) != 1 || ids[0] != "m" {
		t.Fatalf("memories after the migration: %q, %v", ids, err)
	}
	if keys := redistest.Keys(t, c, old); len(keys) != 0 {
		t.Fatalf("keys left in the old layout: %q", keys)
	}
	if err := run(ctx, c, "{bad}:", old, 0); err == nil {
		t.Fatal("a prefix with a hash tag was accepted")
	}
}
