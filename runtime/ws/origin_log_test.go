package ws

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
)

// lockedBuffer is a bytes.Buffer for a logger written by the server's
// goroutines and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A refused cross-origin connection is logged at WARN with the option that
// allows it: a page served from another port than the endpoint is a common
// set-up mistake, and the browser only says the connection failed.
func TestCrossOriginRefusalIsLoggedWithTheOption(t *testing.T) {
	var logs lockedBuffer
	ts := startServer(t, &ServerOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	h := http.Header{"Origin": {"http://localhost:3000"}}
	wc, resp, err := websocket.Dial(context.Background(), ts.url, &websocket.DialOptions{HTTPHeader: h})
	if err == nil {
		wc.CloseNow()
		t.Fatal("a cross-origin connection was accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("response %v, err %v; want 403", resp, err)
	}
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "ServerOptions.OriginPatterns") || !strings.Contains(out, "localhost:3000") {
		t.Errorf("the refusal is not logged at WARN with the option:\n%s", out)
	}
}

func TestCrossOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin, host string
		want         bool
	}{
		{"", "example.com", false},
		{"https://example.com", "example.com", false},
		{"https://EXAMPLE.com", "example.com", false},
		{"http://localhost:3000", "localhost:8080", true},
		{"https://evil.example", "example.com", true},
		{"::not a url", "example.com", true},
	} {
		if got := crossOrigin(tc.origin, tc.host); got != tc.want {
			t.Errorf("crossOrigin(%q, %q) = %v, want %v", tc.origin, tc.host, got, tc.want)
		}
	}
}
