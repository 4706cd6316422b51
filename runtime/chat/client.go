package chat

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/chatscopes/chatgen/runtime/protocol"
)

// A Client opens chat sessions. The local client ([NewLocalClient]) and the
// websocket client (ws.Dial) implement it: one API, two transports.
type Client interface {
	// Builder returns a builder for a new session.
	Builder() *SessionBuilder
	// Close ends every session of the client and destroys their scopes.
	Close() error
}

// A Session is one conversation of a client. Requests on a session are
// processed one at a time, in the order they were made; all events of a
// request reach the handlers, in order, before the request's Chat or Send
// returns. A request that ends with Failed returns a *[Failure].
//
// Cancelling the context of a request stops it (the Stop button of a chat
// UI): the route's context is cancelled with the cause [ErrCancelled]
// (see [Cancelled]), and the request ends with an error matching
// ErrCancelled and context.Canceled — a stop, not an error: OnError is
// not called, and no event of the request reaches the handlers after it
// ended. An AI service keeps the interrupted turn in memory.
type Session interface {
	// Chat sends the user's text to the current route and waits for the
	// request to end.
	Chat(ctx context.Context, text string) error
	// Send sends data (a map or a struct whose JSON is an object; its
	// keys name route parameters) and waits for the request to end.
	Send(ctx context.Context, data any) error
	// ChatAsync is Chat without waiting.
	ChatAsync(ctx context.Context, text string) *Call
	// SendAsync is Send without waiting.
	SendAsync(ctx context.Context, data any) *Call
	// ScopeID returns the id of the scope the session is in.
	ScopeID() string
	// ConversationID returns the id of the session's conversation (the id
	// of its top scope), with which a client resumes it.
	ConversationID() string
	// ResumeToken returns the token with which a client resumes the
	// session's conversation after a reconnect or a restart (see
	// [SessionBuilder.Resume]), or "" when the server keeps no
	// conversations. It changes with every resume.
	ResumeToken() string
	// Close ends the session's conversation. Queued requests fail with
	// [ErrSessionClosed]. The local client lets the request in progress
	// finish; the websocket client fails it with ErrSessionClosed at once
	// and the server cancels it.
	Close() error
}

// ErrSessionClosed is the error of requests made on, or queued in, a
// closed session.
var ErrSessionClosed = errors.New("chat: session closed")

// A Call is a request in flight, from ChatAsync or SendAsync. Its zero
// value is a call in flight: transports implementing [Session] make one,
// new(chat.Call), per asynchronous request and end it with [Call.Finish].
type Call struct {
	once sync.Once
	done chan struct{}
	err  error
}

// ch returns the channel closed when the call ends, made on first use.
func (c *Call) ch() chan struct{} {
	c.once.Do(func() { c.done = make(chan struct{}) })
	return c.done
}

// Finish ends the call with err (nil for Completed). It must be called
// exactly once.
func (c *Call) Finish(err error) {
	done := c.ch()
	c.err = err
	close(done)
}

// Done is closed when the request has ended and its events were handled.
func (c *Call) Done() <-chan struct{} { return c.ch() }

// Err returns the request's error once Done is closed (nil before).
func (c *Call) Err() error {
	select {
	case <-c.ch():
		return c.err
	default:
		return nil
	}
}

