package ws

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/internal/e2e"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// fakeWS is a websocket fed by a test, and its socket: wait takes the
// next frame sent on in, Reader returns it, Write records the server's
// frames.
type fakeWS struct {
	in        chan []byte
	closed    chan struct{}
	closeOnce sync.Once
	intr      chan struct{} // interrupt's signal

	pending    []byte // the frame wait took; used by the read role only
	hasPending bool
	eof        bool

	mu    sync.Mutex
	out   [][]byte
	terms int // terminators written
	wrote chan struct{}
}

func newFakeWS() *fakeWS {
	return &fakeWS{in: make(chan []byte), closed: make(chan struct{}), intr: make(chan struct{}, 1), wrote: make(chan struct{}, 1)}
}

func (f *fakeWS) wait() error {
	if f.hasPending {
		return nil
	}
	if f.eof {
		return io.EOF
	}
	select {
	case b, ok := <-f.in:
		if !ok {
			f.eof = true
			return io.EOF
		}
		f.pending, f.hasPending = b, true
		return nil
	case <-f.closed:
		return errors.New("closed")
	case <-f.intr:
		return errors.New("interrupted")
	}
}

func (f *fakeWS) buffered() bool { return f.hasPending }

func (f *fakeWS) interrupt() {
	select {
	case f.intr <- struct{}{}:
	default:
	}
}

func (f *fakeWS) resume() {
	select {
	case <-f.intr:
	default:
	}
}

func (f *fakeWS) cork()               {}
func (f *fakeWS) uncork() error       { return nil }
func (f *fakeWS) stopAtBoundary(bool) {}
func (f *fakeWS) closeNet() error     { return f.CloseNow() }

func (f *fakeWS) Ping(context.Context) error { return nil }

func (f *fakeWS) Reader(ctx context.Context) (websocket.MessageType, io.Reader, error) {
	if f.hasPending {
		b := f.pending
		f.pending, f.hasPending = nil, false
		return websocket.MessageText, bytes.NewReader(b), nil
	}
	select {
	case <-f.closed:
		return 0, nil, errors.New("closed")
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
}

func (f *fakeWS) Write(ctx context.Context, typ websocket.MessageType, p []byte) error {
	var fr struct{ Type string }
	_ = json.Unmarshal(p, &fr)
	f.mu.Lock()
	f.out = append(f.out, bytes.Clone(p))
	if fr.Type == protocol.EventCompleted || fr.Type == protocol.EventFailed {
		f.terms++
	}
	f.mu.Unlock()
	select {
	case f.wrote <- struct{}{}:
	default:
	}
	return nil
}

func (f *fakeWS) Close(websocket.StatusCode, string) error { return f.CloseNow() }

func (f *fakeWS) CloseNow() error {
	f.closeOnce.Do(func() { close(f.closed) })
	return nil
}

// waitTerms waits until n terminators were written.
func (f *fakeWS) waitTerms(n int) bool {
	deadline := time.After(5 * time.Second)
	for {
		f.mu.Lock()
		got := f.terms
		f.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-f.wrote:
		case <-deadline:
			return false
		}
	}
}

// lastScope returns the data of the last Completed frame.
func (f *fakeWS) lastScope() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.out) - 1; i >= 0; i-- {
		var fr frame
		if json.Unmarshal(f.out[i], &fr) == nil && fr.Type == protocol.EventCompleted {
			return fr.text()
		}
	}
	return ""
}

// terminatorsFor is the number of terminators a client frame must get.
func terminatorsFor(b []byte) int {
	f, err := decodeFrame(b)
	if err != nil {
		var fe *frameError
		if errors.As(err, &fe) && fe.answer {
			return 1
		}
		return 0
	}
	if f.Type == TypeDisconnect {
		return 0
	}
	return 1
}

