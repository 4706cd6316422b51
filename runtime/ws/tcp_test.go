package ws

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestHijackedBuffers checks what hijackCapture relies on in
// coder/websocket: websocket.Accept reads and writes the websocket through
// the bufio.ReadWriter that Hijack returns, over the tcpConn. If a version
// of coder/websocket stops doing so, the waiter's view of what is
// buffered is wrong (frames stay unread), corking stops batching writes,
// and idle connections grow: this test fails first.
func TestHijackedBuffers(t *testing.T) {
	type accepted struct {
		hw  *hijackCapture
		wc  *websocket.Conn
		err error
	}
	var corks sync.Pool
	got := make(chan accepted, 1)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hw := &hijackCapture{ResponseWriter: w, corks: &corks, timeout: 5 * time.Second}
		wc, err := websocket.Accept(hw, r, nil)
		got <- accepted{hw, wc, err}
	}))
	defer hs.Close()

	// The client sends the handshake and a first frame at once: net/http
	// buffers the frame, which must be carried over.
	nc, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	handshake := "GET / HTTP/1.1\r\nHost: " + hs.Listener.Addr().String() + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := nc.Write(append([]byte(handshake), maskedFrame("one")...)); err != nil {
		t.Fatal(err)
	}
	client := bufio.NewReader(nc)
	resp, err := http.ReadResponse(client, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %v %v", resp, err)
	}
	a := recv(t, got)
	if a.err != nil {
		t.Fatal(a.err)
	}
	defer a.wc.CloseNow()
	tc := a.hw.conn

	// Reads go through the hijacked bufio.Reader, over the tcpConn.
	if p := coderField(t, a.wc, "br"); p != reflect.ValueOf(a.hw.rw.Reader).Pointer() {
		t.Fatal("coder/websocket does not read through the bufio.Reader of Hijack: tcpConn.buffered is wrong")
	}
	ctx := context.Background()
	readText := func(want string) {
		t.Helper()
		_, r, err := a.wc.Reader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(r); err != nil || string(b) != want {
			t.Fatalf("read %q, %v; want %q", b, err, want)
		}
	}
	readText("one")
	if tc.buffered() {
		t.Fatal("bytes buffered after the only frame")
	}
	// Two frames in one TCP write: after the first is read, the second is
	// buffered (in the tcpConn or coder/websocket's reader), and the
	// connection's waiter must know it.
	if _, err := nc.Write(append(maskedFrame("two"), maskedFrame("3")...)); err != nil {
		t.Fatal(err)
	}
	if err := tc.wait(); err != nil {
		t.Fatal(err)
	}
	readText("two")
	if !tc.buffered() {
		t.Fatal("the second frame of a TCP segment is not seen as buffered")
	}
	readText("3")

	// Writes go through the hijacked bufio.Writer, to the tcpConn: while
	// corked, a frame is collected, and it goes out on uncork.
	if p := coderField(t, a.wc, "bw"); p != reflect.ValueOf(a.hw.rw.Writer).Pointer() {
		t.Fatal("coder/websocket does not write through the bufio.Writer of Hijack")
	}
	tc.cork()
	if err := a.wc.Write(ctx, websocket.MessageText, []byte("reply")); err != nil {
		t.Fatal(err)
	}
	tc.mu.Lock()
	collected := len(*tc.buf)
	tc.mu.Unlock()
	if collected == 0 {
		t.Fatal("a frame written while corked was not collected by the tcpConn")
	}
	if err := tc.uncork(); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	head := make([]byte, 2)
	if _, err := io.ReadFull(client, head); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, head[1]&0x7f)
	if _, err := io.ReadFull(client, payload); err != nil || head[0] != 0x81 || string(payload) != "reply" {
		t.Fatalf("client got %x %q, %v", head, payload, err)
	}
}

// coderField returns the pointer in the unexported field name of a
// websocket.Conn.
func coderField(t *testing.T, wc *websocket.Conn, name string) uintptr {
	t.Helper()
	f := reflect.ValueOf(wc).Elem().FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.Pointer {
		t.Fatalf("coder/websocket's Conn has no pointer field %q any more: check how Accept uses the bufio.ReadWriter of Hijack (tcp.go), then this test", name)
	}
	return f.Pointer()
}

// maskedFrame returns a client text frame (masked, as clients must).
func maskedFrame(text string) []byte {
	if len(text) > 125 {
		panic(fmt.Sprintf("maskedFrame: %d bytes", len(text)))
	}
	mask := [4]byte{1, 2, 3, 4}
	b := append([]byte{0x81, 0x80 | byte(len(text))}, mask[:]...)
	for i := range len(text) {
		b = append(b, text[i]^mask[i%4])
	}
	return b
}
