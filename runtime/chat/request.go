package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"sync"

	"github.com/chatscopes/chatgen/runtime/protocol"
)

// A RouteRequest is the data of one chat request: the user's text and any
// other values, keyed by route parameter name. Build one with
// [NewTextRequest], [NewDataRequest] or [NewDataRequest].
type RouteRequest struct {
	userMessage string
	hasUser     bool
	data        map[string]json.RawMessage
}

// NewTextRequest returns a request carrying only the user's text.
func NewTextRequest(text string) *RouteRequest {
	return &RouteRequest{userMessage: text, hasUser: true}
}

// newJSONRequest parses request data: a JSON object (or null). The user's
// text is the string under "userMessage". A malformed object is an error
// matching [ErrBadRequest].
func newJSONRequest(data json.RawMessage) (*RouteRequest, error) {
	r := &RouteRequest{}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return r, nil
	}
	if trimmed[0] != '{' {
		return nil, fail(ErrBadRequest, errors.New("request data must be a JSON object"))
	}
	if err := json.Unmarshal(trimmed, &r.data); err != nil {
		return nil, fail(ErrBadRequest, fmt.Errorf("request data: %w", err))
	}
	for k, v := range r.data {
		if bytes.Equal(v, []byte("null")) { // JSON nulls are dropped, as in Quarkus
			delete(r.data, k)
		}
	}
	if raw, ok := r.data[protocol.KeyUserMessage]; ok {
		if err := decodeCoerced(raw, &r.userMessage); err != nil {
			return nil, fail(ErrBadRequest, &BadRequestError{Param: protocol.KeyUserMessage, Err: errors.New("must be a string")})
		}
		r.hasUser = true
	}
	return r, nil
}

// NewDataRequest returns a request with data: the JSON text of an object
// (or null) as a json.RawMessage, a map, a struct whose JSON form is an
// object, or a string, the user's text alone ([NewTextRequest]). The
// user's text is the string under "userMessage". Data that is not an
// object, or a malformed object, is an error matching [ErrBadRequest].
func NewDataRequest(data any) (*RouteRequest, error) {
	switch d := data.(type) {
	case json.RawMessage:
		return newJSONRequest(d)
	case string:
		return NewTextRequest(d), nil
	case map[string]any:
		return newMapRequest(d)
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("chat: encoding request data: %w", err)
	}
	return newJSONRequest(raw)
}

// newMapRequest is NewDataRequest for a map: each value is encoded on its
// own, which gives the request [NewDataRequest] would give for the map's
// JSON without encoding and parsing the whole object.
func newMapRequest(m map[string]any) (*RouteRequest, error) {
	r := &RouteRequest{}
	for k, v := range m {
		if k == protocol.KeyUserMessage {
			if s, ok := v.(string); ok {
				r.userMessage, r.hasUser = s, true
				continue
			}
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("chat: encoding request data: %w", err)
		}
		if bytes.Equal(raw, []byte("null")) { // JSON nulls are dropped
			continue
		}
		if k == protocol.KeyUserMessage {
			if err := decodeCoerced(raw, &r.userMessage); err != nil {
				return nil, fail(ErrBadRequest, &BadRequestError{Param: protocol.KeyUserMessage, Err: errors.New("must be a string")})
			}
			r.hasUser = true
		}
		if r.data == nil {
			r.data = make(map[string]json.RawMessage, len(m))
		}
		r.data[k] = raw
	}
	return r, nil
}

// UserMessage returns the user's text ("" when there is none).
func (r *RouteRequest) UserMessage() string {
	if r == nil {
		return ""
	}
	return r.userMessage
}

// HasUserMessage reports whether the request carries the user's text.
func (r *RouteRequest) HasUserMessage() bool { return r != nil && r.hasUser }

// Has reports whether the request data has key.
func (r *RouteRequest) Has(key string) bool {
	if r == nil {
		return false
	}
	if key == protocol.KeyUserMessage {
		return r.hasUser
	}
	_, ok := r.data[key]
	return ok
}

// Keys returns the request data keys, sorted.
func (r *RouteRequest) Keys() []string {
	if r == nil {
		return nil
	}
	keys := make([]string, 0, len(r.data)+1)
	for k := range r.data {
		keys = append(keys, k)
	}
	if r.hasUser && r.data[protocol.KeyUserMessage] == nil {
		keys = append(keys, protocol.KeyUserMessage)
	}
	slices.Sort(keys)
	return keys
}

