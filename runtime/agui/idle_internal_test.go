package agui

import (
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// TestIdleTimerFiringAsARunEnds fires a thread's idle timer while the run
// that armed it still holds the thread (a loaded machine, a short
// ThreadTimeout): the thread still ends once the run lets go of it.
func TestIdleTimerFiringAsARunEnds(t *testing.T) {
	r, err := chat.NewRouter(nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(r, &Options{ThreadTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	th := &thread{id: "t"}
	h.threads[th.id] = th

	th.mu.Lock() // the run
	h.idle(th)
	gen := th.idleGen
	th.timer.Stop()
	fired := make(chan struct{})
	go func() { h.endThread(th, gen); close(fired) }() // the timer, early
	time.Sleep(20 * time.Millisecond)
	th.mu.Unlock() // the run returns
	<-fired
	if n := h.Threads(); n != 0 {
		t.Fatalf("%d threads after their idle timer fired", n)
	}

	// A timer armed before a later run does not end the thread that run
	// keeps.
	th2 := &thread{id: "t2"}
	h.threads[th2.id] = th2
	th2.mu.Lock()
	h.idle(th2)
	old := th2.idleGen
	th2.timer.Stop()
	th2.idleGen++ // the next run begins
	th2.mu.Unlock()
	h.endThread(th2, old)
	if n := h.Threads(); n != 1 || th2.ended {
		t.Fatalf("a stale timer ended the thread (%d threads, ended %v)", n, th2.ended)
	}
}
