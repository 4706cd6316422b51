package chat

// stackHold is how much of its stack a request's goroutine keeps in use
// while it waits for its save: see holdStack.
const stackHold = 4 << 10

// holdStack calls save under a frame of stackHold bytes.
//
// A request's goroutine has just run its route (a model's client, JSON,
// tools) and its stack grew to fit; then it waits for its save a few
// frames deep. A garbage collection that finds a goroutine waiting with
// less than a quarter of its stack in use halves that stack, copying it,
// and the next request grows it back, copying it again. A save that waits
// for a group commit or a round trip is where a busy node's goroutines
// spend most of their waits, so without the hold most collections halved
// about every stack. With stackHold bytes in use during the wait, a stack
// of up to four times that keeps its size.
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