// Decode stores the value of key in the value v points to. A missing key
// leaves v untouched (the zero value, for route parameters) and is not an
// error. A value that does not fit v is a *[BadRequestError] naming key.
func (r *RouteRequest) Decode(key string, v any) error {
	if r == nil {
		return nil
	}
	if key == protocol.KeyUserMessage && r.hasUser {
		if p, ok := v.(*string); ok {
			*p = r.userMessage
			return nil
		}
	}
	raw, ok := r.data[key]
	if !ok {
		if key == protocol.KeyUserMessage && r.hasUser {
			raw, _ = json.Marshal(r.userMessage)
		} else {
			return nil
		}
	}
	if err := decodeCoerced(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			err = fmt.Errorf("cannot use JSON %s as %s", te.Value, te.Type)
		}
		return &BadRequestError{Param: key, Err: err}
	}
	return nil
}

// Request returns the request being handled by the route running in ctx,
// or nil outside a route (the nil request has no data).
func Request(ctx context.Context) *RouteRequest {
	if rs := requestFrom(ctx); rs != nil {
		return &rs.req
	}
	return nil
}

// requestState is one request in progress. It is the one allocation of a
// request: the request data, the response channel and the request's
// context are held in it by value.
//
// Its size is part of the cost of every request: the garbage collector
// runs in proportion to the bytes allocated.
type requestState struct {
	ctx     requestContext
	req     RouteRequest // a copy of the transport's: requests are immutable
	resp    ResponseChannel
	conv    *conversation
	failure *routeError // the request's error and its route, once one failed
	depth   int32       // routes running: 1 for the request's own, more under Execute
	aborted bool        // AbortWipe was called: no wipe this request
	// run, for a request of Conversation.Run, runs in place of the route.
	run func(ctx context.Context) error
}

// requestContext is a request's context: its parent plus the request's
// binding, allocated with the request instead of as another context layer.
type requestContext struct {
	context.Context
	bind binding
}

// Value returns the request's binding for bindingKey and asks the parent
// for every other key.
func (c *requestContext) Value(key any) any {
	if _, ok := key.(bindingKey); ok { // cheaper than comparing interfaces
		return &c.bind
	}
	return c.Context.Value(key)
}

// A ResponseChannel sends events to the client of the current request, in
// order. It is safe for concurrent use (parallel tool calls, for example).
// Its methods fail with an error matching [ErrNotActive] outside a route
// and once the request is over.
type ResponseChannel struct {
	mu   sync.Mutex
	sink eventSink
	done bool
	// retracts counts the Retract events sent (see [ResponseChannel.Retracts]).
	retracts uint32
}

// Retracts returns the number of Retract events the request has sent so
// far: a sender that accumulates the streamed text (package
// runtime/markdown, which renders it when the stream ends) starts over
// when it changes. It is 0 outside a request.
func (c *ResponseChannel) Retracts() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return int(c.retracts)
}

// An eventSink is where the events of a request go: to the transport.
type eventSink interface {
	// event delivers ev.
	event(ev Event) error
	// text delivers an event whose data is text. It exists so that a
	// transport that hands text straight to a handler (the local client)
	// need not box it into an Event's Data first.
	text(typ, text string) error
}

// funcSink is the eventSink of a transport that takes events through a
// func, as [Conversation.Handle] does.
type funcSink func(Event) error

func (f funcSink) event(ev Event) error { return f(ev) }

func (f funcSink) text(typ, text string) error { return f(Event{Type: typ, Data: text}) }

// Response returns the response channel of the request being handled in
// ctx. Outside a route it returns a channel whose methods fail with
// [ErrNotActive].
func Response(ctx context.Context) *ResponseChannel {
	if rs := requestFrom(ctx); rs != nil {
		return &rs.resp
	}
	return nil
}

// Event sends an event of type typ with data v. The terminator types
// Completed and Failed are the transport's to send: they fail with
// [ErrReservedEvent].
func (c *ResponseChannel) Event(typ string, v any) error {
	if protocol.IsReserved(typ) {
		return fmt.Errorf("chat: sending %s event: %w", typ, ErrReservedEvent)
	}
	if c == nil {
		return fmt.Errorf("chat: sending %s event: %w", typ, errNoRequest)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return fmt.Errorf("chat: sending %s event: the request is over: %w", typ, ErrNotActive)
	}
	if typ == protocol.EventRetract {
		c.retracts++
	}
	return c.sink.event(Event{Type: typ, Data: v})
}

