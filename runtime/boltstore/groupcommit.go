package boltstore

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// maxGroup is how many writes one group transaction holds at most, to keep
// a transaction's dirty pages bounded (bbolt's DefaultMaxBatchSize).
const maxGroup = 1000

// A committer runs a Store's write transactions, one at a time, and puts
// the writes that arrive while one commits together into the next: writes
// of different conversations made at the same time share one transaction
// and so one fsync (group commit). A write that arrives when none is
// committing starts at once: a lone writer waits for nothing.
//
// It does what bbolt's DB.Batch does, without Batch's timer: Batch starts
// a batch's transaction MaxBatchDelay (10 ms by default) after its first
// write, a wait a lone writer pays on every save, while a short delay
// gathers little. Here the gathering is the previous commit's fsync.
//
// Each write keeps its own all-or-nothing: a write function that fails
// rolls the whole transaction back (bbolt has no savepoints), then the
// others are run again without it, and it runs alone after them, so its
// error is the one it gets against the file as committed. The functions
// must therefore be repeatable: they may run several times, and only the
// last run counts.
type committer struct {
	db *bolt.DB

	mu     sync.Mutex
	queue  []*write
	closed bool

	wake chan struct{} // capacity 1: the queue has writes
	done chan struct{} // closed when run returns

	txs      atomic.Uint64 // transactions committed (read by the tests)
	gathered atomic.Uint64 // calls of gather (read by the tests)

	buf   arena     // the buffers of the transaction running (run's alone)
	spare sync.Pool // of *write
}

// A write is one caller's transaction function and its result.
type write struct {
	fn  func(*bolt.Tx, *arena) error
	err chan error // capacity 1
}

// newCommitter starts the committer of db; close stops it.
func newCommitter(db *bolt.DB) *committer {
	g := &committer{db: db, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go g.run()
	return g
}

// update runs fn in a read-write transaction, shared with the writes that
// arrive meanwhile, and returns once it is committed (and synced) or
// failed. After close it fails with bbolt's ErrDatabaseNotOpen, as
// DB.Update does on a closed file.
func (g *committer) update(fn func(*bolt.Tx, *arena) error) error {
	w, _ := g.spare.Get().(*write)
	if w == nil {
		w = &write{err: make(chan error, 1)}
	}
	w.fn = fn
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return berrors.ErrDatabaseNotOpen
	}
	g.queue = append(g.queue, w)
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default: // already woken
	}
	err := <-w.err
	w.fn = nil
	g.spare.Put(w)
	return err
}

// close commits the writes queued and stops the committer. Later updates
// fail.
func (g *committer) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	select {
	case g.wake <- struct{}{}:
	default:
	}
	<-g.done
}

func (g *committer) run() {
	defer close(g.done)
	last, took := 0, time.Duration(0) // the last group's size and commit time
	var idle time.Time                // when the queue was last found empty
	for {
		<-g.wake
		if time.Since(idle) > took {
			// Idle for longer than a commit takes: not under load, so
			// the write that woke the committer does not wait.
			last = 0
		}
		for {
			if last >= gatherFrom {
				g.gather(last, took)
			}
			g.mu.Lock()
			group, closed := g.queue, g.closed
			if len(group) > maxGroup {
				group, g.queue = group[:maxGroup:maxGroup], group[maxGroup:]
			} else {
				g.queue = nil
			}
			g.mu.Unlock()
			if len(group) == 0 {
				if closed {
					return
				}
				idle = time.Now()
				break
			}
			start := time.Now()
			g.commit(group)
			last, took = len(group), time.Since(start)
		}
	}
}

// gatherFrom is the size of a group from which the committer lets the
// next one gather (see gather).
const gatherFrom = 8

// gather waits, after a group of last writes that took took to commit,
// for the next group to reach half that size, at most a quarter of took
// (and 2 ms): under load, a commit rewrites about the same pages however
// many writes share it, so a larger group costs each write less. run
// calls it only under load: after a group of gatherFrom writes or more,
// and not for a write that comes after the committer idled longer than a
// commit takes.
func (g *committer) gather(last int, took time.Duration) {
	g.gathered.Add(1)
	deadline := time.Now().Add(min(took/4, 2*time.Millisecond))
	for {
		g.mu.Lock()
		n, closed := len(g.queue), g.closed
		g.mu.Unlock()
		if n >= last/2 || closed || !time.Now().Before(deadline) {
			return
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// commit runs group in one transaction and tells each write its result.
func (g *committer) commit(group []*write) {
	var alone []*write
	for len(group) > 0 {
		failed := -1
		err := g.db.Update(func(tx *bolt.Tx) error {
			g.buf.reset()
			for i, w := range group {
				if err := safely(w.fn, tx, &g.buf); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed < 0 {
			if err == nil {
				g.txs.Add(1)
			}
			for _, w := range group {
				w.err <- err
			}
			break
		}
		alone = append(alone, group[failed])
		group = slices.Delete(group, failed, failed+1)
	}
	for _, w := range alone {
		err := g.db.Update(func(tx *bolt.Tx) error {
			g.buf.reset()
			return safely(w.fn, tx, &g.buf)
		})
		if err == nil {
			g.txs.Add(1)
		}
		w.err <- err
	}
}

// safely runs fn, turning a panic into an error: a panic in one write must
// not stop the committer, and so every write after it (DB.Batch does the
// same).
func safely(fn func(*bolt.Tx, *arena) error, tx *bolt.Tx, a *arena) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("boltstore: a write panicked: %v", p)
		}
	}()
	return fn(tx, a)
}
