package chat_test

import (
	"context"
	"errors"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// fakeTerminator claims a terminator type, as a hand-written ChatEventType
// could.
type fakeTerminator struct{}

func (fakeTerminator) ChatEventType() string { return protocol.EventCompleted }

// A route cannot send a terminator type: only the transport ends a
// request, so the client never sees two terminators.
func TestRoutesCannotSendTerminators(t *testing.T) {
	var errs []error
	e := newEnv(t, []chatimpl.RouteSpec{asDefault(textRoute("r", func(ctx context.Context, msg string) (string, error) {
		errs = append(errs,
			chat.Response(ctx).Event(protocol.EventCompleted, "fake-scope"),
			chat.Response(ctx).Event(protocol.EventFailed, "ServerError"),
			chat.Response(ctx).Send(fakeTerminator{}),
			chat.SendValue(ctx, fakeTerminator{}),
		)
		return "real answer", nil
	}))}, nil)
	s, events := e.connect(t.Context(), "")
	wantNoErr(t, s.Chat(t.Context(), "hi"))
	wantEvents(t, events.take(), "Message:real answer")
	if len(errs) != 4 {
		t.Fatalf("got %d errors, want 4", len(errs))
	}
	for i, err := range errs {
		if !errors.Is(err, chat.ErrReservedEvent) {
			t.Errorf("send %d: %v, want ErrReservedEvent", i, err)
		}
	}
}
