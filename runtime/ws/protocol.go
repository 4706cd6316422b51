package ws

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// Frame types a client sends.
const (
	TypeConnect          = "Connect"          // start a session on a route
	TypeChatRouteMessage = "ChatRouteMessage" // one request of a session
	TypeDisconnect       = "Disconnect"       // end a session (no reply)
)

// Failure reasons this transport adds to those of package chat. Match them
// with errors.Is, as [chat.Failure] compares reasons.
var (
	// ErrTooManySessions fails a Connect beyond the connection's session
	// limit (see [WithMaxSessions]).
	ErrTooManySessions = &chat.Failure{Reason: "TooManySessions"}
	// ErrTooManyRequests fails a request beyond the session's queue limit
	// (see [WithMaxQueued]).
	ErrTooManyRequests = &chat.Failure{Reason: "TooManyRequests"}
	// ErrShuttingDown fails requests received while the server shuts down.
	ErrShuttingDown = &chat.Failure{Reason: "ShuttingDown"}
)

// inFrame is a decoded client frame. Fields are checked one by one so that
// a wrongly typed field gets a precise BadRequest.
type inFrame struct {
	Type      string
	ChatID    string
	Route     string // "" when missing or null: the default route
	ScopeID   string
	Data      json.RawMessage // nil when missing
	RequestID json.RawMessage // a JSON string or number, echoed verbatim; nil when missing
}

// A frameError is a client frame the server cannot serve. When chatID is
// known the client gets a Failed (BadRequest) with detail; otherwise the
// frame is logged and dropped.
type frameError struct {
	chatID    string
	requestID json.RawMessage
	detail    string
}

func (e *frameError) Error() string {
	if e.chatID == "" {
		return "ws: dropped frame: " + e.detail
	}
	return fmt.Sprintf("ws: bad frame for chat %q: %s", e.chatID, e.detail)
}

// rawFrame holds the fields of a client frame undecoded.
type rawFrame struct {
	Type      json.RawMessage `json:"type"`
	ChatID    json.RawMessage `json:"chatId"`
	Route     json.RawMessage `json:"route"`
	ScopeID   json.RawMessage `json:"scopeId"`
	Data      json.RawMessage `json:"data"`
	RequestID json.RawMessage `json:"requestId"`
}

// decodeFrame parses one client frame. It never panics; any problem is a
// *frameError.
func decodeFrame(b []byte) (*inFrame, error) {
	var raw rawFrame
	err := scanObject(b, func(key, val []byte) {
		switch string(key) {
		case "type":
			raw.Type = val
		case "chatId":
			raw.ChatID = val
		case "route":
			raw.Route = val
		case "scopeId":
			raw.ScopeID = val
		case "data":
			raw.Data = val
		case "requestId":
			raw.RequestID = val
		}
	})
	if err != nil {
		return nil, &frameError{detail: "not a JSON object: " + err.Error()}
	}
	f := &inFrame{}
	chatID, ok, err := stringField(raw.ChatID, "chatId")
	if err != nil || !ok || chatID == "" {
		return nil, &frameError{detail: "missing or invalid chatId"}
	}
	f.ChatID = chatID
	bad := func(format string, args ...any) error {
		return &frameError{chatID: f.ChatID, requestID: f.RequestID, detail: fmt.Sprintf(format, args...)}
	}
	if rid := raw.RequestID; rid != nil && !isNull(rid) {
		if !validRequestID(rid) {
			return nil, bad("requestId must be a string or a number")
		}
		f.RequestID = bytes.Clone(rid)
	}
	typ, ok, err := frameType(raw.Type)
	switch {
	case err != nil:
		return nil, bad("type must be a string")
	case !ok || typ == "":
		return nil, bad("missing type")
	}
	f.Type = typ
	switch typ {
	case TypeConnect:
		route, _, err := stringField(raw.Route, "route")
		if err != nil {
			return nil, bad("route must be a string or null")
		}
		f.Route = route
	case TypeChatRouteMessage:
		scope, ok, err := stringField(raw.ScopeID, "scopeId")
		if err != nil || !ok {
			return nil, bad("missing or invalid scopeId")
		}
		f.ScopeID = scope
		if d := raw.Data; d != nil {
			if t := bytes.TrimSpace(d); len(t) > 0 && t[0] != '{' && !isNull(t) {
				return nil, bad("data must be a JSON object")
			}
			f.Data = bytes.Clone(d)
		}
	case TypeDisconnect:
	default:
		return nil, bad("unknown frame type %q", typ)
	}
	return f, nil
}

