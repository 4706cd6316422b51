package ws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	neturl "net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// ErrConnectionLost is the error of the requests pending when a client's
// connection ends without Close (the server went away, the network
// failed). It wraps the cause.
var ErrConnectionLost = errors.New("ws: connection lost")

// DefaultReadLimit is the default limit of the size of a server frame
// read by a [Client].
const DefaultReadLimit = 4 << 20

// DialOptions configures [Dial]. A nil *DialOptions, like the zero value,
// gives the defaults.
type DialOptions struct {
	// HTTPClient is the client of the upgrade request (nil:
	// http.DefaultClient).
	HTTPClient *http.Client

	// Header is added to the upgrade request (for example Authorization,
	// read by the server's [Authenticator], or Origin).
	Header http.Header

	// ReadLimit limits the size of a server frame in bytes (0:
	// [DefaultReadLimit]; negative: no limit).
	ReadLimit int64

	// WriteTimeout bounds the time to write a frame to the server (0 or
	// negative: [DefaultWriteTimeout]); a write that takes longer closes
	// the connection.
	WriteTimeout time.Duration

	// Logger is the client's logger (nil: [slog.Default]).
	Logger *slog.Logger
}

// withDefaults returns a copy of opts with the defaults filled in.
func (opts *DialOptions) withDefaults() DialOptions {
	var o DialOptions
	if opts != nil {
		o = *opts
	}
	o.Header = o.Header.Clone()
	switch {
	case o.ReadLimit == 0:
		o.ReadLimit = DefaultReadLimit
	case o.ReadLimit < 0:
		o.ReadLimit = -1
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// A Client is a connection to a chat routes websocket endpoint, carrying
// any number of sessions. It implements [chat.Client]: the same Builder
// and Session API as [chat.LocalClient]. Event handlers run on the
// client's reader goroutine, in event order; all events of a request are
// handled before its Chat or Send returns. A handler must not wait for
// another request of the same client (use ChatAsync).
type Client struct {
	ws      *websocket.Conn
	log     *slog.Logger
	timeout time.Duration // of each write

	// Writes: whoever writes while no one is writing writes the queue;
	// the reader goroutine never writes (it queues and, if needed, starts
	// a goroutine), so it never blocks on the network.
	out         writeQueue
	wtimer      *time.Timer // closes the connection when a write takes too long
	readerDone  chan struct{}
	dispatching atomic.Bool // the reader is running an event handler

	mu       sync.Mutex
	sessions map[string]*clientSession
	nextChat uint64
	nextReq  uint64
	closed   bool
	err      error // why the connection ended
}

var _ chat.Client = (*Client)(nil)

// Dial connects to the endpoint at url (ws://, wss://, http:// or https://;
// a URL with no path, or "/", gets [RoutesPath]). ctx bounds the handshake
// only. opts may be nil.
func Dial(ctx context.Context, url string, opts *DialOptions) (*Client, error) {
	o := opts.withDefaults()
	if u, err := neturl.Parse(url); err == nil && (u.Path == "" || u.Path == "/") {
		u.Path = RoutesPath
		url = u.String()
	}
	wc, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: o.Header, HTTPClient: o.HTTPClient})
	if err != nil {
		return nil, fmt.Errorf("ws: dial %s: %w", url, err)
	}
	wc.SetReadLimit(o.ReadLimit)
	c := &Client{
		ws:         wc,
		log:        o.Logger,
		timeout:    o.WriteTimeout,
		readerDone: make(chan struct{}),
		sessions:   map[string]*clientSession{},
	}
	c.out.init(c, 0)
	c.wtimer = time.AfterFunc(time.Hour, func() {
		c.log.Warn("ws: a write timed out; closing the connection", "timeout", c.timeout)
		c.ws.CloseNow()
	})
	c.wtimer.Stop()
	go c.readLoop()
	return c, nil
}

// Builder returns a builder for a new session.
func (c *Client) Builder() *chat.SessionBuilder { return chat.NewSessionBuilder(c) }

// Done is closed when the connection has ended (after Close, or when it
// was lost).
func (c *Client) Done() <-chan struct{} { return c.readerDone }

// Err returns why the connection ended, or nil while it is open.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Connect implements [chat.Connector]; use Builder().Connect. It sends
// Connect and waits for the server's reply: an unknown route is an error
// matching [chat.ErrRouteNotFound].
func (c *Client) Connect(ctx context.Context, route string, h *chat.Handlers) (chat.Session, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed || c.err != nil {
		err := c.err
		if err == nil || c.closed {
			err = chat.ErrSessionClosed
		}
		c.mu.Unlock()
		return nil, err
	}
	c.nextChat++
	s := &clientSession{c: c, id: "go-" + strconv.FormatUint(c.nextChat, 10), h: h}
	s.idJSON = quote(s.id)
	c.sessions[s.id] = s
	c.mu.Unlock()

	cc := &clientCall{ctx: ctx, connect: true, route: route, call: chat.NewCall()}
	s.enqueue(cc)
	select {
	case <-cc.call.Done():
		if err := cc.call.Err(); err != nil {
			c.forget(s)
			return nil, err
		}
		return s, nil
	case <-ctx.Done():
		_ = s.Close()
		return nil, ctx.Err()
	}
}

