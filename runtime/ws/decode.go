package ws

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// Decoding frames, in both directions: the client frames the server reads
// (decodeFrame) and the server frames the Go client reads
// (decodeServerFrame). Both scan the frame once with scanObject and keep
// the values as slices of it.

// inFrame is a decoded client frame. Fields are checked one by one so that
// a wrongly typed field gets a precise BadRequest.
type inFrame struct {
	Type      string
	ChatID    string
	Route     string // "" when missing or null: the default route
	ScopeID   string
	Data      json.RawMessage // nil when missing
	RequestID json.RawMessage // a JSON string or number, echoed verbatim; nil when missing
	Resume    *resumeRef      // Connect's resume, nil when missing or null
	// Interrupt: a ChatRouteMessage that stops the session's running and
	// queued requests and runs next ("interrupt": true).
	Interrupt bool
}

// A frameError is a client frame the server cannot serve. When answer is
// set the client gets a Failed (BadRequest) with detail, for chatID (""
// when the frame's chatId is too long to echo); otherwise the frame is
// logged and dropped.
type frameError struct {
	answer    bool
	chatID    string
	requestID json.RawMessage
	detail    string
}

func (e *frameError) Error() string {
	if !e.answer {
		return "ws: dropped frame: " + e.detail
	}
	return fmt.Sprintf("ws: bad frame for chat %q: %s", e.chatID, e.detail)
}

// badFrame returns the frameError answered to chatID.
func badFrame(chatID string, requestID json.RawMessage, detail string) *frameError {
	return &frameError{answer: true, chatID: chatID, requestID: requestID, detail: detail}
}

// rawFrame holds the fields of a client frame undecoded.
type rawFrame struct {
	Type      json.RawMessage `json:"type"`
	ChatID    json.RawMessage `json:"chatId"`
	Route     json.RawMessage `json:"route"`
	ScopeID   json.RawMessage `json:"scopeId"`
	Data      json.RawMessage `json:"data"`
	RequestID json.RawMessage `json:"requestId"`
	Resume    json.RawMessage `json:"resume"`
	Interrupt json.RawMessage `json:"interrupt"`
}

// decodeFrame parses one client frame. It never panics; any problem is a
// *frameError.
func decodeFrame(b []byte) (*inFrame, error) {
	var raw rawFrame
	err := scanObject(b, func(key, val []byte) {
		switch string(unescapeKey(key)) {
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
		case "resume":
			raw.Resume = val
		case "interrupt":
			raw.Interrupt = val
		}
	})
	if err != nil {
		if errors.Is(err, errInvalidJSON) {
			return nil, invalidJSON(b)
		}
		return nil, &frameError{detail: "not a JSON object: " + err.Error()}
	}
	f := &inFrame{}
	if rid := raw.RequestID; rid != nil && !isNull(rid) && validRequestID(rid) {
		f.RequestID = bytes.Clone(rid)
	}
	chatID, ok, err := stringField(raw.ChatID, "chatId")
	if err != nil || !ok || chatID == "" {
		return nil, &frameError{detail: "missing or invalid chatId"}
	}
	if len(chatID) > MaxChatIDLength {
		return nil, chatIDTooLong(f.RequestID)
	}
	f.ChatID = chatID
	bad := func(format string, args ...any) error {
		return badFrame(f.ChatID, f.RequestID, fmt.Sprintf(format, args...))
	}
	if rid := raw.RequestID; rid != nil && !isNull(rid) && f.RequestID == nil {
		if typ, _, _ := frameType(raw.Type); typ == TypeCancel {
			return nil, &frameError{detail: "Cancel with an invalid requestId"} // dropped: see below
		}
		return nil, bad("requestId must be a string or a number")
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
		if r := raw.Resume; r != nil && !isNull(r) {
			if f.Resume, err = decodeResume(r); err != nil {
				return nil, bad("%v", err)
			}
		}
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
		if v := raw.Interrupt; v != nil && !isNull(v) {
			switch string(bytes.TrimSpace(v)) {
			case "true":
				f.Interrupt = true
			case "false":
			default:
				return nil, bad("interrupt must be true or false")
			}
		}
	case TypeCancel:
		if f.RequestID == nil {
			// Not answered: a Failed without a requestId would end the
			// request a client waits for.
			return nil, &frameError{detail: "Cancel without a requestId"}
		}
	case TypeDisconnect:
	default:
		return nil, bad("unknown frame type %q", typ)
	}
	return f, nil
}

// unescapeKey returns key, the inside of a JSON string, decoded: keys
// written with escapes ("t\u0079pe") are the same keys to JSON, as to
// Quarkus' Jackson. Plain keys are returned as they are.
func unescapeKey(key []byte) []byte {
	if bytes.IndexByte(key, '\\') < 0 {
		return key
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, key...), '"'), &s); err != nil {
		return key
	}
	return []byte(s)
}

