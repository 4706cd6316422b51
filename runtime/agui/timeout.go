package agui

import (
	"net/http"
	"sync/atomic"
	"time"
)

// A deadlineWriter bounds each write of a run's events to its client by
// [Options.WriteTimeout]: a client that does not read for that long (its
// socket's buffers full) fails the write, and the run is stopped.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	stop    func() // stops the run, once a write failed
	failed  bool
	// deadline is the deadline of the write in progress (Unix
	// nanoseconds), 0 between writes.
	deadline atomic.Int64
}

// deadlines returns w with its writes bounded by h's WriteTimeout (w
// itself without one), the function that reports whether a write is past
// its deadline (the connection then closes, ending the request's
// context), and the function that clears the deadline once the run's
// events are written. stop stops the run.
func (h *Handler) deadlines(w http.ResponseWriter, stop func()) (http.ResponseWriter, func() bool, func()) {
	if h.opts.WriteTimeout <= 0 {
		return w, func() bool { return false }, func() {}
	}
	dw := &deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), timeout: h.opts.WriteTimeout, stop: stop}
	expired := func() bool {
		d := dw.deadline.Load()
		return d != 0 && time.Now().UnixNano() >= d
	}
	return dw, expired, func() { _ = dw.rc.SetWriteDeadline(time.Time{}) }
}

// Write writes b (and what a flush after it sends) within the timeout.
func (dw *deadlineWriter) Write(b []byte) (int, error) {
	d := time.Now().Add(dw.timeout)
	dw.deadline.Store(d.UnixNano())
	if err := dw.rc.SetWriteDeadline(d); err != nil {
		dw.fail()
		return 0, err
	}
	n, err := dw.ResponseWriter.Write(b)
	if err != nil {
		dw.fail()
	}
	return n, err
}

// Flush flushes within the deadline of the last write.
func (dw *deadlineWriter) Flush() { _ = dw.FlushError() }

// FlushError flushes within the deadline of the last write, for
// http.ResponseController.
func (dw *deadlineWriter) FlushError() error {
	err := dw.rc.Flush()
	if err != nil {
		dw.fail()
		return err
	}
	dw.deadline.Store(0) // written: no write is in progress
	return nil
}

// Unwrap returns the ResponseWriter, for http.ResponseController.
func (dw *deadlineWriter) Unwrap() http.ResponseWriter { return dw.ResponseWriter }

// fail stops the run the first time a write fails. Only the run's writer
// goroutine writes.
func (dw *deadlineWriter) fail() {
	if !dw.failed {
		dw.failed = true
		dw.stop()
	}
}
