package mcpserver_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chatscopes/chatgen/runtime/mcpserver"
)

// TestManySessionsAtOnce: 50 HTTP sessions calling at the same time each
// see their own conversation only, and ending them all releases every
// scope and bean.
func TestManySessionsAtOnce(t *testing.T) {
	const sessions, calls = 50, 5
	a := newApp(t, &mcpserver.Options{Authenticator: headerAuth})
	hs := a.serveHTTP(t)
	clients := make([]*mcp.ClientSession, sessions)
	for i := range clients {
		clients[i] = connectHTTP(t, hs.URL, fmt.Sprintf("user%d", i), nil)
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions*calls)
	for i, cs := range clients {
		wg.Go(func() {
			for n := 1; n <= calls; n++ {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"userMessage": fmt.Sprint(i)}})
				if err != nil {
					errs <- err
					return
				}
				if got, want := texts(res), fmt.Sprintf("%d: count is %d", i, n); got != want {
					errs <- fmt.Errorf("session %d: %q, want %q", i, got, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := a.router.Stats(); st.Conversations != sessions {
		t.Errorf("stats %+v, want %d conversations", st, sessions)
	}
	for _, cs := range clients {
		if err := cs.Close(); err != nil {
			t.Error(err)
		}
	}
	a.ledger.waitClosed(t, sessions)
	a.checkReleasedEventually(t)
}

// BenchmarkCall measures one tool call (a request of the session's
// conversation) through the go-sdk client, in memory and over
// streamable HTTP on loopback.
func BenchmarkCall(b *testing.B) {
	for _, transport := range []string{"memory", "http"} {
		b.Run(transport, func(b *testing.B) {
			a := newApp(b, nil)
			var cs *mcp.ClientSession
			if transport == "memory" {
				cs, _ = a.runInMemory(b, nil)
			} else {
				cs = connectHTTP(b, a.serveHTTP(b).URL, "", nil)
			}
			params := &mcp.CallToolParams{Name: "count", Arguments: map[string]any{"userMessage": "x"}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := cs.CallTool(context.Background(), params)
				if err != nil || res.IsError {
					b.Fatalf("%v %v", err, res)
				}
			}
		})
	}
}