// FuzzFrames feeds frame sequences (one frame a line; $SCOPE stands for the
// last scope id the server sent) through a connection's reader, dispatch,
// sessions and writer. The server must not panic, must answer every
// request with exactly one terminator, write only well-formed frames, and
// free every conversation when the connection ends.
func FuzzFrames(f *testing.F) {
	for _, seed := range []string{
		`{"type":"Connect","chatId":"a"}`,
		"{\"type\":\"Connect\",\"chatId\":\"a\",\"route\":\"echo\"}\n{\"type\":\"ChatRouteMessage\",\"chatId\":\"a\",\"scopeId\":\"$SCOPE\",\"data\":{\"userMessage\":\"hi\"}}",
		"{\"type\":\"Connect\",\"chatId\":\"m\"}\n{\"type\":\"ChatRouteMessage\",\"chatId\":\"m\",\"scopeId\":\"$SCOPE\",\"data\":{\"userMessage\":\"build x\"}}\n{\"type\":\"ChatRouteMessage\",\"chatId\":\"m\",\"scopeId\":\"$SCOPE\",\"data\":{\"userMessage\":\"done\"}}",
		"{\"type\":\"Connect\",\"chatId\":\"c\",\"route\":\"count\",\"requestId\":1}\n{\"type\":\"ChatRouteMessage\",\"chatId\":\"c\",\"scopeId\":\"$SCOPE\",\"data\":{\"count\":\"x\"},\"requestId\":\"q\"}",
		"{\"type\":\"Connect\",\"chatId\":\"p\",\"route\":\"panic\"}\n{\"type\":\"ChatRouteMessage\",\"chatId\":\"p\",\"scopeId\":\"$SCOPE\",\"data\":null}",
		"{\"type\":\"Connect\",\"chatId\":\"s\",\"route\":\"stream\"}\n{\"type\":\"ChatRouteMessage\",\"chatId\":\"s\",\"scopeId\":\"$SCOPE\",\"data\":{\"userMessage\":\"a fail\"}}",
		"{\"type\":\"Connect\",\"chatId\":\"b\",\"route\":\"bye\"}\n{\"type\":\"ChatRouteMessage\",\"chatId\":\"b\",\"scopeId\":\"$SCOPE\"}\n{\"type\":\"ChatRouteMessage\",\"chatId\":\"b\",\"scopeId\":\"$SCOPE\"}",
		"{\"type\":\"Connect\",\"chatId\":\"d\"}\n{\"type\":\"Disconnect\",\"chatId\":\"d\"}\n{\"type\":\"ChatRouteMessage\",\"chatId\":\"d\",\"scopeId\":\"x\"}",
		`{"type":"Connect","chatId":"a","route":null}`,
		`{"type":"Connect","chatId":"a","route":7}`,
		`{"type":"Hello","chatId":"a"}`,
		`{"type":"ChatRouteMessage","chatId":"a","scopeId":"s","data":[1,2]}`,
		`{"type":"ChatRouteMessage","chatId":"a","scopeId":"s","data":{"userMessage":1}}`,
		`{"type":"Connect","chatId":"a","requestId":{"x":1}}`,
		`{"chatId":"a"}`,
		`not json`,
		``, // an empty frame
		`[]`,
		`null`,
		`{"chatId":1}`,
		"{\"type\":\"Connect\",\"chatId\":\"\xff\"}",
		`{"type":"Connect","chatId":"` + strings.Repeat("x", MaxChatIDLength+1) + `"}`,
		`{"type":"ChatRouteMessage","chatId":"a","scopeId":"s","data":{"x":` + strings.Repeat("[", 10001) + `}}`,
		"{\"type\":\"Connect\",\"chatId\":\"1\"}\n{\"type\":\"Connect\",\"chatId\":\"2\"}\n{\"type\":\"Connect\",\"chatId\":\"3\"}\n{\"type\":\"Connect\",\"chatId\":\"4\"}\n{\"type\":\"Connect\",\"chatId\":\"5\"}\n{\"type\":\"Connect\",\"chatId\":\"1\"}",
	} {
		f.Add([]byte(seed))
	}
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, e2e.Register())
	if err != nil {
		f.Fatal(err)
	}
	srv := NewServer(router, &ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxSessions: 4, IdleTimeout: -1})

	f.Fuzz(func(t *testing.T, input []byte) {
		lines := bytes.Split(input, []byte("\n"))
		if len(lines) > 16 {
			lines = lines[:16]
		}
		ws := newFakeWS()
		c := newConn(context.Background(), srv, ws, ws, "fuzz")
		served := make(chan struct{})
		go func() {
			c.serve()
			close(served)
		}()
		want := 0
		for _, line := range lines {
			line = bytes.ReplaceAll(line, []byte("$SCOPE"), []byte(ws.lastScope()))
			want += terminatorsFor(line)
			select {
			case ws.in <- line:
			case <-time.After(5 * time.Second):
				t.Fatalf("frame %q: the connection stopped reading\n%s", line, allStacks())
			}
			if !ws.waitTerms(want) {
				t.Fatalf("frame %q: no terminator\n%s", line, allStacks())
			}
		}
		close(ws.in)
		select {
		case <-served:
		case <-time.After(5 * time.Second):
			t.Fatalf("the connection did not end\n%s", allStacks())
		}
		ws.mu.Lock()
		defer ws.mu.Unlock()
		if ws.terms != want {
			t.Fatalf("%d terminators, want %d", ws.terms, want)
		}
		for _, b := range ws.out {
			var fr frame
			if err := json.Unmarshal(b, &fr); err != nil || fr.Type == "" {
				t.Fatalf("bad server frame %q: %v", b, err)
			}
			// Only a frame whose chatId is too long to echo is answered
			// without one.
			if fr.ChatID == "" && (fr.Type != "Failed" || !strings.Contains(fr.Detail, "chatId is longer")) {
				t.Fatalf("server frame without a chatId: %q", b)
			}
			if len(fr.ChatID) > MaxChatIDLength {
				t.Fatalf("server frame echoes a chatId of %d bytes", len(fr.ChatID))
			}
		}
		if st := router.Stats(); st.Conversations != 0 || st.Scopes != 0 {
			t.Fatalf("left behind: %+v", st)
		}
	})
}

