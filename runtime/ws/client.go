package ws

import (
	"bytes"
	"context"
	"encoding/json"
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

// A DialOption configures [Dial].
type DialOption func(*dialConfig)

type dialConfig struct {
	header     http.Header
	httpClient *http.Client
	logger     *slog.Logger
	readLimit  int64
	timeout    time.Duration
}

// WithHeader adds headers to the upgrade request (for example
// Authorization, read by the server's [Authenticator], or Origin).
func WithHeader(h http.Header) DialOption {
	return func(c *dialConfig) {
		if c.header == nil {
			c.header = http.Header{}
		}
		for k, vs := range h {
			for _, v := range vs {
				c.header.Add(k, v)
			}
		}
	}
}

// WithHTTPClient sets the HTTP client of the upgrade request.
func WithHTTPClient(hc *http.Client) DialOption { return func(c *dialConfig) { c.httpClient = hc } }

// WithClientLogger sets the client's logger (default [slog.Default]).
func WithClientLogger(l *slog.Logger) DialOption { return func(c *dialConfig) { c.logger = l } }

// WithReadLimit limits the size of a server frame (default 4 MiB).
func WithReadLimit(n int64) DialOption { return func(c *dialConfig) { c.readLimit = n } }

// A Client is a connection to a chat routes websocket endpoint, carrying
// any number of sessions. It implements [chat.Client]: the same Builder
// and Session API as [chat.LocalClient]. Event handlers run on the
// client's reader goroutine, in event order; all events of a request are
// handled before its Chat or Send returns. A handler must not wait for
// another request of the same client (use ChatAsync).
type Client struct {
	ws      *websocket.Conn
	log     *slog.Logger
	timeout time.Duration

	// Writes: whoever writes while no one is writing writes the queue;
	// the reader goroutine never writes (it queues and, if needed, starts
	// a goroutine), so it never blocks on the network.
	wmu     sync.Mutex
	wcond   sync.Cond
	wq      [][]byte
	writing bool
	wdone   bool

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
// only.
func Dial(ctx context.Context, url string, opts ...DialOption) (*Client, error) {
	cfg := dialConfig{logger: slog.Default(), readLimit: 4 << 20, timeout: DefaultWriteTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	if u, err := neturl.Parse(url); err == nil && (u.Path == "" || u.Path == "/") {
		u.Path = RoutesPath
		url = u.String()
	}
	wc, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: cfg.header, HTTPClient: cfg.httpClient})
	if err != nil {
		return nil, fmt.Errorf("ws: dial %s: %w", url, err)
	}
	wc.SetReadLimit(cfg.readLimit)
	c := &Client{
		ws:         wc,
		log:        cfg.logger,
		timeout:    cfg.timeout,
		readerDone: make(chan struct{}),
		sessions:   map[string]*clientSession{},
	}
	c.wcond.L = &c.wmu
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
	c.wmu.Lock()
	for c.writing {
		c.wcond.Wait()
	}
	closed := c.wdone
	c.wdone = true
	c.wmu.Unlock()
	if !closed {
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
	c.wmu.Lock()
	if c.wdone {
		c.wmu.Unlock()
		if err := c.Err(); err != nil {
			return err
		}
		return chat.ErrSessionClosed
	}
	c.wq = append(c.wq, b)
	if c.writing {
		c.wmu.Unlock()
		return nil
	}
	c.writing = true
	c.wmu.Unlock()
	if inline {
		c.flush()
	} else {
		go c.flush()
	}
	return nil
}

func (c *Client) flush() {
	for {
		c.wmu.Lock()
		batch := c.wq
		c.wq = nil
		if len(batch) == 0 {
			c.writing = false
			c.wcond.Broadcast()
			c.wmu.Unlock()
			return
		}
		c.wmu.Unlock()
		for _, b := range batch {
			c.wtimer.Reset(c.timeout)
			err := c.ws.Write(context.Background(), websocket.MessageText, b)
			c.wtimer.Stop()
			if err != nil {
				c.wmu.Lock()
				c.wdone, c.writing, c.wq = true, false, nil
				c.wcond.Broadcast()
				c.wmu.Unlock()
				c.ws.CloseNow() // the reader sees it and fails what is pending
				return
			}
		}
	}
}

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

// clientSession is one session of a Client. Its requests are sent one at
// a time: each waits for the terminator of the one before, so it is sent
// with the scope id current after it.
type clientSession struct {
	c      *Client
	id     string
	idJSON []byte
	h      *chat.Handlers

	mu       sync.Mutex
	scopeID  string
	queue    []*clientCall
	inflight *clientCall
	closed   bool
}

type clientCall struct {
	ctx       context.Context
	connect   bool
	route     string
	data      []byte // the request data, a JSON object
	requestID uint64
	call      *chat.Call
}

var _ chat.Session = (*clientSession)(nil)

func (s *clientSession) ScopeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scopeID
}

func (s *clientSession) Chat(ctx context.Context, text string) error {
	return s.ChatAsync(ctx, text).Wait(ctx)
}

func (s *clientSession) Send(ctx context.Context, data any) error {
	return s.SendAsync(ctx, data).Wait(ctx)
}

func (s *clientSession) ChatAsync(ctx context.Context, text string) *chat.Call {
	b := make([]byte, 0, len(text)+20)
	b = append(b, `{"userMessage":`...)
	b = appendString(b, text)
	b = append(b, '}')
	return s.request(ctx, b)
}

func (s *clientSession) SendAsync(ctx context.Context, data any) *chat.Call {
	if text, ok := data.(string); ok {
		return s.ChatAsync(ctx, text)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return finishedCall(fmt.Errorf("ws: encoding request data: %w", err))
	}
	if len(b) == 0 || (b[0] != '{' && string(b) != "null") {
		return finishedCall(&chat.Failure{Reason: chat.ErrBadRequest.Reason, Err: fmt.Errorf("request data %T is not a JSON object", data)})
	}
	return s.request(ctx, b)
}

func (s *clientSession) request(ctx context.Context, data []byte) *chat.Call {
	if err := ctx.Err(); err != nil {
		return finishedCall(err)
	}
	cc := &clientCall{ctx: ctx, data: data, call: chat.NewCall()}
	s.enqueue(cc)
	return cc.call
}

// enqueue queues cc and sends it if no request is in flight.
func (s *clientSession) enqueue(cc *clientCall) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cc.call.Finish(chat.ErrSessionClosed)
		return
	}
	s.queue = append(s.queue, cc)
	s.mu.Unlock()
	s.next(true)
}

