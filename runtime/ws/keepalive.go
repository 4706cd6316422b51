package ws

import (
	"context"
	"log/slog"
	"time"
)

// Keepalive: every ServerOptions.PingInterval the server pings the
// client, and closes the connection if the pong does not come within
// ServerOptions.WriteTimeout. A peer that vanished without closing its
// TCP connection (a laptop closed, a NAT that forgot the flow) is thus
// noticed within PingInterval + WriteTimeout: without pings, the server
// would only notice when writing to it failed, or at IdleTimeout.
//
// The pong is read like any client frame, by a pool worker holding the
// read role, which gives the role back at once (tcpConn.stopAtBoundary):
// a pinged idle connection still costs only its waiter.

// startKeepalive arms the first ping.
func (c *conn) startKeepalive() {
	d := c.srv.opts.PingInterval
	if d <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closing {
		c.pingTimer = time.AfterFunc(d, c.ping)
	}
}

// ping pings the client and waits for its pong, on the timer's goroutine;
// it arms the next ping, or closes the connection.
func (c *conn) ping() {
	timeout := c.srv.opts.WriteTimeout
	ctx, cancel := context.WithTimeout(c.ctx, timeout)
	err := c.ws.Ping(ctx)
	cancel()
	c.mu.Lock()
	closing := c.closing || c.closeCode != 0
	if err == nil && !closing {
		c.pingTimer.Reset(c.srv.opts.PingInterval)
	}
	c.mu.Unlock()
	if err != nil && !closing && c.ctx.Err() == nil {
		c.log(slog.LevelInfo, "ws: the client did not answer a ping; closing the connection", "timeout", timeout, "err", err)
		c.abort()
	}
}

// stopKeepaliveLocked stops the pings; the caller holds c.mu and has set
// c.closing, so that no ping in progress arms another.
func (c *conn) stopKeepaliveLocked() {
	if c.pingTimer != nil {
		c.pingTimer.Stop()
	}
}
