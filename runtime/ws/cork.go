package ws

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// corkConn is the server side of a websocket's TCP connection. While
// corked it collects what is written, so that the frames of one batch go
// out in one write; uncork writes them with a deadline.
type corkConn struct {
	net.Conn
	pool    *sync.Pool // of *[]byte: the cork buffers
	timeout time.Duration

	mu     sync.Mutex
	corked bool
	buf    *[]byte
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	if c.corked {
		*c.buf = append(*c.buf, p...)
		c.mu.Unlock()
		return len(p), nil
	}
	c.mu.Unlock()
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
	return c.Conn.Write(p)
}

func (c *corkConn) cork() {
	c.mu.Lock()
	c.corked = true
	if c.buf == nil {
		if b, ok := c.pool.Get().(*[]byte); ok {
			c.buf = b
		} else {
			b := make([]byte, 0, 4096)
			c.buf = &b
		}
	}
	c.mu.Unlock()
}

// uncork writes what was collected. Every write has a deadline: the
// write timeout from its start.
func (c *corkConn) uncork() error {
	c.mu.Lock()
	c.corked = false
	buf := c.buf
	c.buf = nil
	c.mu.Unlock()
	if buf == nil {
		return nil
	}
	var err error
	if len(*buf) > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(c.timeout))
		_, err = c.Conn.Write(*buf)
	}
	if cap(*buf) <= maxPooled {
		*buf = (*buf)[:0]
		c.pool.Put(buf)
	}
	return err
}

// hijackCapture hands coder/websocket a corkConn in place of the hijacked
// connection.
type hijackCapture struct {
	http.ResponseWriter
	pool    *sync.Pool
	timeout time.Duration
	conn    *corkConn
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
	h.conn = &corkConn{Conn: nc, pool: h.pool, timeout: h.timeout}
	// Smaller buffers than net/http's 4 KiB ones, which an idle connection
	// would keep: writes are batched by corkConn, and frames are read
	// into pooled buffers. Bytes the client sent after the handshake are
	// carried over.
	pending, _ := brw.Reader.Peek(brw.Reader.Buffered())
	size := max(readBufferSize, len(pending))
	r := bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(pending)), h.conn), size)
	if len(pending) > 0 {
		if _, err := r.Peek(len(pending)); err != nil {
			nc.Close()
			return nil, nil, fmt.Errorf("ws: hijack: %w", err)
		}
	}
	return h.conn, bufio.NewReadWriter(r, bufio.NewWriterSize(h.conn, writeBufferSize)), nil
}

// Buffer sizes of a server connection.
const (
	readBufferSize  = 1024
	writeBufferSize = 64 // frame headers; payloads go straight to corkConn
)

// Unwrap returns the wrapped ResponseWriter (for http.ResponseController).
func (h *hijackCapture) Unwrap() http.ResponseWriter { return h.ResponseWriter }
