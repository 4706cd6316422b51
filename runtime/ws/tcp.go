package ws

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// Buffer sizes of a server connection.
const (
	// readBufferSize is the buffer the connection's waiter reads into: a
	// few client frames. Larger frames are read straight into the frame
	// buffer. It is held by idle connections (BenchmarkIdleMemory: ≤ 8 KiB
	// per idle session), hence small.
	readBufferSize = 512
	// coderReadBufferSize is coder/websocket's bufio.Reader over rbuf:
	// the smallest bufio allows, as it only copies from rbuf (frame
	// headers; payloads bypass it).
	coderReadBufferSize = 16
	// writeBufferSize is coder/websocket's bufio.Writer: frame headers;
	// payloads go straight to tcpConn, which batches them (corks).
	writeBufferSize = 64
)

// tcpConn is the server side of the TCP connection under a websocket. It
// does two things for the server's targets:
//
//   - Reads: the connection's waiter goroutine blocks in wait, reading
//     into rbuf with a stack that stays at the 2 KiB minimum; a pool
//     worker then decodes the frames through coder/websocket, which reads
//     from rbuf. Blocked inside coder/websocket, the waiter's stack would
//     grow to 4 KiB (BenchmarkIdleMemory: ≤ 8 KiB per idle session).
//   - Writes: while corked, what coder/websocket writes is collected, so
//     that the frames of a batch, such as a turn's last event and its
//     terminator, go out in one write (BenchmarkLoad: throughput ≥ 0.8×
//     and CPU per turn ≤ 1.5× the raw echo server's).
//
// The read side is used by whoever holds the connection's read role (see
// conn), one goroutine at a time.
type tcpConn struct {
	net.Conn
	timeout time.Duration // of each write
	corks   *sync.Pool    // of *[]byte: the cork buffers

	// Read side.
	rbuf []byte        // bytes received and not read yet: rbuf[r:w]
	r, w int           //
	rerr error         // the error that ended reading, once there is one
	br   *bufio.Reader // coder/websocket's reader, over this tcpConn
	// A read at a frame boundary with nothing received returns
	// errNoFrame instead of waiting, while stop is set (see atBoundary).
	stop, boundary bool

	// Write side.
	wmu    sync.Mutex // held by a write to the network, so that they keep their order
	mu     sync.Mutex
	corked bool
	buf    *[]byte // what was written while corked
}

// errNoFrame is what a tcpConn read returns, instead of waiting, at a
// frame boundary with nothing received, while stopAtBoundary is on.
var errNoFrame = errors.New("ws: no frame received")

// stopAtBoundary turns on or off the return of errNoFrame at frame
// boundaries. The worker holding the read role turns it on: after a
// control frame (such as the pong of a keepalive ping) with nothing
// behind it, coder/websocket's Reader, which reads on until a data
// message, fails with errNoFrame and the worker gives the read role back
// to the connection's waiter, instead of staying blocked in the Reader
// with its deep stack until the client next sends a message.
func (t *tcpConn) stopAtBoundary(on bool) { t.stop, t.boundary = on, false }

// atBoundary is called when coder/websocket has read a whole control
// frame (from its ping and pong callbacks): if it holds no more bytes,
// its next read starts the next frame. A coder/websocket error on a frame
// header's first byte leaves the connection as it was, so that the next
// Reader call reads that frame.
func (t *tcpConn) atBoundary() { t.boundary = t.stop && t.br.Buffered() == 0 }

// wait blocks until there are received bytes to read, or reading failed.
// A deadline error (see interrupt) is not final.
func (t *tcpConn) wait() error {
	if t.buffered() {
		return nil
	}
	if t.rerr != nil {
		return t.rerr
	}
	n, err := t.Conn.Read(t.rbuf[:cap(t.rbuf)])
	t.r, t.w = 0, n
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		t.rerr = err
	}
	if n > 0 {
		return nil
	}
	return err
}

// buffered reports whether bytes were received that coder/websocket has
// not read yet (in rbuf or in its own reader).
func (t *tcpConn) buffered() bool { return t.r < t.w || t.br.Buffered() > 0 }