// next sends the next queued request unless one is in flight. inline
// says whether the caller may write (not the reader goroutine).
func (s *clientSession) next(inline bool) {
	for {
		var failed *clientCall
		var ferr error
		var frame []byte
		s.mu.Lock()
		if s.inflight != nil || len(s.queue) == 0 {
			s.mu.Unlock()
			return
		}
		cc := s.queue[0]
		s.queue[0] = nil
		s.queue = s.queue[1:]
		if err := cc.ctx.Err(); err != nil {
			failed, ferr = cc, err
		} else {
			s.c.mu.Lock()
			s.c.nextReq++
			cc.requestID = s.c.nextReq
			s.c.mu.Unlock()
			frame = s.frame(cc)
			s.inflight = cc
		}
		s.mu.Unlock()
		if failed != nil {
			failed.call.Finish(ferr)
			continue
		}
		if err := s.c.write(frame, inline); err != nil {
			s.mu.Lock()
			if s.inflight == cc {
				s.inflight = nil
			}
			s.mu.Unlock()
			cc.call.Finish(err)
			continue
		}
		return
	}
}

// frame returns the wire frame of cc; s.mu is held.
func (s *clientSession) frame(cc *clientCall) []byte {
	b := make([]byte, 0, 96+len(cc.data)+len(s.scopeID))
	b = append(b, `{"chatId":`...)
	b = append(b, s.idJSON...)
	if cc.connect {
		b = append(b, `,"type":"Connect"`...)
		if cc.route != "" {
			b = append(b, `,"route":`...)
			b = appendString(b, cc.route)
		}
	} else {
		b = append(b, `,"type":"ChatRouteMessage","scopeId":`...)
		b = appendString(b, s.scopeID)
		b = append(b, `,"data":`...)
		b = append(b, cc.data...)
	}
	b = append(b, `,"requestId":`...)
	b = strconv.AppendUint(b, cc.requestID, 10)
	return append(b, '}')
}

