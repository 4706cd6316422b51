package ws

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
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

	// Reconnect, when not nil, makes the client replace a lost connection
	// (see [ReconnectOptions]). Nil: a lost connection ends the client and
	// fails what is pending with [ErrConnectionLost].
	Reconnect *ReconnectOptions

	// OnConnectionState, when not nil, is called when the client's
	// connection changes state: Reconnecting (with the cause), Connected
	// (again), Closed (with why). It runs on the client's goroutines and
	// must not block.
	OnConnectionState func(state ConnectionState, err error)
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
	if o.Reconnect != nil {
		r := o.Reconnect.withDefaults()
		o.Reconnect = &r
	}
	return o
}

// A Client is a connection to a chat routes websocket endpoint, carrying
// any number of sessions. It implements [chat.Client]: the same Builder
// and Session API as [chat.LocalClient]. Event handlers run on the
// client's reader goroutine, in event order; all events of a request are
// handled before its Chat or Send returns. A handler must not wait for
// another request of the same client (use ChatAsync).
//
// With [DialOptions.Reconnect], a lost connection is replaced: see
// [ReconnectOptions].
type Client struct {
	log     *slog.Logger
	timeout time.Duration // of each write
	dial    func(ctx context.Context) (*websocket.Conn, error)
	recon   *ReconnectOptions            // nil: no reconnection
	onState func(ConnectionState, error) // nil for none
	done    chan struct{}                // closed when the client has ended for good
	stop    chan struct{}                // closed by Close: stops reconnecting
	// reqPrefix starts every requestId of the client: `"` and a random
	// nonce of the client, then "-"; a counter follows. A server compares
	// the first requestId after a resume with that of the answer it saved
	// (durable.go): a new client resuming a conversation must not send
	// the id of the request another client lost, as a counter alone would.
	reqPrefix []byte

	dispatching atomic.Bool // the reader is running an event handler

	mu       sync.Mutex
	link     *link // the connection; nil while reconnecting
	state    ConnectionState
	sessions map[string]*clientSession
	nextChat uint64
	nextReq  uint64
	closed   bool
	err      error // why the client ended
}

// A link is one websocket connection of a Client.
//
// Writes: whoever writes while no one is writing writes the queue; the
// reader goroutine never writes (it queues and, if needed, starts a
// goroutine), so it never blocks on the network.
type link struct {
	c          *Client
	ws         *websocket.Conn
	out        writeQueue
	wtimer     *time.Timer // closes the connection when a write takes too long
	readerDone chan struct{}
}

var (
	_ chat.Client = (*Client)(nil)
)

// Dial connects to the endpoint at url (ws://, wss://, http:// or https://;
// a URL with no path, or "/", gets [RoutesPath]). ctx bounds the handshake
// only. opts may be nil.
func Dial(ctx context.Context, url string, opts *DialOptions) (*Client, error) {
	o := opts.withDefaults()
	if u, err := neturl.Parse(url); err == nil && (u.Path == "" || u.Path == "/") {
		u.Path = RoutesPath
		url = u.String()
	}
	c := &Client{
		log:      o.Logger,
		timeout:  o.WriteTimeout,
		recon:    o.Reconnect,
		onState:  o.OnConnectionState,
		done:     make(chan struct{}),
		stop:     make(chan struct{}),
		sessions: map[string]*clientSession{},
	}
	c.reqPrefix = requestIDPrefix()
	c.dial = func(ctx context.Context) (*websocket.Conn, error) {
		wc, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: o.Header, HTTPClient: o.HTTPClient})
		if err != nil {
			return nil, fmt.Errorf("ws: dial %s: %w", url, err)
		}
		wc.SetReadLimit(o.ReadLimit)
		return wc, nil
	}
	wc, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.link = c.newLink(wc)
	go c.link.readLoop()
	return c, nil
}

// requestIDPrefix returns the start of the request ids of a new client:
// `"`, 12 random bytes in hex, and "-".
func requestIDPrefix() []byte {
	var nonce [12]byte
	rand.Read(nonce[:]) // never fails (crypto/rand)
	b := make([]byte, 0, 2+hex.EncodedLen(len(nonce)))
	b = append(b, '"')
	b = hex.AppendEncode(b, nonce[:])
	return append(b, '-')
}