// Read serves coder/websocket's reads from rbuf; when it is empty (a
// frame still arriving), it reads from the network.
func (t *tcpConn) Read(p []byte) (int, error) {
	boundary := t.boundary
	t.boundary = false
	if t.r == t.w {
		if t.rerr != nil {
			return 0, t.rerr
		}
		if boundary {
			return 0, errNoFrame
		}
		if len(p) >= cap(t.rbuf) {
			n, err := t.Conn.Read(p)
			if err != nil {
				t.rerr = err
			}
			return n, err
		}
		n, err := t.Conn.Read(t.rbuf[:cap(t.rbuf)])
		t.r, t.w = 0, n
		if err != nil {
			t.rerr = err
			if n == 0 {
				return 0, err
			}
		}
	}
	n := copy(p, t.rbuf[t.r:t.w])
	t.r += n
	return n, nil
}

// closeNet closes the network connection under coder/websocket's.
func (t *tcpConn) closeNet() error { return t.Conn.Close() }

// interrupt makes a wait in progress, or the next one, return at once;
// resume undoes it.
func (t *tcpConn) interrupt() { _ = t.Conn.SetReadDeadline(time.Unix(1, 0)) }

func (t *tcpConn) resume() { _ = t.Conn.SetReadDeadline(time.Time{}) }

func (t *tcpConn) Write(p []byte) (int, error) {
	t.mu.Lock()
	if t.corked {
		*t.buf = append(*t.buf, p...)
		t.mu.Unlock()
		return len(p), nil
	}
	t.mu.Unlock()
	t.wmu.Lock()
	defer t.wmu.Unlock()
	_ = t.Conn.SetWriteDeadline(time.Now().Add(t.timeout))
	return t.Conn.Write(p)
}

// cork starts collecting writes.
func (t *tcpConn) cork() {
	t.mu.Lock()
	t.corked = true
	if t.buf == nil {
		if b, ok := t.corks.Get().(*[]byte); ok {
			t.buf = b
		} else {
			b := make([]byte, 0, 4096)
			t.buf = &b
		}
	}
	t.mu.Unlock()
}

// uncork writes what was collected, with a deadline: the write timeout
// from its start.
func (t *tcpConn) uncork() error {
	// What coder/websocket writes from now on (a control frame, from
	// another goroutine) goes out after what was collected, even when it
	// began while corked.
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.mu.Lock()
	t.corked = false
	buf := t.buf
	t.buf = nil
	t.mu.Unlock()
	if buf == nil {
		return nil
	}
	var err error
	if len(*buf) > 0 {
		_ = t.Conn.SetWriteDeadline(time.Now().Add(t.timeout))
		_, err = t.Conn.Write(*buf)
	}
	if cap(*buf) <= maxPooled {
		*buf = (*buf)[:0]
		t.corks.Put(buf)
	}
	return err
}

// hijackCapture hands coder/websocket a tcpConn in place of the hijacked
// connection, with small buffers. It relies on websocket.Accept using the
// bufio.ReadWriter that Hijack returns as the connection's reader and
// writer (TestHijackedBuffers checks it).
type hijackCapture struct {
	http.ResponseWriter
	corks   *sync.Pool
	timeout time.Duration

	conn *tcpConn          // the connection, once hijacked
	rw   *bufio.ReadWriter // the buffers handed to coder/websocket
}

func (h *hijackCapture) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, brw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, fmt.Errorf("ws: hijack: %w", err)
	}
	if err := brw.Writer.Flush(); err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("ws: hijack: %w", err)
	}
	// net/http's 4 KiB buffers are dropped; bytes the client sent after
	// the handshake are carried over.
	pending, _ := brw.Reader.Peek(brw.Reader.Buffered())
	t := &tcpConn{Conn: nc, timeout: h.timeout, corks: h.corks, rbuf: make([]byte, max(readBufferSize, len(pending)))}
	t.w = copy(t.rbuf, pending)
	t.br = bufio.NewReaderSize(t, coderReadBufferSize)
	h.conn = t
	h.rw = bufio.NewReadWriter(t.br, bufio.NewWriterSize(t, writeBufferSize))
	return t, h.rw, nil
}

// Unwrap returns the wrapped ResponseWriter (for http.ResponseController).
func (h *hijackCapture) Unwrap() http.ResponseWriter { return h.ResponseWriter }
