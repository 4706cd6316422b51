package leaktest

import (
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records errors and runs cleanups on demand.
type recorder struct {
	testing.TB
	errs     []string
	cleanups []func()
}

func (r *recorder) Helper()                   {}
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, f) }

func (r *recorder) finish() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestCheckPassesWhenGoroutinesEnd(t *testing.T) {
	r := &recorder{TB: t}
	Check(r)
	done := make(chan struct{})
	go func() { <-done }()
	close(done)
	r.finish()
	if len(r.errs) != 0 {
		t.Fatalf("errors: %v", r.errs)
	}
}

func TestCheckFailsOnALeak(t *testing.T) {
	// The goroutine of the test before may still be ending: a count taken
	// while it does would hide one leaked goroutine, so this leaks five.
	r := &recorder{TB: t}
	check(r, 50*time.Millisecond)
	stop := make(chan struct{})
	for range 5 {
		go func() { <-stop }()
	}
	r.finish()
	close(stop)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "goroutines") {
		t.Fatalf("errors: %v", r.errs)
	}
}
