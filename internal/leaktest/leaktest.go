// Package leaktest checks, for the project's own tests, that a test
// leaves no goroutine behind.
package leaktest

import (
	"runtime"
	"testing"
	"time"
)

// Check fails t if goroutines started during it are still running when it
// ends, allowing them ten seconds to finish; the failure lists every
// goroutine's stack.
func Check(t testing.TB) {
	t.Helper()
	check(t, 10*time.Second)
}

func check(t testing.TB, wait time.Duration) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(wait)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutines: %d before the test, %d after it:\n%s", before, n, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
