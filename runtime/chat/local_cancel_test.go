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
// no error: the caller gave up, nothing failed. A cancelled request is a
// stop: its error matches chat.ErrCancelled too (the reason the websocket
// transport sends); one past its deadline is no Failure. The session
// keeps working.
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
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		want    error
		stopped bool
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			// Long enough for the request to start on a loaded machine.
			return context.WithTimeout(t.Context(), 500*time.Millisecond)
		}, context.DeadlineExceeded, false},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			go func() { <-started; cancel() }()
			return ctx, cancel
		}, context.Canceled, true},
	} {
		ctx, cancel := tc.ctx()
		err := s.Chat(ctx, "slow")
		cancel()
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Chat = %v, want an error matching %v", tc.name, err, tc.want)
		}
		var f *chat.Failure
		if got := errors.As(err, &f); got != tc.stopped || tc.stopped && !errors.Is(err, chat.ErrCancelled) {
			t.Errorf("%s: Chat = %v: a Failure %v, want a Cancelled one %v", tc.name, err, got, tc.stopped)
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

// The route of a request whose caller cancels it sees a stop:
// chat.Cancelled(ctx) — what a service reads to keep the interrupted turn
// — while one past its deadline does not.
func TestLocalClientCancelIsAStopForTheRoute(t *testing.T) {
	started := make(chan struct{}, 1)
	seen := make(chan bool, 1)
	e := newEnv(t, []chatimpl.RouteSpec{asDefault(textRoute("slow", func(ctx context.Context, msg string) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		seen <- chat.Cancelled(ctx)
		return "", ctx.Err()
	}))}, nil)
	s, _ := e.connect(t.Context(), "")

	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	if err := s.Chat(ctx, "x"); !errors.Is(err, chat.ErrCancelled) {
		t.Fatalf("Chat = %v, want Cancelled", err)
	}
	if !<-seen {
		t.Error("a cancelled request: chat.Cancelled(ctx) = false in the route")
	}

	ctx, cancel = context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := s.Chat(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, chat.ErrCancelled) {
		t.Fatalf("Chat = %v, want DeadlineExceeded only", err)
	}
	<-started
	if <-seen {
		t.Error("a request past its deadline: chat.Cancelled(ctx) = true in the route")
	}
}