// newRequestID returns the requestId of a new request, as JSON: a string
// that no other client sends (see reqPrefix).
func (c *Client) newRequestID() []byte {
	c.mu.Lock()
	c.nextReq++
	n := c.nextReq
	c.mu.Unlock()
	b := make([]byte, 0, len(c.reqPrefix)+21)
	b = append(b, c.reqPrefix...)
	b = strconv.AppendUint(b, n, 10)
	return append(b, '"')
}

// newLink returns a link over wc; its reader is not started.
func (c *Client) newLink(wc *websocket.Conn) *link {
	l := &link{c: c, ws: wc, readerDone: make(chan struct{})}
	l.out.init(l, 0)
	l.wtimer = time.AfterFunc(time.Hour, func() {
		c.log.Warn("ws: a write timed out; closing the connection", "timeout", c.timeout)
		wc.CloseNow()
	})
	l.wtimer.Stop()
	return l
}

// Builder returns a builder for a new session.
func (c *Client) Builder() *chat.SessionBuilder { return chat.NewSessionBuilder(c) }

// Done is closed when the client has ended: after Close, or when its
// connection was lost (and, with [DialOptions.Reconnect], could not be
// replaced).
func (c *Client) Done() <-chan struct{} { return c.done }

// Err returns why the client ended, or nil while it is open (or
// reconnecting).
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

	cc := &clientCall{ctx: ctx, connect: true, route: route, call: new(chat.Call)}
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
// [chat.ErrSessionClosed]. To leave the conversations resumable, use
// [Client.Detach].
func (c *Client) Close() error { return c.end(false) }

// Detach ends the client as Close does, but without ending the
// conversations of its sessions that the server keeps (their Connect was
// answered with a resume token): no Disconnect is sent for them, and the
// server keeps them in its store, to be resumed, by this process or
// another, on any server over the same store, with Builder().Resume and
// each session's ConversationID and ResumeToken (read after Detach
// returns: a resume that was under way when Detach was called is awaited,
// for a while, so that ResumeToken is the token it rotated). Sessions of a
// server that keeps no conversations are closed as Close closes them. The
// same semantics as [chat.LocalClient.Detach].
//
// Requests pending fail with [chat.ErrSessionClosed]. A request the
// server is running goes on there: its answer is saved with the
// conversation but not delivered (a new client's first request, with
// another requestId, is not taken for it). Wait for a request's answer
// before Detach to get it.
func (c *Client) Detach() error { return c.end(true) }

// end is Close (detach false) or Detach.
func (c *Client) end(detach bool) error {
	c.mu.Lock()
	if c.closed {
		l := c.link
		c.mu.Unlock()
		if l != nil && !c.dispatching.Load() {
			<-l.readerDone
		}
		return nil
	}
	c.closed = true
	close(c.stop)
	sessions := c.allSessions()
	l := c.link
	c.mu.Unlock()
	if detach && l != nil && !c.dispatching.Load() {
		c.awaitResumes(sessions)
	}
	for _, s := range sessions {
		if !detach || !s.end(true) {
			_ = s.Close()
		}
	}
	if l == nil {
		// Reconnecting: there is no connection to close.
		c.lost(nil, nil)
		return nil
	}
	// Let the Disconnects go out (each write is bounded), then close with
	// the handshake; the reader sees the server's close frame.
	if !l.out.stop() {
		if err := l.ws.Close(websocket.StatusNormalClosure, ""); err != nil {
			c.log.Debug("ws: closing the client connection", "err", err)
		}
	}
	if c.dispatching.Load() {
		// Close was called from an event handler (or while one runs): the
		// reader ends when the handler returns.
		l.ws.CloseNow()
		c.lost(l, nil)
		return nil
	}
	select {
	case <-l.readerDone:
	case <-time.After(2 * c.timeout):
		l.ws.CloseNow()
		<-l.readerDone
	}
	c.lost(l, nil)
	return nil
}