// Close ends every session (sending Disconnect), closes the connection and
// waits for the client's goroutines. Requests pending fail with
// [chat.ErrSessionClosed].
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		if !c.dispatching.Load() {
			<-c.readerDone
		}
		return nil
	}
	c.closed = true
	sessions := c.allSessions()
	c.mu.Unlock()
	for _, s := range sessions {
		_ = s.Close()
	}
	// Let the Disconnects go out (each write is bounded), then close with
	// the handshake; the reader sees the server's close frame.
	if !c.out.stop() {
		if err := c.ws.Close(websocket.StatusNormalClosure, ""); err != nil {
			c.log.Debug("ws: closing the client connection", "err", err)
		}
	}
	if c.dispatching.Load() {
		// Close was called from an event handler (or while one runs): the
		// reader ends when the handler returns.
		c.ws.CloseNow()
		c.lost(nil)
		return nil
	}
	select {
	case <-c.readerDone:
	case <-time.After(2 * c.timeout):
		c.ws.CloseNow()
		<-c.readerDone
	}
	c.lost(nil)
	return nil
}

func (c *Client) allSessions() []*clientSession {
	ss := make([]*clientSession, 0, len(c.sessions))
	for _, s := range c.sessions {
		ss = append(ss, s)
	}
	return ss
}

func (c *Client) forget(s *clientSession) {
	c.mu.Lock()
	if c.sessions[s.id] == s {
		delete(c.sessions, s.id)
	}
	c.mu.Unlock()
}

// lost records that the connection ended and fails every pending request.
func (c *Client) lost(cause error) {
	c.mu.Lock()
	if c.err == nil {
		switch {
		case c.closed:
			c.err = chat.ErrSessionClosed
		case cause == nil:
			c.err = ErrConnectionLost
		default:
			c.err = fmt.Errorf("%w: %w", ErrConnectionLost, cause)
		}
	}
	err := c.err
	sessions := c.allSessions()
	clear(c.sessions)
	c.mu.Unlock()
	c.wtimer.Stop()
	c.ws.CloseNow()
	for _, s := range sessions {
		s.fail(err)
	}
}

// write sends a frame: inline, the caller writes it (and what others
// queue meanwhile) unless someone is writing; otherwise a goroutine does.
func (c *Client) write(b []byte, inline bool) error {
	write, ok := c.out.push(b)
	if !ok {
		if err := c.Err(); err != nil {
			return err
		}
		return chat.ErrSessionClosed
	}
	switch {
	case !write:
	case inline:
		_ = c.out.flush() // a failure closes the connection: the reader fails what is pending
	default:
		go c.out.flush() //nolint:errcheck // as above
	}
	return nil
}

// writeFrames writes frames for c.out, each within the write timeout.
func (c *Client) writeFrames(batch [][]byte) error {
	for _, b := range batch {
		c.wtimer.Reset(c.timeout)
		err := c.ws.Write(context.Background(), websocket.MessageText, b)
		c.wtimer.Stop()
		if err != nil {
			c.ws.CloseNow() // the reader sees it and fails what is pending
			return err
		}
	}
	return nil
}

// dropFrame implements frameWriter; the client's frames are not pooled.
func (c *Client) dropFrame([]byte) {}

func (c *Client) readLoop() {
	defer close(c.readerDone)
	var buf bytes.Buffer
	for {
		_, r, err := c.ws.Reader(context.Background()) // Close and lost close the connection
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(r)
		}
		b := buf.Bytes()
		if err != nil {
			if websocket.CloseStatus(err) == -1 {
				c.lost(err)
			} else {
				c.lost(fmt.Errorf("closed by the server: %w", err))
			}
			return
		}
		var f serverFrame
		if err := decodeServerFrame(b, &f); err != nil {
			c.log.Warn("ws: dropped a frame from the server", "err", err, "frame", truncate(b, 200))
			continue
		}
		chatID := f.chatID
		if len(chatID) >= 2 && chatID[0] == '"' {
			chatID = chatID[1 : len(chatID)-1] // our ids need no unescaping
		}
		c.mu.Lock()
		s := c.sessions[string(chatID)]
		c.mu.Unlock()
		if s == nil {
			c.log.Debug("ws: a frame for an unknown chat", "chat", string(f.chatID), "type", string(f.typ))
			continue
		}
		s.receive(&f)
	}
}
