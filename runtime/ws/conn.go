package ws

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// errConnClosed is returned to routes sending events once their connection
// is gone.
var errConnClosed = errors.New("ws: connection closed")

// wsConn is what a conn needs of a websocket: *websocket.Conn, or a fake
// in tests.
type wsConn interface {
	Reader(ctx context.Context) (websocket.MessageType, io.Reader, error)
	Write(ctx context.Context, typ websocket.MessageType, p []byte) error
	Close(code websocket.StatusCode, reason string) error
	CloseNow() error
	Ping(ctx context.Context) error
}

// A socket is what a conn needs of the connection under its websocket:
// *tcpConn, or a fake in tests.
type socket interface {
	wait() error    // blocks until bytes are received, or reading failed
	buffered() bool // bytes received are not read yet
	interrupt()     // makes a wait in progress, or the next one, return
	resume()        // undoes interrupt
	cork()          // collects writes from now on
	uncork() error  // writes what was collected
	// stopAtBoundary(true) makes a read after a control frame, with
	// nothing behind it, fail with errNoFrame rather than wait (see
	// tcpConn.stopAtBoundary).
	stopAtBoundary(on bool)
	closeNet() error // closes the network connection
}

// conn is one websocket connection and the sessions the client started
// on it.
//
// Reading has two roles. The connection's waiter goroutine (serve) waits
// for bytes from the client and does nothing else, so that its stack
// stays minimal; when bytes arrive it hands the read role to a pool
// worker (readFrames), which decodes and handles the frames received and
// gives the role back. Only the holder of the read role reads the
// websocket, so coder/websocket's reader is never used concurrently.
//
// There is no writer goroutine: whoever sends frames while no one is
// writing writes them and those queued meanwhile (see writeQueue).
type conn struct {
	srv    *Server
	ws     wsConn
	sock   socket
	ctx    context.Context // carries the principal; cancelled when the connection ends
	cancel context.CancelFunc
	ioCtx  context.Context // ctx without cancellation, for reads and writes
	// turnCtx is the parent of the requests of durable conversations: a
	// durable turn is not owned by its connection, so it does not end with
	// ctx; it ends when the server aborts its requests (Close, a Shutdown
	// whose context ended) or once the connection's sessions finished.
	turnCtx    context.Context
	turnCancel context.CancelFunc
	remote     string
	out        writeQueue

	readFramesFn func() // c.readFrames, made once

	// The read role; rmu is never held with mu.
	rmu         sync.Mutex
	rcond       sync.Cond // signalled when a worker gives the read role back
	reading     bool      // a worker holds the read role
	waiting     bool      // the waiter is in sock.wait
	interrupted bool      // sock.interrupt was called during the wait
	closeReq    bool      // the writer asks for the close handshake
	readErr     error     // why reading the websocket ended
	drops       int       // frames dropped (by the read role)

	workers sync.WaitGroup // session workers running
	queued  atomic.Int64   // bytes of the requests waiting in the sessions' queues

	pingTimer *time.Timer // the next keepalive ping (see keepalive.go)

	mu          sync.Mutex // guards what follows; taken before session.mu
	sessions    map[string]*session
	live        int             // sessions not yet finished (closing ones count)
	draining    bool            // Shutdown began: no new requests
	handedOver  map[string]bool // chatIds of the durable sessions a drain let go (handOver)
	closing     bool            // the connection is being torn down
	closeCode   websocket.StatusCode
	closeReason string
	idleTimer   *time.Timer // armed while live == 0
}

// outLimit is the number of frames queued for a connection beyond which
// senders wait for the writer.
const outLimit = 64

func newConn(ctx context.Context, srv *Server, wc wsConn, sock socket, remote string) *conn {
	ctx, cancel := context.WithCancel(ctx)
	c := &conn{
		srv:      srv,
		ws:       wc,
		sock:     sock,
		ctx:      ctx,
		cancel:   cancel,
		ioCtx:    context.WithoutCancel(ctx),
		remote:   remote,
		sessions: map[string]*session{},
	}
	c.turnCtx, c.turnCancel = context.WithCancel(c.ioCtx)
	c.readFramesFn = c.readFrames
	c.rcond.L = &c.rmu
	c.out.init(c, outLimit)
	return c
}

