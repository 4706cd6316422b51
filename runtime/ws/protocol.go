package ws

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// Frame types a client sends.
const (
	TypeConnect          = "Connect"          // start a session on a route
	TypeChatRouteMessage = "ChatRouteMessage" // one request of a session
	TypeDisconnect       = "Disconnect"       // end a session (no reply)
	// TypeCancel stops one request of a session, running or queued: it
	// ends with Failed Cancelled (an addition to the protocol of Quarkus
	// LangChain4j Chat Scopes, whose clients never send it; see
	// docs/protocol.md).
	TypeCancel = "Cancel"
)

// Failure reasons this transport adds to those of package chat. Match them
// with errors.Is, as [chat.Failure] compares reasons.
var (
	// ErrTooManySessions fails a Connect beyond the connection's session
	// limit (see [ServerOptions.MaxSessions]).
	ErrTooManySessions = &chat.Failure{Reason: "TooManySessions"}
	// ErrTooManyRequests fails a request beyond the session's queue limit
	// (see [ServerOptions.MaxQueued]).
	ErrTooManyRequests = &chat.Failure{Reason: "TooManyRequests"}
	// ErrShuttingDown fails requests received while the server shuts down.
	ErrShuttingDown = &chat.Failure{Reason: "ShuttingDown"}
	// ErrRequestTimeout fails a request that ran longer than
	// [ServerOptions.RequestTimeout].
	ErrRequestTimeout = &chat.Failure{Reason: "RequestTimeout"}
)

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

// appendData appends the JSON of an event's data to dst. The data of a
// Message rendered from markdown is its HTML, as pages written for
// Quarkus' @MarkdownToHtml expect (see appendRendered).
func appendData(dst []byte, ev chat.Event) ([]byte, error) {
	if ev.HTML != "" && ev.Type == protocol.EventMessage {
		return appendString(dst, ev.HTML), nil
	}
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

// appendRendered appends the fields of an event rendered from markdown
// (chat.Event.HTML set): a Message, whose data is the HTML, carries its
// markdown source in "markdown"; any other event (the Stream event that
// closes a rendered stream) keeps its data and carries the HTML in "html".
// Other events get nothing: old clients see the frames they know.
func appendRendered(dst []byte, ev chat.Event) []byte {
	if ev.HTML == "" {
		return dst
	}
	if ev.Type == protocol.EventMessage {
		dst = append(dst, `,"markdown":`...)
		return appendString(dst, ev.Text())
	}
	dst = append(dst, `,"html":`...)
	return appendString(dst, ev.HTML)
}
