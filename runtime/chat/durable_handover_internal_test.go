package chat

import (
	"sync"
	"testing"
)

func TestConvLocksSerialiseAndForget(t *testing.T) {
	var l convLocks
	var wg sync.WaitGroup
	n := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				unlock := l.lock("c")
				n++ // the race detector fails the test if two hold "c"
				unlock()
				l.lock("other")()
			}
		}()
	}
	wg.Wait()
	if n != 800 {
		t.Fatalf("n = %d, want 800", n)
	}
	if got := l.size(); got != 0 {
		t.Fatalf("%d ids left in the map, want none", got)
	}
}
