package chat

// stackHold is how much of its stack a request's goroutine keeps in use
// while it waits for its save: see holdStack.
const stackHold = 4 << 10

// holdStack calls save under a frame of stackHold bytes.
//
// A request's goroutine has just run its route (a model's client, JSON,
// tools) and its stack grew to fit; then it waits for its save a few
// frames deep. A garbage collection that finds a goroutine waiting with
// less than a quarter of its stack in use halves that stack, copying it
// (the runtime's shrinkstack), and the next request grows it back,
// copying it again. On a node under load with a local store, the save
// (a group commit's fsync) is where most requests wait, so without the
// hold most collections halved about every stack: runtime.copystack was
// 14% of the CPU with 1,000 conversations over bbolt (docs/numbers.md,
// "Durable turns"). With stackHold bytes in use during the wait, a stack
// of up to four times what is in use keeps its size: 16 KiB always,
// 32 KiB when the wait is itself 4 KiB deep. The frame holds no pointers,
// so the collector does not scan it; it costs a 4 KiB clear a save.
//
//go:noinline
func holdStack(save func() error) error {
	var hold [stackHold]byte
	return keepStack(hold[:], save())
}

// keepStack returns err; hold stays in use until save has returned.
//
//go:noinline
func keepStack(hold []byte, err error) error { _ = hold; return err }
