package chatimpl

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
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
//
// Its JSON form, which generated code registers with
// [Package.DescribeJSON], has the fields' names in lower case and leaves
// out empty ones; a schema is its JSON text as it is.
type Manifest struct {
	// Routes are the routes, sorted by name in a Router's manifest.
	Routes []RouteInfo `json:"routes"`
	// Events are the event types the package declares (//chat:event) with
	// their data: any route may send them, with chat.Response(ctx).Send.
	Events []EventInfo `json:"events,omitempty"`
	// Types are the named types the schemas refer to.
	Types []TypeInfo `json:"types,omitempty"`
}

// A RouteInfo describes one route.
type RouteInfo struct {
	// Name is the route's name.
	Name string `json:"name"`
	// Default marks the default route. chat.Router.Manifest sets it (a lone
	// route is the default); packages leave it false.
	Default bool `json:"default,omitempty"`
	// Streaming marks a route whose answer is streamed (Stream events).
	Streaming bool `json:"streaming,omitempty"`
	// Untyped marks a route registered without a description: its
	// parameters and events are not known.
	Untyped bool `json:"untyped,omitempty"`
	// Params are the request data keys the route reads, in the order of
	// the route's parameters. The user's text is the key "userMessage".
	// Every key may be left out: the parameter is then its zero value.
	Params []ParamInfo `json:"params,omitempty"`
	// Events are the events the route's results are sent as. A route
	// that runs another (Execute) or sends events itself may send more.
	Events []EventInfo `json:"events,omitempty"`
}

// A ParamInfo describes one request data key of a route.
type ParamInfo struct {
	Name   string     `json:"name"`   // the data key: the parameter's name, or "userMessage"
	Schema JSONSchema `json:"schema"` // the JSON type of its value
}

// An EventInfo describes one event type and its data.
type EventInfo struct {
	Type   string     `json:"type"`   // the event type
	Schema JSONSchema `json:"schema"` // the JSON type of its data
}

// A TypeInfo is a named type the schemas of a manifest refer to.
type TypeInfo struct {
	Name   string     `json:"name"`   // the name a schema refers to with "#/$defs/Name"
	Schema JSONSchema `json:"schema"` // its JSON type
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

// UnmarshalJSON sets s to the JSON text b as it is: a schema's text is
// what was written, not a re-encoding of it.
func (s *JSONSchema) UnmarshalJSON(b []byte) error {
	*s = JSONSchema(b)
	return nil
}

// DefsRef is the prefix of a reference to a named type of a [Manifest]
// in a schema: {"$ref": DefsRef + name}.
const DefsRef = "#/$defs/"

// DescribeJSON registers the manifest of the package's routes, text being
// the JSON form of a [Manifest] (generated code writes it as a constant).
// Text that is not such a manifest fails chat.NewRouter, with a check
// (see [Package.AddCheck]) naming the error. A later call, or
// [Package.Describe], replaces it.
func (p *Package) DescribeJSON(text string) {
	m, err := parseManifest(text)
	if err != nil {
		p.AddCheck(func() error { return err })
		return
	}
	p.Describe(m)
}

// ErrManifest is the error of a manifest registered as JSON that cannot be
// read (see [Package.DescribeJSON]).
var ErrManifest = errors.New("chatimpl: the manifest is not valid")

// parseManifest reads the JSON form of a manifest: unknown fields and
// trailing data are errors.
func parseManifest(text string) (*Manifest, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.DisallowUnknownFields()
	var m Manifest
	if err := d.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrManifest, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the manifest", ErrManifest)
	}
	return &m, nil
}