// awaitResumes waits, for Detach, until the resuming Connects in flight
// of sessions are answered, so that their sessions' ResumeToken is the
// one the server rotated, for at most twice the write timeout (or until
// the connection is lost). Their queued requests fail at once; none is
// sent after.
func (c *Client) awaitResumes(sessions []*clientSession) {
	var waits []<-chan struct{}
	for _, s := range sessions {
		if w := s.holdForDetach(); w != nil {
			waits = append(waits, w)
		}
	}
	if len(waits) == 0 {
		return
	}
	timer := time.NewTimer(2 * c.timeout)
	defer timer.Stop()
	for _, w := range waits {
		select {
		case <-w:
		case <-c.done:
			return
		case <-timer.C:
			c.log.Warn("ws: detaching: a session's resume was not answered; its resume token may have been rotated", "timeout", 2*c.timeout)
			return
		}
	}
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

// lost records that the connection l ended with cause (nil l: the client
// was closed while reconnecting). Without reconnection, or once the client
// is closed, the client is over and every pending request fails;
// otherwise the sessions that can be resumed wait for a new connection.
func (c *Client) lost(l *link, cause error) {
	c.mu.Lock()
	if l != nil && c.link != l {
		c.mu.Unlock()
		return // an old connection
	}
	c.link = nil
	if l != nil {
		l.wtimer.Stop()
		l.ws.CloseNow()
	}
	closed := c.closed
	reconnect := c.recon != nil && !closed && c.err == nil
	c.mu.Unlock()
	switch {
	case reconnect:
		c.reconnect(cause)
	case closed:
		c.finish(chat.ErrSessionClosed)
	case cause == nil:
		c.finish(ErrConnectionLost)
	default:
		c.finish(fmt.Errorf("%w: %w", ErrConnectionLost, cause))
	}
}

// finish ends the client for good with err (unless it ended already) and
// fails every pending request.
func (c *Client) finish(err error) {
	c.mu.Lock()
	first := c.err == nil
	if first {
		c.err = err
		c.state = StateClosed
	}
	err = c.err
	sessions := c.allSessions()
	clear(c.sessions)
	c.mu.Unlock()
	for _, s := range sessions {
		s.fail(err)
	}
	if first {
		close(c.done)
		c.notify(StateClosed, err)
	}
}

// write sends a frame on the current connection: see writeOn.
func (c *Client) write(b []byte, inline bool) error {
	c.mu.Lock()
	l := c.link
	c.mu.Unlock()
	return c.writeOn(l, b, inline)
}

// writeOn sends a frame on l: inline, the caller writes it (and what
// others queue meanwhile) unless someone is writing; otherwise a goroutine
// does. Without a connection (l is nil, or l was lost) the frame is
// dropped with no error while the client reconnects: the sessions send
// their requests again once resumed.
func (c *Client) writeOn(l *link, b []byte, inline bool) error {
	c.mu.Lock()
	closed, err, recon := c.closed, c.err, c.recon != nil
	c.mu.Unlock()
	if l == nil {
		switch {
		case err != nil:
			return err
		case closed || !recon:
			return chat.ErrSessionClosed
		}
		return nil
	}
	write, ok := l.out.push(b)
	if !ok {
		switch {
		case recon && !closed && err == nil:
			return nil // the connection is being replaced
		case err != nil:
			return err
		}
		return chat.ErrSessionClosed
	}
	switch {
	case !write:
	case inline:
		_ = l.out.flush() // a failure closes the connection: the reader fails what is pending
	default:
		go l.out.flush() //nolint:errcheck // as above
	}
	return nil
}

// currentLink returns the connection (nil once the client has ended), and
// whether the client is replacing it (then there is none).
func (c *Client) currentLink() (l *link, reconnecting bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.link, c.link == nil && c.recon != nil && !c.closed && c.err == nil
}

// writeFrames writes frames for l.out, each within the write timeout.
func (l *link) writeFrames(batch [][]byte) error {
	for _, b := range batch {
		l.wtimer.Reset(l.c.timeout)
		err := l.ws.Write(context.Background(), websocket.MessageText, b)
		l.wtimer.Stop()
		if err != nil {
			l.ws.CloseNow() // the reader sees it and fails what is pending
			return err
		}
	}
	return nil
}

// dropFrame implements frameWriter; the client's frames are not pooled.
func (l *link) dropFrame([]byte) {}

func (l *link) readLoop() {
	c := l.c
	defer close(l.readerDone)
	var buf bytes.Buffer
	for {
		_, r, err := l.ws.Reader(context.Background()) // Close and lost close the connection
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(r)
		}
		b := buf.Bytes()
		if err != nil {
			if websocket.CloseStatus(err) == -1 {
				c.lost(l, err)
			} else {
				c.lost(l, fmt.Errorf("closed by the server: %w", err))
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
