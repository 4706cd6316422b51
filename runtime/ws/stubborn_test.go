package ws

import (
	"context"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/internal/e2e"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// stubborn is a route that ignores its context, as a route calling a tool
// that never looks at it would: on "block" it sends Thinking "started",
// reports that it entered, waits for release whatever happens to its
// context, then tries to send Message "late". On "wait" it honours its
// context: it returns its error when it ends. Other texts are answered at
// once with "quick <text>".
type stubborn struct {
	entered chan string
	release chan struct{}
	ctxErr  chan error // its context's error when released
	late    chan error // the error of the event it sent after release

	closeOnce sync.Once
}

func (st *stubborn) pkg() *chatimpl.Package {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/runtime/ws/stubborn")
	p.AddRoute(chatimpl.RouteSpec{Name: "stubborn", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		text := req.UserMessage()
		switch text {
		case "block":
		case "wait":
			<-ctx.Done()
			return ctx.Err()
		default:
			return chat.SendValue(ctx, "quick "+text)
		}
		r := chat.Response(ctx)
		if err := r.Thinking("started"); err != nil {
			return err
		}
		st.entered <- text
		<-st.release
		st.ctxErr <- ctx.Err()
		st.late <- r.Message("late")
		return nil
	}})
	return p
}

// releaseAll lets every blocked and future "block" request go on.
func (st *stubborn) releaseAll() { st.closeOnce.Do(func() { close(st.release) }) }

// startStubborn starts a server with the test routes and the stubborn
// route. Blocked requests are released before the server shuts down.
func startStubborn(t *testing.T, opts *ServerOptions) (*testServer, *stubborn) {
	t.Helper()
	st := &stubborn{
		entered: make(chan string, 16),
		release: make(chan struct{}),
		ctxErr:  make(chan error, 16),
		late:    make(chan error, 16),
	}
	tr := newTestRoutes()
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, e2e.Register(), tr.pkg(), st.pkg())
	if err != nil {
		t.Fatal(err)
	}
	ts := startServerFor(t, r, tr, opts)
	t.Cleanup(st.releaseAll) // runs before the server's Shutdown
	return ts, st
}

// serverConn returns the server's one open connection.
func serverConn(t *testing.T, ts *testServer) *conn {
	t.Helper()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.conns) != 1 {
		t.Fatalf("%d connections, want 1", len(ts.conns))
	}
	for c := range ts.conns {
		return c
	}
	return nil
}
