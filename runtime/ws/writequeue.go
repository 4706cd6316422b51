package ws

import "sync"

// A frameWriter writes frames to a websocket for a [writeQueue].
type frameWriter interface {
	// writeFrames writes a batch of frames, in order. An error stops the
	// queue: the frames still queued are dropped.
	writeFrames(batch [][]byte) error
	// dropFrame frees a frame that will not be written.
	dropFrame(b []byte)
}

// handoffRounds is the number of batches a goroutine writes for others
// before it hands the writing to a new goroutine, so that a route's
// goroutine does not write for the other sessions of a busy connection
// forever (fairness: it bounds the p99 latency of BenchmarkLoad's turns
// rather than their throughput).
const handoffRounds = 32

// writeQueue orders the frames written to one websocket without a writer
// goroutine: whoever queues frames while no one is writing becomes the
// writer and writes, in batches, every frame queued until the queue is
// empty. Frames never interleave, an idle connection costs no goroutine,
// and frames queued together go out together (one TCP write when the
// frameWriter corks them). The server and the client each have one per
// connection.
type writeQueue struct {
	w     frameWriter
	limit int // frames queued beyond which push waits for the writer; 0: no limit

	mu      sync.Mutex
	cond    sync.Cond // signalled when the queue shrinks or writing ends
	frames  [][]byte  // waiting for the writer
	writing bool      // a goroutine is writing
	done    bool      // no more writes: stopped or failed
}

func (q *writeQueue) init(w frameWriter, limit int) {
	q.w = w
	q.limit = limit
	q.cond.L = &q.mu
}

// push queues frames, in order and together. It reports whether the
// caller must now write them (call flush, or have another goroutine call
// it) and ok = false, with the frames dropped, once the queue is done.
// While someone is writing and the queue is at its limit, push waits.
func (q *writeQueue) push(frames ...[]byte) (write, ok bool) {
	q.mu.Lock()
	for q.writing && q.limit > 0 && len(q.frames) >= q.limit && !q.done {
		q.cond.Wait()
	}
	if q.done {
		q.mu.Unlock()
		for _, b := range frames {
			q.w.dropFrame(b)
		}
		return false, false
	}
	q.frames = append(q.frames, frames...)
	if q.writing {
		q.mu.Unlock()
		return false, true
	}
	q.writing = true
	q.mu.Unlock()
	return true, true
}

// flush writes the queue until it is empty; only the writer (to whom push
// said so) calls it. It returns the error that stopped the queue, if any.
func (q *writeQueue) flush() error {
	for rounds := 0; ; rounds++ {
		q.mu.Lock()
		batch := q.frames
		q.frames = nil
		if len(batch) == 0 {
			q.writing = false
			q.cond.Broadcast()
			q.mu.Unlock()
			return nil
		}
		if rounds == handoffRounds {
			q.frames = batch
			q.mu.Unlock()
			go q.flush() //nolint:errcheck // the frameWriter handles failures
			return nil
		}
		q.cond.Broadcast()
		q.mu.Unlock()
		if err := q.w.writeFrames(batch); err != nil {
			q.mu.Lock()
			q.done, q.writing = true, false
			for _, b := range q.frames {
				q.w.dropFrame(b)
			}
			q.frames = nil
			q.cond.Broadcast()
			q.mu.Unlock()
			return err
		}
	}
}

// stop waits until no one is writing, then refuses further frames and
// drops those queued. It reports whether the queue was already done.
func (q *writeQueue) stop() (wasDone bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.writing {
		q.cond.Wait()
	}
	wasDone = q.done
	q.done = true
	for _, b := range q.frames {
		q.w.dropFrame(b)
	}
	q.frames = nil
	return wasDone
}