// serve is the connection's waiter: it runs until the connection ends,
// then frees everything. It waits for bytes at a shallow depth and leaves
// the rest to workers, so that an idle connection costs a goroutine with
// the minimal stack (see tcpConn).
func (c *conn) serve() {
	c.mu.Lock()
	c.armIdleLocked()
	c.mu.Unlock()
	c.startKeepalive()
	var err error
	for {
		c.rmu.Lock()
		if c.closeReq {
			c.closeReq = false
			c.rmu.Unlock()
			c.closeHandshake()
			continue
		}
		c.waiting = true
		c.rmu.Unlock()
		err = c.sock.wait()
		c.rmu.Lock()
		c.waiting = false
		if c.interrupted {
			// A close request: the next round does it, and finds any
			// error again.
			c.interrupted = false
			c.sock.resume()
			c.rmu.Unlock()
			continue
		}
		if err != nil {
			if c.readErr == nil {
				c.readErr = err
			}
			err = c.readErr
			c.rmu.Unlock()
			break
		}
		c.reading = true
		c.srv.workers.do(c.readFramesFn)
		for c.reading {
			c.rcond.Wait()
		}
		err = c.readErr
		c.rmu.Unlock()
		if err != nil {
			break
		}
	}
	c.teardown(err)
}

// readFrames reads and handles the frames received, on a pool worker,
// then gives the read role back. A request for an idle session is run on
// this worker afterwards, instead of on another one.
func (c *conn) readFrames() {
	var run *session // a session whose requests this worker runs
	var err error
	c.sock.stopAtBoundary(true)
	for {
		var s *session
		if s, err = c.readFrame(); err != nil {
			if errors.Is(err, errNoFrame) {
				err = nil // control frames only: back to waiting
			}
			break
		}
		if s != nil {
			if run != nil {
				c.srv.workers.do(run.work)
			}
			run = s
		}
		if !c.sock.buffered() {
			break
		}
	}
	c.sock.stopAtBoundary(false)
	if err != nil {
		// The close handshake, if the client started it, is done; the
		// waiter's next wait fails.
		c.ws.CloseNow()
	}
	c.rmu.Lock()
	if err != nil && c.readErr == nil {
		c.readErr = err
	}
	c.reading = false
	c.rcond.Signal()
	c.rmu.Unlock()
	if run != nil {
		run.work()
	}
}

// readFrame reads one frame and handles it. It returns the session whose
// worker the frame asks to start, if any.
func (c *conn) readFrame() (*session, error) {
	_, r, err := c.ws.Reader(c.ioCtx) // abort closes the connection
	if err != nil {
		return nil, err
	}
	buf := c.srv.getBuf()
	defer c.srv.putBuf(buf)
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return c.handleFrame(buf.Bytes()), nil
}

// requestClose asks the waiter for the close handshake, which reads the
// websocket: the writer cannot do it while the waiter may be reading.
func (c *conn) requestClose() {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.closeReq = true
	if c.waiting && !c.interrupted {
		c.interrupted = true
		c.sock.interrupt()
	}
}

// closeHandshake closes the websocket with the code set by
// closeGracefully; it waits for the client's close frame.
func (c *conn) closeHandshake() {
	c.mu.Lock()
	code, reason := c.closeCode, c.closeReason
	c.mu.Unlock()
	if err := c.ws.Close(code, reason); err != nil {
		c.log(slog.LevelDebug, "ws: closing the connection", "err", err)
	}
}

// send queues frames, in order and together (a nil frame closes the
// connection gracefully). When no one is writing, the caller writes them
// and whatever others queue meanwhile; otherwise it returns at once, or
// waits while the queue is full.
func (c *conn) send(frames ...[]byte) error {
	write, ok := c.out.push(frames...)
	if !ok {
		return errConnClosed
	}
	if write {
		return c.out.flush()
	}
	return nil
}

