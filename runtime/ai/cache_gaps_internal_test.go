package ai

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
)

// TestCacheGapsOdds: the odds of a memory's next request coming within
// the TTL are the share of the gaps seen within it, this one included,
// with one of each assumed; ½ for an id never seen.
func TestCacheGapsOdds(t *testing.T) {
	var g cacheGaps
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	ttl := 5 * time.Minute
	if v := g.view("m", t0, ttl); v.known || v.odds != 0.5 {
		t.Fatalf("unseen id: %+v", v)
	}
	end := t0
	for i, gap := range []time.Duration{0, time.Minute, time.Hour, time.Hour} {
		start := end.Add(gap)
		v := g.view("m", start, ttl)
		if i > 0 && (!v.known || v.warm != (gap <= ttl)) {
			t.Fatalf("turn %d after %v: %+v", i+1, gap, v)
		}
		end = start.Add(time.Second)
		g.record("m", end, v, true)
	}
	// Gaps seen: 1 min, 1 h, 1 h; this one 1 min: (2+1)/(4+2).
	if v := g.view("m", end.Add(time.Minute), ttl); v.odds != 0.5 || !v.marked {
		t.Fatalf("after 1 warm and 2 cold gaps, warm now: %+v, want odds ½", v)
	}
	g.forget("m")
	if g.len() != 0 {
		t.Fatalf("%d ids after forget", g.len())
	}
}

// TestCacheGapsFollowThePace: the counts are halved every maxGapCount
// gaps, so that after 200 gaps over the TTL, 25 within it bring the odds
// back over markOdds.
func TestCacheGapsFollowThePace(t *testing.T) {
	var g cacheGaps
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	ttl := 5 * time.Minute
	turn := func(gap time.Duration) cacheView {
		now = now.Add(gap)
		v := g.view("m", now, ttl)
		g.record("m", now, v, true)
		return v
	}
	for range 200 {
		turn(time.Hour)
	}
	if v := turn(time.Hour); v.odds >= markOdds {
		t.Fatalf("after 200 gaps of an hour: odds %.3f", v.odds)
	}
	var v cacheView
	for range 25 {
		v = turn(time.Minute)
	}
	if v.odds < markOdds {
		t.Fatalf("after 25 gaps of a minute: odds %.3f, under %.3f", v.odds, markOdds)
	}
}

// TestCacheGapsBounded: past maxCacheGaps ids, the record drops the half
// idle longest and keeps the newest.
func TestCacheGapsBounded(t *testing.T) {
	var g cacheGaps
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for i := range maxCacheGaps + 1 {
		g.record(fmt.Sprint(i), t0.Add(time.Duration(i)*time.Second), cacheView{}, true)
	}
	if n := g.len(); n > maxCacheGaps/2+1 || n == 0 {
		t.Fatalf("%d ids recorded, want at most %d", n, maxCacheGaps/2+1)
	}
	if v := g.view(fmt.Sprint(maxCacheGaps), t0, time.Minute); !v.known {
		t.Fatal("the newest id was dropped")
	}
	if v := g.view("0", t0, time.Minute); v.known {
		t.Fatal("the oldest id was kept")
	}
}

// TestCacheGapsForgotten: a memory deleted with its scope, or released
// from the process, leaves no record of its gaps.
func TestCacheGapsForgotten(t *testing.T) {
	srv := llmtest.NewAnthropicServer(llmtest.Rules().WithFallback(llmtest.Reply{Text: "Noted."}), nil)
	t.Cleanup(srv.Close)
	llm, err := llmclient.Anthropic(srv)
	if err != nil {
		t.Fatal(err)
	}
	s := NewService("example.com/app.Assistant", &Config{Model: llm, Logger: slog.New(slog.DiscardHandler)})
	m := &Method{Name: "Ask"}
	for _, end := range []func(*memState) error{
		func(st *memState) error { return st.DeleteMemory(context.Background()) },
		func(st *memState) error { return st.ReleaseMemory(context.Background()) },
	} {
		if _, err := s.Chat(context.Background(), &Request{Method: m, MemoryID: "m", User: "hi"}); err != nil {
			t.Fatal(err)
		}
		if n := s.gaps.len(); n != 1 {
			t.Fatalf("%d ids recorded after a turn, want 1", n)
		}
		if err := end(&memState{svc: s, id: "m", turn: make(chan struct{}, 1)}); err != nil {
			t.Fatal(err)
		}
		if n := s.gaps.len(); n != 0 {
			t.Fatalf("%d ids recorded after the memory ended, want 0", n)
		}
	}
}