// invalidJSON is the error of a frame that is not valid JSON: answered
// when the frame still reads as an object whose chatId can be found (as
// for JSON nested deeper than encoding/json accepts), dropped otherwise.
func invalidJSON(b []byte) *frameError {
	detail := "invalid JSON"
	var v json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		detail = "invalid JSON: " + err.Error()
		if strings.Contains(err.Error(), "exceeded max depth") {
			detail = "invalid JSON: nested more than 10000 levels deep"
		}
	}
	chatID, requestID := recoverIDs(b)
	switch {
	case len(chatID) > MaxChatIDLength:
		return chatIDTooLong(requestID)
	case chatID != "":
		return badFrame(chatID, requestID, detail)
	}
	return &frameError{detail: "not a JSON object: " + detail}
}

// chatIDTooLong is the error of a frame whose chatId is longer than
// MaxChatIDLength: answered without echoing the id.
func chatIDTooLong(requestID json.RawMessage) *frameError {
	return badFrame("", requestID, fmt.Sprintf("chatId is longer than %d bytes", MaxChatIDLength))
}

// recoverIDs finds the chatId and requestId of a frame that is not valid
// JSON, reading its top-level keys as far as they are well formed.
func recoverIDs(b []byte) (chatID string, requestID json.RawMessage) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return "", nil
	}
	for i++; ; i++ { // after '{' or ','
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return chatID, requestID
		}
		end := skipString(b, i)
		if end >= len(b) || b[end-1] != '"' {
			return chatID, requestID // unterminated, or nothing after it
		}
		key := unescapeKey(b[i+1 : end-1])
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return chatID, requestID
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return chatID, requestID
		}
		vend := skipValue(b, i)
		val := b[i:vend]
		switch string(key) {
		case "chatId":
			if s, ok, err := stringField(val, "chatId"); ok && err == nil {
				chatID = s
			}
		case "requestId":
			if validRequestID(val) {
				requestID = bytes.Clone(val)
			}
		}
		i = skipSpace(b, vend)
		if i >= len(b) || b[i] != ',' {
			return chatID, requestID
		}
	}
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
		case TypeCancel:
			return TypeCancel, true, nil
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

// serverFrame is a server frame as the client reads it: slices of the
// frame's bytes, valid until the next frame is read.
type serverFrame struct {
	chatID, typ, data, requestID, scopeID, detail []byte
	// markdown and html are the fields of an event rendered from
	// markdown (see appendRendered).
	markdown, html              []byte
	conversationID, resumeToken []byte // on Connect's Completed, from a durable server
	replayed                    bool   // an event or terminator replayed for a re-sent request
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
		case "markdown":
			f.markdown = val
		case "html":
			f.html = val
		case "conversationId":
			f.conversationID = val
		case "resumeToken":
			f.resumeToken = val
		case "replayed":
			f.replayed = string(val) == "true"
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
		case protocol.EventMessage:
			return protocol.EventMessage
		case protocol.EventObject:
			return protocol.EventObject
		case protocol.EventThinking:
			return protocol.EventThinking
		case protocol.EventConsole:
			return protocol.EventConsole
		case protocol.EventError:
			return protocol.EventError
		case protocol.EventStream:
			return protocol.EventStream
		case protocol.EventCompleted:
			return protocol.EventCompleted
		case protocol.EventFailed:
			return protocol.EventFailed
		}
	}
	return text(raw)
}

// routeRequest parses the data of a ChatRouteMessage (valid JSON: the
// frame passed scanObject). The data of a chat message,
// {"userMessage":"<text>"}, becomes a chat.NewTextRequest without
// encoding/json, whose reflection made parsing the object about a tenth
// of the server's CPU in BenchmarkLoad (target: CPU per turn ≤ 1.5× the
// raw echo server's); the request is the same. Other data goes through
// chat.NewDataRequest.
func routeRequest(data []byte) (*chat.RouteRequest, error) {
	if text, ok := userMessageOnly(data); ok {
		return chat.NewTextRequest(text), nil
	}
	return chat.NewDataRequest(json.RawMessage(data))
}

// userMessageOnly returns the text of data if data is an object with the
// one key "userMessage" whose value is a string that encoding/json would
// encode as it is written (no escape, no HTML character, valid UTF-8
// without U+2028 or U+2029), so that the request decodes it the same way
// as chat.NewDataRequest would.
func userMessageOnly(data []byte) (string, bool) {
	const key = `"` + protocol.KeyUserMessage + `"`
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return "", false
	}
	i = skipSpace(data, i+1)
	if !bytes.HasPrefix(data[i:], []byte(key)) {
		return "", false
	}
	i = skipSpace(data, i+len(key))
	if i >= len(data) || data[i] != ':' {
		return "", false
	}
	i = skipSpace(data, i+1)
	if i >= len(data) || data[i] != '"' {
		return "", false
	}
	end := skipString(data, i)
	text := data[i+1 : end-1]
	if rest := skipSpace(data, end); rest >= len(data) || data[rest] != '}' || skipSpace(data, rest+1) != len(data) {
		return "", false
	}
	if !plainJSONString(text) || bytes.ContainsAny(text, "<>&") || bytes.Contains(text, []byte("\u2028")) || bytes.Contains(text, []byte("\u2029")) {
		return "", false
	}
	return string(text), true
}