// writeFrames writes frames for c.out, corked: one TCP write for the
// batch. A nil frame ends the writing and starts the close handshake. A
// failure aborts the connection.
func (c *conn) writeFrames(batch [][]byte) error {
	c.sock.cork()
	var err error
	for i, b := range batch {
		if b == nil {
			err = c.sock.uncork()
			for _, rest := range batch[i+1:] {
				c.dropFrame(rest)
			}
			if err == nil {
				c.requestClose()
				return errConnClosed
			}
			break
		}
		if err == nil {
			err = c.ws.Write(c.ioCtx, websocket.MessageText, b)
		}
		c.dropFrame(b)
	}
	if uerr := c.sock.uncork(); err == nil {
		err = uerr
	}
	if err != nil {
		if !errors.Is(err, errConnClosed) && c.ctx.Err() == nil {
			c.log(slog.LevelInfo, "ws: write failed; closing the connection", "err", err)
		}
		c.abort() // the waiter stops; teardown follows
	}
	return err
}

// dropFrame returns a frame's buffer to the pool once written or dropped.
func (c *conn) dropFrame(b []byte) { c.srv.putFrame(b) }

// buildText returns a server frame whose data is text, in a pooled buffer.
func (c *conn) buildText(chatID []byte, typ, text string, requestID []byte, scopeID, detail string) []byte {
	b := appendHead(c.srv.getFrame(), chatID, typ)
	b = appendString(b, text)
	return appendTail(b, requestID, scopeID, detail)
}

// failed sends a Failed terminator.
func (c *conn) failed(chatID []byte, requestID []byte, reason, scopeID, detail string) {
	_ = c.send(c.buildText(chatID, protocol.EventFailed, reason, requestID, scopeID, detail))
}

// log logs with the connection's remote address.
func (c *conn) log(level slog.Level, msg string, args ...any) {
	c.srv.opts.Logger.Log(c.ctx, level, msg, append(args, "remote", c.remote)...)
}

// scopeOf returns the current scope of the session chatID, or "" when
// the connection has no such session.
func (c *conn) scopeOf(chatID string) string {
	c.mu.Lock()
	s := c.sessions[chatID]
	c.mu.Unlock()
	if s == nil {
		return ""
	}
	return s.conv.ScopeID()
}

// handleFrame handles one client frame; it returns the session whose
// worker must start, if any.
func (c *conn) handleFrame(b []byte) *session {
	f, err := decodeFrame(b)
	if err != nil {
		var fe *frameError
		if !errors.As(err, &fe) || !fe.answer {
			c.logDrop("ws: dropped a frame", "err", err, "frame", truncate(b, 200))
			return nil
		}
		c.logDrop("ws: bad frame", "chat", fe.chatID, "err", err)
		c.failed(quote(fe.chatID), fe.requestID, chat.ErrBadRequest.Reason, c.scopeOf(fe.chatID), fe.detail)
		return nil
	}
	switch f.Type {
	case TypeConnect:
		c.connect(f)
	case TypeChatRouteMessage:
		return c.request(f)
	case TypeDisconnect:
		c.disconnect(f)
	case TypeCancel:
		c.stop(f)
	}
	return nil
}

// stop handles a Cancel frame: the request it names, running or queued
// in the session chatId, ends with Failed Cancelled. A Cancel of a
// request the session does not have (it ended, raced the Cancel, or
// never was) or for a chatId the connection does not have is dropped and
// logged (see logDrop): it changes nothing, and is not answered. A
// Cancel costs no allocation that outlives it, so a flood of them is
// bounded by the connection's read rate alone.
func (c *conn) stop(f *inFrame) {
	c.mu.Lock()
	s := c.sessions[f.ChatID]
	c.mu.Unlock()
	if s == nil {
		c.logDrop("ws: a Cancel for an unknown chat", "chat", f.ChatID)
		return
	}
	if !s.stop(f.RequestID) {
		c.logDrop("ws: a Cancel of a request the session does not have (ended, or unknown)", "chat", f.ChatID, "requestId", string(f.RequestID))
		return
	}
	c.log(slog.LevelDebug, "ws: request cancelled by the client", "chat", f.ChatID, "requestId", string(f.RequestID))
}

// logDrop logs a frame the server could not serve: the first ones of a
// connection at Info, the rest at Debug, so that a client cannot flood
// the logs.
func (c *conn) logDrop(msg string, args ...any) {
	c.drops++
	level := slog.LevelInfo
	if c.drops > 10 {
		level = slog.LevelDebug
	}
	c.log(level, msg, append(args, "drops", c.drops)...)
}

