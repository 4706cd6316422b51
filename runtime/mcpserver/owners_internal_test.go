package mcpserver

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// TestOwnersBounded: the server remembers the owner of a session only as
// long as the session lives: requests that open no session (malformed,
// refused) leave nothing, and an ended session's owner is forgotten.
func TestOwnersBounded(t *testing.T) {
	p := chatimpl.NewPackage("example.com/owners")
	p.AddRoute(chatimpl.RouteSpec{Name: "echo", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.Response(ctx).Message(req.UserMessage())
	}})
	r, err := chat.NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(r, &Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	post := func(session, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, body := range []string{`not json`, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"bad"}`, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`} {
		post("", body)
	}
	resp := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		t.Fatal("no session opened")
	}
	s.mu.Lock()
	n, owned := len(s.owners), s.owners[id]
	s.mu.Unlock()
	if n != 1 || owned != (owner{}) {
		t.Errorf("owners after one session and refused requests: %d, want 1", n)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	n = len(s.owners)
	s.mu.Unlock()
	if n != 0 {
		t.Errorf("owners after the sessions ended: %d", n)
	}
	if st := r.Stats(); st.Conversations != 0 {
		t.Errorf("stats %+v", st)
	}
}