// Wait waits for the request to end and returns its error, or ctx's error
// if ctx ends first (the request goes on).
func (c *Call) Wait(ctx context.Context) error {
	select {
	case <-c.ch():
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A Connector opens sessions for a [SessionBuilder]. Each transport
// implements it; applications do not need to.
type Connector interface {
	Connect(ctx context.Context, route string, h *Handlers) (Session, error)
}

// Handlers are the event handlers of a session, by event type.
type Handlers struct {
	builtin [numBuiltinEvents]handler // by builtinEvent: no map lookup
	byType  map[string]handler        // the other types (//chat:event)
	def     func(Event)
}

// numBuiltinEvents is the number of builtinEvent indexes.
const numBuiltinEvents = 6

// builtinEvent returns the index in Handlers.builtin of an event type of
// the protocol that handlers take, or -1 for any other type.
func builtinEvent(typ string) int {
	switch typ {
	case protocol.EventMessage:
		return 0
	case protocol.EventStream:
		return 1
	case protocol.EventThinking:
		return 2
	case protocol.EventObject:
		return 3
	case protocol.EventConsole:
		return 4
	case protocol.EventError:
		return 5
	}
	return -1
}

// get returns the handler of typ (the zero handler when there is none).
func (h *Handlers) get(typ string) handler {
	if i := builtinEvent(typ); i >= 0 {
		return h.builtin[i]
	}
	return h.byType[typ]
}

// set makes fn the handler of typ.
func (h *Handlers) set(typ string, fn handler) {
	if i := builtinEvent(typ); i >= 0 {
		h.builtin[i] = fn
		return
	}
	h.byType[typ] = fn
}

// A handler handles the events of one type. At most one field is set.
type handler struct {
	event func(Event)
	text  func(string) // OnMessage and the other handlers of text
}

// Dispatch calls the handler of ev's type, or the default handler. Events
// without either are dropped. Transports call it in event order.
func (h *Handlers) Dispatch(ev Event) {
	switch fn := h.get(ev.Type); {
	case fn.text != nil:
		fn.text(ev.Text())
	case fn.event != nil:
		fn.event(ev)
	case h.def != nil:
		h.def(ev)
	}
}

// dispatchText is Dispatch(Event{Type: typ, Data: text}) that builds the
// Event only for a handler that takes one.
func (h *Handlers) dispatchText(typ, text string) {
	switch fn := h.get(typ); {
	case fn.text != nil:
		fn.text(text)
	case fn.event != nil:
		fn.event(Event{Type: typ, Data: text})
	case h.def != nil:
		h.def(Event{Type: typ, Data: text})
	}
}

func (h *Handlers) clone() *Handlers {
	c := &Handlers{builtin: h.builtin, byType: make(map[string]handler, len(h.byType)), def: h.def}
	for k, v := range h.byType {
		c.byType[k] = v
	}
	return c
}

// A SessionBuilder collects event handlers and connects a session. A
// builder may connect several sessions; each gets its own copy of the
// handlers registered so far.
type SessionBuilder struct {
	conn Connector
	h    Handlers
	// The client tools (OnClientTool) and OnClientToolAnswered.
	tools        map[string]ClientToolFunc
	toolAnswered func(protocol.ClientToolCall, error)
}

// NewSessionBuilder returns a builder connecting through conn. Transports
// call it from their Builder method.
func NewSessionBuilder(conn Connector) *SessionBuilder {
	return &SessionBuilder{conn: conn, h: Handlers{byType: map[string]handler{}}}
}

func (b *SessionBuilder) text(typ string, fn func(string)) *SessionBuilder {
	b.h.set(typ, handler{text: fn})
	return b
}

// OnMessage handles Message events.
func (b *SessionBuilder) OnMessage(fn func(text string)) *SessionBuilder {
	return b.text(protocol.EventMessage, fn)
}

// OnError handles Error events.
func (b *SessionBuilder) OnError(fn func(text string)) *SessionBuilder {
	return b.text(protocol.EventError, fn)
}

// OnThinking handles Thinking events.
func (b *SessionBuilder) OnThinking(fn func(text string)) *SessionBuilder {
	return b.text(protocol.EventThinking, fn)
}

// OnConsole handles Console events.
func (b *SessionBuilder) OnConsole(fn func(text string)) *SessionBuilder {
	return b.text(protocol.EventConsole, fn)
}

// OnStream handles Stream events: one call per chunk.
func (b *SessionBuilder) OnStream(fn func(chunk string)) *SessionBuilder {
	return b.text(protocol.EventStream, fn)
}

// OnRetract handles Retract events: the Stream chunks of the current
// request received so far are withdrawn (an AI service's output guardrail
// refused or changed the answer); drop them from the display. Chunks
// that follow belong to the replacement.
func (b *SessionBuilder) OnRetract(fn func(protocol.Retraction)) *SessionBuilder {
	return b.On(protocol.EventRetract, func(ev Event) {
		var r protocol.Retraction
		_ = ev.Decode(&r) // a Retract without data still withdraws
		fn(r)
	})
}

// OnObject handles Object events; decode the value with [Event.Decode].
func (b *SessionBuilder) OnObject(fn func(Event)) *SessionBuilder {
	return b.On(protocol.EventObject, fn)
}

// On handles events of type typ (for example a //chat:event type).
func (b *SessionBuilder) On(typ string, fn func(Event)) *SessionBuilder {
	b.h.set(typ, handler{event: fn})
	return b
}

// OnDefault handles events of every type without a handler of its own.
func (b *SessionBuilder) OnDefault(fn func(Event)) *SessionBuilder {
	b.h.def = fn
	return b
}

// Connect starts a session on route ("" means the default route). An
// unknown route is an error matching [ErrRouteNotFound].
func (b *SessionBuilder) Connect(ctx context.Context, route string) (Session, error) {
	return b.open(b.h.clone(), func(h *Handlers) (Session, error) { return b.conn.Connect(ctx, route, h) })
}

// A resumer is a [Connector] that can resume a durable conversation: one
// with a Resume method of this signature, as the local client and the
// websocket client have.
type resumer interface {
	Resume(ctx context.Context, conversationID, token string, h *Handlers) (Session, error)
}

// Resume opens a session on the durable conversation conversationID,
// saved by a server with a [chatstore.ConversationStore] (see [Router.Resume]): the
// session goes on where the conversation was, in the same scope and route,
// with its durable beans and chat memories. token is the session's last
// [Session.ResumeToken]; the new session has a new one. An unknown,
// expired or foreign conversation, or a wrong token, is an error matching
// [ErrResumeRefused]; a conversation another node still serves,
// [ErrConversationBusy] (try again later).
func (b *SessionBuilder) Resume(ctx context.Context, conversationID, token string) (Session, error) {
	r, ok := b.conn.(resumer)
	if !ok {
		return nil, fmt.Errorf("chat: %T cannot resume conversations", b.conn)
	}
	return b.open(b.h.clone(), func(h *Handlers) (Session, error) { return r.Resume(ctx, conversationID, token, h) })
}