func (c *conn) connect(f *inFrame) {
	id := quote(f.ChatID)
	c.mu.Lock()
	var reason, detail string
	switch {
	case c.draining:
		reason = ErrShuttingDown.Reason
	case c.sessions[f.ChatID] != nil:
		reason, detail = chat.ErrBadRequest.Reason, "chatId is already connected on this connection"
	case c.live >= c.srv.opts.MaxSessions:
		reason, detail = ErrTooManySessions.Reason, "too many sessions on this connection"
	}
	c.mu.Unlock()
	if reason != "" {
		c.failed(id, f.RequestID, reason, "", detail)
		return
	}

	conv, err := c.open(f)
	if err != nil {
		reason := chat.ErrServerError.Reason
		var fl *chat.Failure
		if errors.As(err, &fl) {
			reason = fl.Reason
		}
		c.log(slog.LevelInfo, "ws: connect failed", "chat", f.ChatID, "route", f.Route, "reason", reason, "err", err)
		c.failed(id, f.RequestID, reason, "", "")
		return
	}
	s := newSession(c, f.ChatID, id, conv)
	c.setupDurable(s, f.Resume != nil)
	c.mu.Lock()
	if c.closing || c.draining {
		c.mu.Unlock()
		s.keep = true // not shared yet; a resumed conversation stays in the store
		s.finishConv()
		c.failed(id, f.RequestID, ErrShuttingDown.Reason, "", "")
		return
	}
	c.sessions[f.ChatID] = s
	c.live++
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	c.mu.Unlock()
	s.armTimer()
	_ = c.send(c.connected(id, conv, f.RequestID))
}

// request queues a request on its session; it returns the session if its
// worker must start.
func (c *conn) request(f *inFrame) *session {
	if f.Interrupt {
		// Steer: the session's running and queued requests are stopped
		// (each answered Failed Cancelled); this one runs next, when the
		// stopped route has returned, with the interrupted turn in the
		// memory.
		c.mu.Lock()
		s := c.sessions[f.ChatID]
		draining := c.draining
		c.mu.Unlock()
		if s != nil && !draining {
			s.interrupt()
		}
	}
	c.mu.Lock()
	s := c.sessions[f.ChatID]
	var reason, detail string
	start := false
	switch {
	case c.draining && (s != nil && s.dur != nil || c.handedOver[f.ChatID]):
		// Handed over: the server drains, and will close the connection
		// with 1001 once its running requests end. The request is not
		// answered: the client sends it again, with its requestId, where
		// it resumes the conversation, and it runs there, once.
		c.mu.Unlock()
		c.log(slog.LevelDebug, "ws: draining: a request of a durable conversation is left for the client to send again elsewhere", "chat", f.ChatID)
		return nil
	case c.draining:
		reason = ErrShuttingDown.Reason
	case s == nil:
		reason, detail = chat.ErrSessionNotActive.Reason, "no session with this chatId on this connection"
	default:
		start, reason, detail = s.enqueue(&request{scopeID: f.ScopeID, data: f.Data, requestID: f.RequestID})
	}
	c.mu.Unlock()
	if reason != "" {
		scope := ""
		if s != nil {
			scope = s.conv.ScopeID()
		}
		c.failed(quote(f.ChatID), f.RequestID, reason, scope, detail)
	}
	if start {
		return s
	}
	return nil
}

func (c *conn) disconnect(f *inFrame) {
	c.mu.Lock()
	s := c.sessions[f.ChatID]
	if s != nil {
		delete(c.sessions, f.ChatID)
	}
	c.mu.Unlock()
	if s == nil {
		c.log(slog.LevelDebug, "ws: disconnect of an unknown chat", "chat", f.ChatID)
		return
	}
	s.close()
}

// sessionFinished is called once per session after its conversation ended.
func (c *conn) sessionFinished(s *session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions[s.id] == s {
		delete(c.sessions, s.id)
	}
	c.live--
	if c.live == 0 && !c.closing {
		c.armIdleLocked()
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(bytes.ToValidUTF8(b[:n], nil)) + "…"
	}
	return string(bytes.ToValidUTF8(b, nil))
}
