package chatimpl

import (
	"encoding/json"
	"fmt"
)

// A Manifest describes routes to clients: the request data each route
// takes and the events the routes send, with the JSON types of both.
// chatgen generates one per package and registers it with
// [Package.Describe]; chat.Router.Manifest merges those of a router's
// packages, and runtime/ws serves the result to browsers as an ES module
// with TypeScript declarations.
//
// Types are JSON Schemas of the JSON that encoding/json reads and writes
// for the Go types. Named types (structs, and string or number types with
// a typed const block) are listed once in Types and referred to as
// {"$ref":"#/$defs/Name"}.
type Manifest struct {
	// Routes are the routes, sorted by name in a Router's manifest.
	Routes []RouteInfo
	// Events are the event types the package declares (//chat:event) with
	// their data: any route may send them, with chat.Response(ctx).Send.
	Events []EventInfo
	// Types are the named types the schemas refer to.
	Types []TypeInfo
}

// A RouteInfo describes one route.
type RouteInfo struct {
	// Name is the route's name.
	Name string
	// Default marks the default route. chat.Router.Manifest sets it (a lone
	// route is the default); packages leave it false.
	Default bool
	// Streaming marks a route whose answer is streamed (Stream events).
	Streaming bool
	// Untyped marks a route registered without a description: its
	// parameters and events are not known.
	Untyped bool
	// Params are the request data keys the route reads, in the order of
	// the route's parameters. The user's text is the key "userMessage".
	// Every key may be left out: the parameter is then its zero value.
	Params []ParamInfo
	// Events are the events the route's results are sent as. A route
	// that runs another (Execute) or sends events itself may send more.
	Events []EventInfo
}

// A ParamInfo describes one request data key of a route.
type ParamInfo struct {
	Name   string     // the data key: the parameter's name, or "userMessage"
	Schema JSONSchema // the JSON type of its value
}

// An EventInfo describes one event type and its data.
type EventInfo struct {
	Type   string     // the event type
	Schema JSONSchema // the JSON type of its data
}

// A TypeInfo is a named type the schemas of a manifest refer to.
type TypeInfo struct {
	Name   string     // the name a schema refers to with "#/$defs/Name"
	Schema JSONSchema // its JSON type
}

// A JSONSchema is a JSON Schema as JSON text. The empty schema "" (like
// "{}") allows any value.
type JSONSchema string

// MarshalJSON returns the schema as JSON: {} for the empty schema, an
// error for text that is not JSON.
func (s JSONSchema) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte("{}"), nil
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("chatimpl: a JSON schema is not JSON: %.40q", string(s))
	}
	return []byte(s), nil
}

// DefsRef is the prefix of a reference to a named type of a [Manifest]
// in a schema: {"$ref": DefsRef + name}.
const DefsRef = "#/$defs/"
