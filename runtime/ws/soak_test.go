package ws

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSoak opens and closes 10,000 sessions (with a turn each) on
// connections that are themselves opened and closed, from 8 clients at a
// time, within a time bound; afterwards the goroutines, the heap and the
// router must be back to their baseline.
func TestSoak(t *testing.T) {
	const (
		total      = 10_000
		workers    = 8
		perConn    = 50 // sessions per connection before it is closed
		timeBudget = 40 * time.Second
	)
	router := echoRouter(t)
	ts := startServerFor(t, router, nil, nil)
	ctx := context.Background()

	soak := func(n int, deadline time.Time) int64 {
		var done atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for done.Load() < int64(n) && time.Now().Before(deadline) {
					c, err := Dial(ctx, ts.url, &DialOptions{Logger: quietLogger()})
					if err != nil {
						t.Error(err)
						return
					}
					for range perConn {
						s, err := c.Builder().Connect(ctx, "")
						if err != nil {
							t.Error(err)
							break
						}
						if err := s.Chat(ctx, "soak"); err != nil {
							t.Error(err)
						}
						if err := s.Close(); err != nil {
							t.Error(err)
						}
						if done.Add(1) >= int64(n) {
							break
						}
					}
					if err := c.Close(); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		return done.Load()
	}

	soak(200, time.Now().Add(timeBudget)) // warm up pools and lazily built state
	waitNoConversations(t, router)
	heap0, _, g0 := measure()

	start := time.Now()
	n := soak(total, start.Add(timeBudget))
	elapsed := time.Since(start)
	if t.Failed() {
		return
	}
	if n < total {
		t.Logf("time budget reached: %d sessions in %v", n, elapsed)
	}
	waitNoConversations(t, router)
	deadline := time.Now().Add(10 * time.Second)
	for ts.Connections() != 0 || runtime.NumGoroutine() > g0 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("after the soak: %d connections, %d goroutines (baseline %d); all goroutines:\n%s",
				ts.Connections(), runtime.NumGoroutine(), g0, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
	heap1, _, g1 := measure()
	growth := int64(heap1) - int64(heap0)
	t.Logf("%d sessions (%d connections) in %v: %.0f sessions/s; goroutines %d -> %d; heap %d KiB -> %d KiB",
		n, (n+perConn-1)/perConn, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), g0, g1, heap0>>10, heap1>>10)
	if growth > 1<<20 {
		t.Errorf("the heap grew by %d KiB", growth>>10)
	}
}
