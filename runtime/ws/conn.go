package ws

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/runtime/chat"
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
}

// conn is one websocket connection: one reader goroutine and the sessions
// the client started. There is no writer goroutine: whoever sends a frame
// while no one is writing becomes the writer and writes every frame queued
// meanwhile (in one TCP write when corked), so frames never interleave and
// an idle connection costs one goroutine.
type conn struct {
	srv    *Server
	ws     wsConn
	nc     *corkConn       // the TCP connection, or nil (tests)
	ctx    context.Context // carries the principal; cancelled when the connection ends
	cancel context.CancelFunc
	io     context.Context // ctx without cancellation, for reads and writes
	log    *slog.Logger

	workers sync.WaitGroup // session workers running

	wmu     sync.Mutex
	wcond   sync.Cond // signalled when the queue shrinks or writing ends
	wq      [][]byte  // frames waiting for the writer; nil asks it to close
	writing bool      // a goroutine is writing
	wdone   bool      // no more writes: closed or failed

	mu          sync.Mutex // guards what follows; taken before session.mu
	sessions    map[string]*session
	live        int  // sessions not yet finished (closing ones count)
	draining    bool // Shutdown began: no new requests
	closing     bool // the connection is being torn down
	closeCode   websocket.StatusCode
	closeReason string
	idleTimer   *time.Timer // armed while live == 0

	drops int // frames dropped (the reader's own)
}

func newConn(srv *Server, wc wsConn, nc *corkConn, ctx context.Context, remote string) *conn {
	ctx, cancel := context.WithCancel(ctx)
	c := &conn{
		srv:      srv,
		ws:       wc,
		nc:       nc,
		ctx:      ctx,
		cancel:   cancel,
		io:       context.WithoutCancel(ctx),
		log:      srv.cfg.logger.With("remote", remote),
		sessions: map[string]*session{},
	}
	c.wcond.L = &c.wmu
	return c
}

// serve runs the connection until it ends, then frees everything.
func (c *conn) serve() {
	c.mu.Lock()
	c.armIdleLocked()
	c.mu.Unlock()
	err := c.readLoop()
	c.teardown(err)
}

func (c *conn) readLoop() error {
	for {
		_, r, err := c.ws.Reader(c.io) // abort closes the connection
		if err != nil {
			return err
		}
		buf := c.srv.getBuf()
		_, err = buf.ReadFrom(r)
		if err != nil {
			c.srv.putBuf(buf)
			return err
		}
		c.handleFrame(buf.Bytes())
		c.srv.putBuf(buf)
	}
}

// send queues frames, in order and together (a nil frame closes the
// connection gracefully). When no one is writing, the caller writes them
// and whatever others queue meanwhile; otherwise it returns at once, or
// waits while the queue is full.
func (c *conn) send(frames ...[]byte) error {
	c.wmu.Lock()
	for c.writing && len(c.wq) >= c.srv.cfg.outBuffer && !c.wdone {
		c.wcond.Wait()
	}
	if c.wdone {
		c.wmu.Unlock()
		for _, b := range frames {
			c.srv.putFrame(b)
		}
		return errConnClosed
	}
	c.wq = append(c.wq, frames...)
	if c.writing {
		c.wmu.Unlock()
		return nil
	}
	c.writing = true
	c.wmu.Unlock()
	return c.flush(0)
}

// flush writes the queue until it is empty; only the writer calls it.
// After many rounds it hands the writing to a new goroutine, so that a
// route's goroutine does not write for others forever.
func (c *conn) flush(rounds int) error {
	for ; ; rounds++ {
		c.wmu.Lock()
		batch := c.wq
		c.wq = nil
		if len(batch) == 0 {
			c.writing = false
			c.wcond.Broadcast()
			c.wmu.Unlock()
			return nil
		}
		c.wcond.Broadcast()
		c.wmu.Unlock()
		if rounds == 32 {
			c.wmu.Lock()
			c.wq = append(batch, c.wq...)
			c.wmu.Unlock()
			go c.flush(0) //nolint:errcheck // failures end the connection
			return nil
		}
		if err := c.writeBatch(batch); err != nil {
			c.wmu.Lock()
			c.wdone, c.writing = true, false
			for _, b := range c.wq {
				c.srv.putFrame(b)
			}
			c.wq = nil
			c.wcond.Broadcast()
			c.wmu.Unlock()
			if !errors.Is(err, errConnClosed) && c.ctx.Err() == nil {
				c.log.Info("ws: write failed; closing the connection", "err", err)
			}
			c.abort() // the reader stops; teardown follows
			return err
		}
	}
}

// writeBatch writes frames, corked: one TCP write for the batch. A nil
// frame closes the connection with the close handshake.
func (c *conn) writeBatch(batch [][]byte) error {
	if c.nc != nil {
		c.nc.cork()
	}
	var err error
	for i, b := range batch {
		if b == nil {
			if c.nc != nil {
				if err = c.nc.uncork(); err != nil {
					break
				}
			}
			c.mu.Lock()
			code, reason := c.closeCode, c.closeReason
			c.mu.Unlock()
			c.wmu.Lock()
			c.wdone = true
			c.wmu.Unlock()
			for _, rest := range batch[i+1:] {
				c.srv.putFrame(rest)
			}
			if cerr := c.ws.Close(code, reason); cerr != nil {
				c.log.Debug("ws: closing the connection", "err", cerr)
			}
			return nil
		}
		if err == nil {
			err = c.ws.Write(c.io, websocket.MessageText, b)
		}
		c.srv.putFrame(b)
	}
	if c.nc != nil {
		if uerr := c.nc.uncork(); err == nil {
			err = uerr
		}
	}
	return err
}

