package ws

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/coder/websocket"
)

// How a connection ends: closed when idle, drained by Shutdown, aborted
// by Close or a failed write, torn down when reading ends.

// armIdleLocked starts the timer closing a connection with no session;
// the caller holds c.mu.
func (c *conn) armIdleLocked() {
	idle := c.srv.opts.IdleTimeout
	if idle <= 0 {
		return
	}
	if c.idleTimer == nil {
		c.idleTimer = time.AfterFunc(idle, c.expireIdle)
		return
	}
	c.idleTimer.Reset(idle)
}

func (c *conn) expireIdle() {
	c.mu.Lock()
	if c.live > 0 || c.closing || c.draining {
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	c.log(slog.LevelInfo, "ws: closing a connection with no session", "idle", c.srv.opts.IdleTimeout)
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
		c.handOver()
		c.closeGracefully(websocket.StatusGoingAway, "server shutting down")
	}()
}

// handOver lets go of the durable conversations of a draining connection
// whose requests have ended, before the connection closes: each is saved
// and its lease released, so that the client, told 1001, resumes it at
// once on another node rather than finding it busy until this one has
// let go (after the close handshake, on a slow store, a second or more).
// The requests of those sessions that arrive meanwhile are left for the
// client to send again elsewhere, like those of the sessions still open.
func (c *conn) handOver() {
	c.mu.Lock()
	var durable []*session
	for id, s := range c.sessions {
		if s.dur != nil {
			durable = append(durable, s)
			if c.handedOver == nil {
				c.handedOver = map[string]bool{}
			}
			c.handedOver[id] = true
		}
	}
	c.mu.Unlock()
	for _, s := range durable {
		s.closeKeeping()
	}
}

// abortTurns cancels the requests of durable conversations too (see
// conn.turnCtx): the server is going away without waiting for them.
func (c *conn) abortTurns() {
	c.turnCancel()
}

// abort closes the connection now and cancels the requests in progress
// (but the turns of durable conversations: abortTurns). The connection goes
// first, so that what a cancelled request answers (Failed ServerError) is
// never written: the client sees the connection lost. It does not wait:
// closing the network connection first makes a close handshake in progress
// (which waits up to 5 s for a client that does not read) fail at once, so
// that CloseNow, which waits for it, returns.
func (c *conn) abort() {
	_ = c.sock.closeNet()
	c.cancel()
	c.ws.CloseNow()
}

// teardown ends every session of the connection and releases it; the
// waiter calls it once reading has ended with err.
func (c *conn) teardown(err error) {
	c.cancel()
	// Reading is over (a close frame has been answered, if any): what the
	// sessions still write has nowhere to go.
	c.ws.CloseNow()
	if websocket.CloseStatus(err) == -1 && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.log(slog.LevelDebug, "ws: connection lost", "err", err)
	}
	c.mu.Lock()
	c.closing = true
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	c.stopKeepaliveLocked()
	sessions := make([]*session, 0, len(c.sessions))
	for _, s := range c.sessions {
		sessions = append(sessions, s)
	}
	clear(c.sessions)
	c.mu.Unlock()
	for _, s := range sessions {
		s.closeKeeping() // lost, not closed by the client: a durable conversation stays resumable
	}
	c.workers.Wait()
	c.turnCancel()
	c.out.stop()
}
