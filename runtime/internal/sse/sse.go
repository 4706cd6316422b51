// Package sse writes server-sent events to an HTTP response from a
// goroutine of its own, through a bounded buffer, so that a client that
// reads slowly, or not at all, holds a bounded amount of the server's
// memory: the transports that stream (runtime/agui, runtime/a2aserver)
// share it.
package sse

import (
	"net/http"
	"sync/atomic"
	"time"
)

// A Writer sends frames (whole server-sent events, "data: …\n\n") to a
// client from its own goroutine, through a bounded buffer. Its methods
// may be called from one goroutine at a time.
type Writer struct {
	ch      chan []byte
	done    chan struct{}
	full    func()
	dropped atomic.Bool // the buffer filled: nothing more is queued
}

// NewWriter starts writing to w the frames [Writer.Send] queues, at most n
// of them waiting. When the buffer fills, full is called once, the frames
// that follow are dropped, and a write in progress is unblocked (the
// response's write deadline is set to now): the stream is cut.
func NewWriter(w http.ResponseWriter, n int, full func()) *Writer {
	rc := http.NewResponseController(w)
	wr := &Writer{ch: make(chan []byte, n), done: make(chan struct{})}
	wr.full = func() {
		if full != nil {
			full()
		}
		// Unblock a write to a client that does not read.
		_ = rc.SetWriteDeadline(time.Now())
	}
	go func() {
		defer close(wr.done)
		failed := false
		for b := range wr.ch {
			if failed {
				continue
			}
			if _, err := w.Write(b); err != nil {
				failed = true
				continue
			}
			if len(wr.ch) == 0 {
				if err := rc.Flush(); err != nil {
					failed = true
				}
			}
		}
	}()
	return wr
}

// Send queues one frame; a full buffer cuts the stream (see [NewWriter]).
func (wr *Writer) Send(b []byte) {
	if wr.dropped.Load() {
		return
	}
	select {
	case wr.ch <- b:
	default:
		wr.dropped.Store(true)
		wr.full()
	}
}

// Dropped reports whether the buffer filled and the stream was cut.
func (wr *Writer) Dropped() bool { return wr.dropped.Load() }

// Close sends what is queued and waits for the writer to end.
func (wr *Writer) Close() {
	close(wr.ch)
	<-wr.done
}

// Frame returns the server-sent event whose data is the JSON value b.
func Frame(b []byte) []byte {
	frame := make([]byte, 0, len(b)+8)
	frame = append(frame, "data: "...)
	frame = append(frame, b...)
	return append(frame, "\n\n"...)
}
