package ws

import (
	"sync"
	"time"
)

// workerIdleTime is how long a worker goroutine waits for a task before
// it exits: long enough for a server under steady load to reuse its
// workers (each is reused within microseconds), short enough that an idle
// server soon holds none.
const workerIdleTime = time.Second

// workerPool runs the server's tasks (reading a connection's frames,
// running a session's requests) on goroutines that are kept for a while
// after their task. A goroutine started per task would grow a new stack
// for every request: runtime.newstack was 10% of the server's CPU in
// BenchmarkLoad (target: CPU per turn ≤ 1.5× the raw echo server's). The
// pool has no size limit: a task never waits for a worker. Idle workers
// are reused last-in first-out, so that the hot ones stay hot and the
// others age out.
type workerPool struct {
	mu     sync.Mutex
	idle   []*worker // the most recently parked last
	timer  *time.Timer
	armed  bool // timer is set to retire idle workers
	closed bool
}

type worker struct {
	tasks  chan func() // buffered: a send never blocks; nil retires the worker
	parked time.Time
}

// do runs fn on an idle worker, or on a new one.
func (p *workerPool) do(fn func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.tasks <- fn
		return
	}
	p.mu.Unlock()
	go p.work(&worker{tasks: make(chan func(), 1)}, fn)
}

func (p *workerPool) work(w *worker, fn func()) {
	for fn != nil {
		fn()
		if !p.park(w) {
			return
		}
		fn = <-w.tasks
	}
}

// park puts w in the idle list; it returns false when the pool is closed.
func (p *workerPool) park(w *worker) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	w.parked = time.Now()
	p.idle = append(p.idle, w)
	if !p.armed {
		p.armed = true
		if p.timer == nil {
			p.timer = time.AfterFunc(workerIdleTime, p.retire)
		} else {
			p.timer.Reset(workerIdleTime)
		}
	}
	return true
}

// retire ends the workers idle for workerIdleTime or longer.
func (p *workerPool) retire() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	now := time.Now()
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].parked) >= workerIdleTime {
		p.idle[n].tasks <- nil
		n++
	}
	rest := copy(p.idle, p.idle[n:])
	clear(p.idle[rest:])
	p.idle = p.idle[:rest]
	if rest == 0 {
		p.armed = false
		p.idle = nil
		return
	}
	p.timer.Reset(workerIdleTime - now.Sub(p.idle[0].parked))
}

// close ends the idle workers; the others end after their task.
func (p *workerPool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, w := range p.idle {
		w.tasks <- nil
	}
	p.idle = nil
	if p.timer != nil {
		p.timer.Stop()
	}
}