// text sends an event of type typ whose data is text: Event(typ, text)
// without boxing text.
func (c *ResponseChannel) text(typ, text string) error {
	if c == nil {
		return fmt.Errorf("chat: sending %s event: %w", typ, errNoRequest)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return fmt.Errorf("chat: sending %s event: the request is over: %w", typ, ErrNotActive)
	}
	return c.sink.text(typ, text)
}

var errNoRequest = fmt.Errorf("no route request in the context: %w", ErrNotActive)

// SendEvent sends ev as it is: its type, its data and, for a text
// rendered from markdown, its HTML. The terminator types Completed and
// Failed fail with [ErrReservedEvent].
func (c *ResponseChannel) SendEvent(ev Event) error {
	if protocol.IsReserved(ev.Type) {
		return fmt.Errorf("chat: sending %s event: %w", ev.Type, ErrReservedEvent)
	}
	if c == nil {
		return fmt.Errorf("chat: sending %s event: %w", ev.Type, errNoRequest)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return fmt.Errorf("chat: sending %s event: the request is over: %w", ev.Type, ErrNotActive)
	}
	if ev.Type == protocol.EventRetract {
		c.retracts++
	}
	return c.sink.event(ev)
}

// Message sends text as a Message event.
func (c *ResponseChannel) Message(text string) error { return c.text(protocol.EventMessage, text) }

// Object sends v as an Object event.
func (c *ResponseChannel) Object(v any) error { return c.Event(protocol.EventObject, v) }

// Thinking sends text as a Thinking event: progress while the route works.
func (c *ResponseChannel) Thinking(text string) error { return c.text(protocol.EventThinking, text) }

// Console sends text as a Console event.
func (c *ResponseChannel) Console(text string) error { return c.text(protocol.EventConsole, text) }

// Error sends text as an Error event. The request still completes; return
// an error from the route to fail it.
func (c *ResponseChannel) Error(text string) error { return c.text(protocol.EventError, text) }

// Send sends v as an event of the type it names: v must have a
// ChatEventType() string method, as types annotated with //chat:event do.
func (c *ResponseChannel) Send(v any) error {
	t, ok := v.(eventTyper)
	if !ok {
		return fmt.Errorf("chat: cannot send %T: it has no //chat:event type", v)
	}
	return c.Event(t.ChatEventType(), v)
}

// close stops the channel: events after the terminator are refused.
func (c *ResponseChannel) close() {
	c.mu.Lock()
	c.done = true
	c.mu.Unlock()
}

// SendValue sends a route's result as generated code maps it: nothing for
// nil (a nil pointer, map, slice, func or channel too), a string as Message
// ("" sends nothing), a value with a ChatEventType method as its own type,
// anything else as Object. It is generic so that a string result is sent without being
// boxed into an interface on the way.
func SendValue[T any](ctx context.Context, v T) error {
	if s, ok := any(v).(string); ok {
		if s == "" {
			return nil
		}
		return Response(ctx).text(protocol.EventMessage, s)
	}
	return sendAny(ctx, any(v))
}

// sendAny is SendValue for a value that is not a string.
func sendAny(ctx context.Context, v any) error {
	if v == nil || isNilValue(v) {
		return nil
	}
	if t, ok := v.(eventTyper); ok {
		return Response(ctx).Event(t.ChatEventType(), v)
	}
	return Response(ctx).Object(v)
}

// isNilValue reports whether v holds a nil pointer, map, slice, func or
// channel.
func isNilValue(v any) bool {
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

// Stream sends each chunk of seq as a Stream event.
func (c *ResponseChannel) Stream(seq iter.Seq[string]) error {
	if seq == nil {
		return nil
	}
	var err error
	for chunk := range seq {
		if err = c.text(protocol.EventStream, chunk); err != nil {
			break
		}
	}
	return err
}

// StreamWithErrors sends each chunk of seq as a Stream event. The
// sequence yields an error instead of a chunk when the stream fails: that
// stops it and fails the request with StreamingFailure (a *[StreamError]).
func (c *ResponseChannel) StreamWithErrors(seq iter.Seq2[string, error]) error {
	if seq == nil {
		return nil
	}
	for chunk, err := range seq {
		if err != nil {
			return &StreamError{Err: err}
		}
		if err := c.text(protocol.EventStream, chunk); err != nil {
			return err
		}
	}
	return nil
}
