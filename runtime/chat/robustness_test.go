package chat_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// ctxMemory records whether DeleteMemory got a live context.
type ctxMemory struct{ deletedWith error }

func (m *ctxMemory) ClearMemory(context.Context) error { return nil }

func (m *ctxMemory) DeleteMemory(ctx context.Context) error {
	m.deletedWith = ctx.Err()
	return ctx.Err()
}

func TestScopeCleanupSurvivesACancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ctx, err := chat.Begin(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem := &ctxMemory{deletedWith: errors.New("never deleted")}
	if _, err := chat.AttachMemory(ctx, "m", mem); err != nil {
		t.Fatal(err)
	}
	cancel() // the request ending the conversation was cancelled
	if err := chat.End(ctx); err != nil {
		t.Fatalf("End with a cancelled context: %v", err)
	}
	if mem.deletedWith != nil {
		t.Fatalf("memory deleted with a dead context (%v): a real store would keep it", mem.deletedWith)
	}
}

func TestPanickingObserverIsContained(t *testing.T) {
	var log bytes.Buffer
	ctx, err := chat.Begin(context.Background(), &chat.BeginOptions{
		Logger:   slog.New(slog.NewTextHandler(&log, nil)),
		Observer: func(context.Context, chat.ScopeEvent) { panic("observer bug") },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := chat.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "observer bug") {
		t.Fatalf("the observer's panic was not logged:\n%s", log.String())
	}
}

func TestInvocationOfAnEndedContextStartsANewOne(t *testing.T) {
	ictx, end := chat.BeginInvocation(context.Background())
	first := mustLookup(t, ictx, invocationBean)
	end()
	if err := chat.OnInvocationEnd(ictx, func(context.Context) error { return nil }); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("OnInvocationEnd after the invocation ended: %v, want ErrNotActive", err)
	}
	// A context kept from the ended invocation (a goroutine it started,
	// say) gets a fresh invocation for its next top-level call.
	nctx, nend := chat.BeginInvocation(ictx)
	defer nend()
	if got := mustLookup(t, nctx, invocationBean); got == first {
		t.Fatal("the ended invocation's bean was reused")
	}
}

func TestHandlerMayCloseItsSessionAndClient(t *testing.T) {
	p := chatimpl.NewPackage("example.com/reentry")
	p.AddRoute(chatimpl.RouteSpec{Name: "echo", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.SendValue(ctx, req.UserMessage())
	}})
	r, err := chat.NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, closeClient := range []bool{false, true} {
		client := chat.NewLocalClient(r)
		var s chat.Session
		s, err = client.Builder().OnMessage(func(string) {
			if closeClient {
				_ = client.Close()
			} else {
				_ = s.Close()
			}
		}).Connect(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Chat(context.Background(), "bye") }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the request that closed its session: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("closing from a handler deadlocked (client %v)", closeClient)
		}
		if err := s.Chat(context.Background(), "again"); !errors.Is(err, chat.ErrSessionClosed) {
			t.Fatalf("after close: %v", err)
		}
		if st := r.Stats(); st != (chat.Stats{}) {
			t.Fatalf("closing from a handler left %+v", st)
		}
	}
}
