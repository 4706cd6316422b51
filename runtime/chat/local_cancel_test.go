package chat_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// A caller whose context ends while its request runs gets an error
// matching the context's error — not a ServerError — and the server logs
// no error: the caller gave up, nothing failed. The session keeps working.
func TestLocalClientReturnsTheCallersContextError(t *testing.T) {
	started := make(chan struct{}, 1)
	e := newEnv(t, []chatimpl.RouteSpec{asDefault(textRoute("slow", func(ctx context.Context, msg string) (string, error) {
		if msg == "quick" {
			return "done", nil
		}
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}))}, nil)
	s, events := e.connect(t.Context(), "")

	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			// Long enough for the request to start on a loaded machine.
			return context.WithTimeout(t.Context(), 500*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			go func() { <-started; cancel() }()
			return ctx, cancel
		}, context.Canceled},
	} {
		ctx, cancel := tc.ctx()
		err := s.Chat(ctx, "slow")
		cancel()
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Chat = %v, want an error matching %v", tc.name, err, tc.want)
		}
		var f *chat.Failure
		if errors.As(err, &f) {
			t.Errorf("%s: Chat = %v, a Failure; the server did not fail", tc.name, err)
		}
		select {
		case <-started:
		default:
		}
	}
	for _, r := range e.log.records(t) {
		if r["level"] == "ERROR" {
			t.Errorf("logged at ERROR: %v", r)
		}
	}
	if !strings.Contains(e.log.String(), "request abandoned") {
		t.Errorf("the abandoned requests are not logged:\n%s", e.log.String())
	}
	events.take()
	wantNoErr(t, s.Chat(t.Context(), "quick"))
	wantEvents(t, events.take(), "Message:done")
}
