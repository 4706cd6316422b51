package chat

import (
	"runtime"
	"testing"
	"unsafe"
)

// TestHoldStackKeepsAGrownStack: a goroutine whose stack grew, then waits
// for its save in holdStack while the garbage collector runs, keeps its
// stack where it is; the same goroutine waiting without the hold has its
// stack halved, which moves it.
func TestHoldStackKeepsAGrownStack(t *testing.T) {
	if !stackMovesWhileWaiting(false) {
		t.Skip("this runtime does not shrink the stack of a waiting goroutine (GODEBUG=gcshrinkstackoff=1?)")
	}
	for range 3 {
		if stackMovesWhileWaiting(true) {
			t.Fatal("the stack of a goroutine waiting in holdStack was moved by the garbage collector")
		}
	}
}

// stackMovesWhileWaiting grows a goroutine's stack to 16 KiB, as a route
// does, then has it wait (in holdStack if hold) through garbage
// collections, and reports whether its stack moved meanwhile.
func stackMovesWhileWaiting(hold bool) bool {
	parked, release, resumed := make(chan uintptr), make(chan struct{}), make(chan uintptr)
	go func() {
		growStack(40) // 40 frames of 256 bytes: a 16 KiB stack
		wait := func() error {
			var here byte
			parked <- uintptr(unsafe.Pointer(&here))
			<-release
			resumed <- uintptr(unsafe.Pointer(&here))
			return nil
		}
		if hold {
			_ = holdStack(wait)
		} else {
			_ = wait()
		}
	}()
	before := <-parked
	for range 3 {
		runtime.GC()
	}
	close(release)
	return <-resumed != before
}

// growStack recurses n frames of 256 bytes deep.
//
//go:noinline
func growStack(n int) byte {
	var frame [256]byte
	frame[n%len(frame)] = byte(n)
	if n > 0 {
		frame[0] += growStack(n - 1)
	}
	return frame[0]
}