// buildText returns a server frame whose data is text, in a pooled buffer.
func (c *conn) buildText(chatID []byte, typ, text string, requestID []byte, scopeID, detail string) []byte {
	b := appendHead(c.srv.getFrame(), chatID, typ)
	b = appendString(b, text)
	return appendTail(b, requestID, scopeID, detail)
}

// failed sends a Failed terminator.
func (c *conn) failed(chatID []byte, requestID []byte, reason, scopeID, detail string) {
	_ = c.send(c.buildText(chatID, chat.EventFailed, reason, requestID, scopeID, detail))
}

func (c *conn) handleFrame(b []byte) {
	f, err := decodeFrame(b)
	if err != nil {
		var fe *frameError
		if !errors.As(err, &fe) || fe.chatID == "" {
			c.logDrop("ws: dropped a frame", "err", err, "frame", truncate(b, 200))
			return
		}
		c.logDrop("ws: bad frame", "chat", fe.chatID, "err", err)
		c.failed(quote(fe.chatID), fe.requestID, chat.ErrBadRequest.Reason, "", fe.detail)
		return
	}
	switch f.Type {
	case TypeConnect:
		c.connect(f)
	case TypeChatRouteMessage:
		c.request(f)
	case TypeDisconnect:
		c.disconnect(f)
	}
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
	c.log.Log(c.ctx, level, msg, append(args, "drops", c.drops)...)
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
	case c.live >= c.srv.cfg.maxSessions:
		reason, detail = ErrTooManySessions.Reason, "too many sessions on this connection"
	}
	c.mu.Unlock()
	if reason != "" {
		c.failed(id, f.RequestID, reason, "", detail)
		return
	}

	conv, err := c.srv.router.Connect(c.ctx, f.Route)
	if err != nil {
		reason := chat.ErrServerError.Reason
		var fl *chat.Failure
		if errors.As(err, &fl) {
			reason = fl.Reason
		}
		c.log.Info("ws: connect failed", "chat", f.ChatID, "route", f.Route, "reason", reason, "err", err)
		c.failed(id, f.RequestID, reason, "", "")
		return
	}
	s := newSession(c, f.ChatID, id, conv)
	c.mu.Lock()
	if c.closing || c.draining {
		c.mu.Unlock()
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
	_ = c.send(c.buildText(id, chat.EventCompleted, conv.ScopeID(), f.RequestID, "", ""))
}

func (c *conn) request(f *inFrame) {
	c.mu.Lock()
	s := c.sessions[f.ChatID]
	var reason, detail string
	switch {
	case c.draining:
		reason = ErrShuttingDown.Reason
	case s == nil:
		reason, detail = chat.ErrSessionNotActive.Reason, "no session with this chatId on this connection"
	default:
		reason, detail = s.enqueue(&request{scopeID: f.ScopeID, data: f.Data, requestID: f.RequestID})
	}
	c.mu.Unlock()
	if reason != "" {
		c.failed(quote(f.ChatID), f.RequestID, reason, "", detail)
	}
}

func (c *conn) disconnect(f *inFrame) {
	c.mu.Lock()
	s := c.sessions[f.ChatID]
	if s != nil {
		delete(c.sessions, f.ChatID)
	}
	c.mu.Unlock()
	if s == nil {
		c.log.Debug("ws: disconnect of an unknown chat", "chat", f.ChatID)
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

// armIdleLocked starts the timer closing a connection with no session.
func (c *conn) armIdleLocked() {
	if c.srv.cfg.idle <= 0 {
		return
	}
	if c.idleTimer == nil {
		c.idleTimer = time.AfterFunc(c.srv.cfg.idle, c.expireIdle)
		return
	}
	c.idleTimer.Reset(c.srv.cfg.idle)
}

func (c *conn) expireIdle() {
	c.mu.Lock()
	if c.live > 0 || c.closing || c.draining {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.log.Info("ws: closing a connection with no session", "idle", c.srv.cfg.idle)
	c.closeGracefully(websocket.StatusNormalClosure, "idle")
}

// closeGracefully writes the frames queued so far, then closes the
// connection with code.
func (c *conn) closeGracefully(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	if c.closeCode != 0 {
		c.mu.Unlock()
		return
	}
	c.closeCode, c.closeReason = code, reason
	c.mu.Unlock()
	_ = c.send(nil)
}

// drain starts a graceful shutdown of the connection: new requests fail,
// running and queued ones finish, then the connection closes.
func (c *conn) drain() {
	c.mu.Lock()
	c.draining = true
	c.mu.Unlock()
	go func() {
		c.workers.Wait()
		c.closeGracefully(websocket.StatusGoingAway, "server shutting down")
	}()
}

// abort cancels the requests in progress and closes the connection now.
func (c *conn) abort() {
	c.cancel()
	c.ws.CloseNow()
}

// teardown ends every session of the connection and releases it.
func (c *conn) teardown(err error) {
	c.cancel()
	// The reader is done (a close frame has been answered, if any): what
	// the sessions still write has nowhere to go.
	c.ws.CloseNow()
	if status := websocket.CloseStatus(err); status == -1 && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		c.log.Debug("ws: connection lost", "err", err)
	}
	c.mu.Lock()
	c.closing = true
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	sessions := make([]*session, 0, len(c.sessions))
	for _, s := range c.sessions {
		sessions = append(sessions, s)
	}
	clear(c.sessions)
	c.mu.Unlock()
	for _, s := range sessions {
		s.close()
	}
	c.workers.Wait()
	c.wmu.Lock()
	for c.writing {
		c.wcond.Wait()
	}
	c.wdone = true
	for _, b := range c.wq {
		c.srv.putFrame(b)
	}
	c.wq = nil
	c.wmu.Unlock()
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(bytes.ToValidUTF8(b[:n], nil)) + "…"
	}
	return string(bytes.ToValidUTF8(b, nil))
}