// receive handles a frame of this session, on the reader goroutine.
func (s *clientSession) receive(f *serverFrame) {
	typ := eventType(f.typ)
	if typ != chat.EventCompleted && typ != chat.EventFailed {
		s.dispatch(chat.NewWireEvent(typ, bytes.Clone(f.data)))
		return
	}
	s.mu.Lock()
	cc := s.inflight
	if cc == nil || (len(f.requestID) > 0 && !bytes.Equal(f.requestID, strconv.AppendUint(make([]byte, 0, 20), cc.requestID, 10))) {
		s.mu.Unlock()
		s.c.log.Debug("ws: a terminator matches no request", "chat", s.id, "type", typ, "requestId", string(f.requestID))
		return
	}
	s.inflight = nil
	var err error
	if typ == chat.EventCompleted {
		if len(f.data) < 2 || string(f.data[1:len(f.data)-1]) != s.scopeID {
			if scope := text(f.data); scope != "" {
				s.scopeID = scope
			}
		}
	} else {
		data := text(f.data)
		if scope := text(f.scopeID); scope != "" {
			s.scopeID = scope
		}
		fl := &chat.Failure{Reason: data}
		if detail := text(f.detail); detail != "" {
			fl.Err = errors.New(detail)
		}
		err = fl
		if cc.connect {
			s.closed = true
		}
	}
	done := s.closed && len(s.queue) == 0
	s.mu.Unlock()
	cc.call.Finish(err)
	if done {
		s.c.forget(s)
		return
	}
	s.next(false)
}

func (s *clientSession) dispatch(ev chat.Event) {
	s.c.dispatching.Store(true)
	defer s.c.dispatching.Store(false)
	defer func() {
		if v := recover(); v != nil {
			s.c.log.Error("ws: an event handler panicked", "chat", s.id, "type", ev.Type, "panic", v)
		}
	}()
	s.h.Dispatch(ev)
}

// Close ends the session: queued requests fail with [chat.ErrSessionClosed],
// Disconnect is sent, and the request in flight, if any, still ends with
// its own terminator.
func (s *clientSession) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	queued := s.queue
	s.queue = nil
	idle := s.inflight == nil
	s.mu.Unlock()
	for _, cc := range queued {
		cc.call.Finish(chat.ErrSessionClosed)
	}
	b := make([]byte, 0, 40+len(s.idJSON))
	b = append(b, `{"type":"Disconnect","chatId":`...)
	b = append(b, s.idJSON...)
	b = append(b, '}')
	_ = s.c.write(b, true)
	if idle {
		s.c.forget(s)
	}
	return nil
}

// fail ends every pending request of the session with err.
func (s *clientSession) fail(err error) {
	s.mu.Lock()
	pending := s.queue
	if s.inflight != nil {
		pending = append([]*clientCall{s.inflight}, pending...)
	}
	s.inflight, s.queue, s.closed = nil, nil, true
	s.mu.Unlock()
	for _, cc := range pending {
		cc.call.Finish(err)
	}
}

// serverFrame is a server frame as the client reads it: slices of the
// frame's bytes, valid until the next frame is read.
type serverFrame struct {
	chatID, typ, data, requestID, scopeID, detail []byte
}

// decodeServerFrame parses a server frame.
func decodeServerFrame(b []byte, f *serverFrame) error {
	err := scanObject(b, func(key, val []byte) {
		switch string(key) {
		case "chatId":
			f.chatID = val
		case "type":
			f.typ = val
		case "data":
			f.data = val
		case "requestId":
			f.requestID = val
		case "scopeId":
			f.scopeID = val
		case "detail":
			f.detail = val
		}
	})
	if err != nil {
		return err
	}
	if len(f.typ) < 2 || f.typ[0] != '"' {
		return errors.New("missing type")
	}
	return nil
}

// text returns the string in a raw JSON value ("" if it is not a string).
func text(raw []byte) string {
	s, _, err := stringField(raw, "")
	if err != nil {
		return ""
	}
	return s
}

// eventType returns the type of a frame, without allocating for the
// protocol's own types.
func eventType(raw []byte) string {
	if len(raw) >= 2 {
		switch string(raw[1 : len(raw)-1]) {
		case chat.EventMessage:
			return chat.EventMessage
		case chat.EventObject:
			return chat.EventObject
		case chat.EventThinking:
			return chat.EventThinking
		case chat.EventConsole:
			return chat.EventConsole
		case chat.EventError:
			return chat.EventError
		case chat.EventStream:
			return chat.EventStream
		case chat.EventCompleted:
			return chat.EventCompleted
		case chat.EventFailed:
			return chat.EventFailed
		}
	}
	return text(raw)
}
