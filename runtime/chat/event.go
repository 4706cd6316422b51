package chat

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// ErrReservedEvent is the error of a route that sends an event of a
// terminator type (Completed or Failed): only the transport ends a
// request, so that a client never takes a route's event for the reply.
var ErrReservedEvent = errors.New("chat: Completed and Failed are reserved: they end a request, and only the transport sends them")

// ErrPaused is matched (errors.Is) by the error of a route that stopped to
// wait for the user, such as an AI service whose turn waits for the user
// to confirm a tool call (package ai): the request completes (Completed),
// its state is kept (and saved, for a durable conversation), and no error
// handler sees it.
var ErrPaused = errors.New("chat: the route waits for the user")

// An Event is one event of a request: a type and its data.
//
// On the server, Data is the Go value the route sent. Clients receive
// events whose Data is that value (local client) or its JSON text as a
// json.RawMessage (websocket client, and any transport that received it
// over the wire); either way [Event.Decode] fills a typed value. Its types are
// named in package protocol ([protocol.EventMessage], …).
type Event struct {
	Type string
	Data any
	// HTML is the event's text rendered from markdown to safe HTML, set
	// for the text answers of routes marked //chat:markdown (package
	// chatgen/runtime/markdown renders them): on a Message, the rendering
	// of its text (Data); on the Stream event with no text that closes a
	// rendered stream, the rendering of the whole streamed answer. It is
	// "" on every other event. Package chat carries it and never renders.
	HTML string
}

// Raw returns the JSON form of the event's data.
func (e Event) Raw() (json.RawMessage, error) {
	if raw, ok := e.Data.(json.RawMessage); ok && raw != nil {
		return raw, nil
	}
	return json.Marshal(e.Data)
}

// Decode stores the event's data in the value v points to. Data of the
// same type is assigned as it is; anything else goes through JSON.
func (e Event) Decode(v any) error {
	if _, wire := e.Data.(json.RawMessage); !wire && e.Data != nil {
		rv := reflect.ValueOf(v)
		if rv.Kind() == reflect.Pointer && !rv.IsNil() {
			dv := reflect.ValueOf(e.Data)
			if dv.Type().AssignableTo(rv.Elem().Type()) {
				rv.Elem().Set(dv)
				return nil
			}
		}
	}
	raw, err := e.Raw()
	if err != nil {
		return fmt.Errorf("chat: decoding %s event: %w", e.Type, err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("chat: decoding %s event: %w", e.Type, err)
	}
	return nil
}

// Text returns the event's data as text: the string itself for the text
// events (Message, Thinking, Console, Error, Stream), else its JSON.
func (e Event) Text() string {
	if s, ok := e.Data.(string); ok {
		return s
	}
	if raw, ok := e.Data.(json.RawMessage); ok && raw != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		return string(raw)
	}
	if e.Data == nil {
		return ""
	}
	raw, err := json.Marshal(e.Data)
	if err != nil {
		return fmt.Sprint(e.Data)
	}
	return string(raw)
}

// An eventTyper names the event type its values are sent as. Generated
// code implements it for types annotated with //chat:event.
type eventTyper interface {
	ChatEventType() string
}