// TestDecodeFrame checks the decoder on its own.
func TestDecodeFrame(t *testing.T) {
	f, err := decodeFrame([]byte(`{"type":"ChatRouteMessage","chatId":"c","scopeId":"s","data":{"userMessage":"hi"},"requestId":"r"}`))
	if err != nil || f.Type != TypeChatRouteMessage || f.ChatID != "c" || f.ScopeID != "s" || string(f.Data) != `{"userMessage":"hi"}` || string(f.RequestID) != `"r"` {
		t.Fatalf("%+v %v", f, err)
	}
	f, err = decodeFrame([]byte(`{"type":"Connect","chatId":"c","route":"x","requestId":12}`))
	if err != nil || f.Route != "x" || string(f.RequestID) != "12" {
		t.Fatalf("%+v %v", f, err)
	}
	for _, bad := range []string{`{"type":"Connect","chatId":"c","requestId":true}`, `{"type":"Connect","chatId":"c","requestId":"` + string(bytes.Repeat([]byte("x"), 200)) + `"}`} {
		if _, err := decodeFrame([]byte(bad)); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// TestAppendFrame: a server frame built as session.deliver builds it.
func TestAppendFrame(t *testing.T) {
	b, err := appendData(appendHead(nil, quote("c\"1"), "Mess\u00e9age"), chat.Event{Type: "Mess\u00e9age", Data: map[string]int{"a": 1}})
	if err != nil {
		t.Fatal(err)
	}
	b = appendTail(b, []byte(`"r"`), "scope", "a \"detail\"\n")
	var fr frame
	if err := json.Unmarshal(b, &fr); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if fr.ChatID != "c\"1" || fr.Type != "Mess\u00e9age" || string(fr.Data) != `{"a":1}` || string(fr.RequestID) != `"r"` || fr.ScopeID != "scope" || fr.Detail != "a \"detail\"\n" {
		t.Fatalf("%+v", fr)
	}
	for _, s := range []string{"plain", "é", "\x00", "\u2028", "<script>", "tab\t"} {
		data, err := appendData(nil, chat.Event{Type: "Message", Data: s})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := json.Unmarshal(data, &got); err != nil || got != s {
			t.Errorf("%q encoded as %s", s, data)
		}
	}
}

// FuzzScanObject checks the frame scanner against encoding/json: for any
// valid JSON object, the keys without escapes and their values are those
// json.Unmarshal sees (the last of duplicate keys wins).
func FuzzScanObject(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"a":1}`, `{"a":"x\"y","b":[1,{"c":"]"}],"a":null}`, ` { "chatId" : "x" , "data" : { } } `,
		`{"k":"\u00e9\\"}`, `[]`, `{"a":1,}`, `"x"`, `{"a":{"b":[[[]]]},"c":-1.5e3,"d":true,"e":false}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got := map[string]string{}
		err := scanObject(b, func(key, val []byte) {
			got[string(key)] = string(val)
		})
		var want map[string]json.RawMessage
		werr := json.Unmarshal(b, &want)
		if werr != nil || want == nil {
			if err == nil && (werr != nil || !bytes.Equal(bytes.TrimSpace(b), []byte("null"))) {
				t.Fatalf("scanObject accepted %q: %v", b, werr)
			}
			return
		}
		if err != nil {
			t.Fatalf("scanObject rejected %q: %v", b, err)
		}
		for k, v := range want {
			if !json.Valid([]byte(`"`+k+`"`)) || strings.ContainsAny(k, "\\\"") {
				continue
			}
			raw, ok := got[k]
			if !ok {
				// The key may be written with escapes in b.
				continue
			}
			if !bytes.Equal(bytes.TrimSpace([]byte(raw)), bytes.TrimSpace(v)) {
				t.Fatalf("%q: key %q: scanned %s, json %s", b, k, raw, v)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok && !strings.Contains(k, "\\") && utf8.ValidString(k) {
				t.Fatalf("%q: scanned key %q that json does not see", b, k)
			}
		}
	})
}

func allStacks() []byte {
	buf := make([]byte, 1<<20)
	return buf[:runtime.Stack(buf, true)]
}