// frameType is stringField for the type, without allocating for the
// protocol's own types.
func frameType(v json.RawMessage) (string, bool, error) {
	if len(v) >= 2 && v[0] == '"' {
		switch string(v[1 : len(v)-1]) {
		case TypeChatRouteMessage:
			return TypeChatRouteMessage, true, nil
		case TypeConnect:
			return TypeConnect, true, nil
		case TypeDisconnect:
			return TypeDisconnect, true, nil
		}
	}
	return stringField(v, "type")
}

// stringField returns the string v holds: ok is false when v is missing
// or null; err is set when it holds another kind of value.
func stringField(v json.RawMessage, key string) (s string, ok bool, err error) {
	if v == nil || isNull(v) {
		return "", false, nil
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && plainJSONString(v[1:len(v)-1]) {
		return string(v[1 : len(v)-1]), true, nil
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false, errors.New(key + " must be a string")
	}
	return s, true, nil
}

// plainJSONString reports whether b, the inside of a JSON string, needs
// no unescaping: no backslash, quote or control character, valid UTF-8.
func plainJSONString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= 0x80 {
			return utf8.Valid(b)
		}
	}
	return true
}

func isNull(v []byte) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// validRequestID reports whether v is a JSON string or number of at most
// 128 bytes.
func validRequestID(v []byte) bool {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || len(v) > 128 {
		return false
	}
	if v[0] == '"' {
		var s string
		return json.Unmarshal(v, &s) == nil
	}
	_, err := strconv.ParseFloat(string(v), 64)
	return err == nil && json.Valid(v)
}

// appendFrame appends the JSON of a server frame to dst: chatID must be
// a JSON string already (see quote), data the event's JSON, requestID the
// client's request id (or nil). scopeID and detail are added when not
// empty (on Failed frames).
func appendFrame(dst, chatID []byte, typ string, data, requestID []byte, scopeID, detail string) []byte {
	dst = appendHead(dst, chatID, typ)
	if len(data) == 0 {
		data = []byte("null")
	}
	dst = append(dst, data...)
	return appendTail(dst, requestID, scopeID, detail)
}

// appendHead appends a server frame up to its data.
func appendHead(dst, chatID []byte, typ string) []byte {
	dst = append(dst, `{"chatId":`...)
	dst = append(dst, chatID...)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, typ)
	return append(dst, `,"data":`...)
}

// appendTail appends the rest of a server frame after its data.
func appendTail(dst, requestID []byte, scopeID, detail string) []byte {
	if len(requestID) > 0 {
		dst = append(dst, `,"requestId":`...)
		dst = append(dst, requestID...)
	}
	if scopeID != "" {
		dst = append(dst, `,"scopeId":`...)
		dst = appendString(dst, scopeID)
	}
	if detail != "" {
		dst = append(dst, `,"detail":`...)
		dst = appendString(dst, detail)
	}
	return append(dst, '}')
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	if isPlainASCII(s) {
		return strconv.AppendQuote(dst, s)
	}
	return append(dst, quote(s)...)
}

// isPlainASCII reports whether s holds printable ASCII only, with no quote
// or backslash: its Go quoting is its JSON quoting.
func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// quote returns s as a JSON string.
func quote(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// appendData appends the JSON of an event's data to dst.
func appendData(dst []byte, ev chat.Event) ([]byte, error) {
	switch d := ev.Data.(type) {
	case string:
		return appendString(dst, d), nil
	case nil:
		if raw, err := ev.Raw(); err == nil && raw != nil {
			return append(dst, raw...), nil
		}
		return append(dst, "null"...), nil
	}
	b, err := json.Marshal(ev.Data)
	if err != nil {
		return dst, fmt.Errorf("ws: encoding %s event: %w", ev.Type, err)
	}
	return append(dst, b...), nil
}
