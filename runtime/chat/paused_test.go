package chat_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// A route whose error matches ErrPaused completes its request: the client
// gets the events it sent and no failure, and no error handler sees it.
func TestPausedRouteCompletes(t *testing.T) {
	caught := 0
	p := chatimpl.NewPackage("example.com/paused")
	p.AddRoute(chatimpl.RouteSpec{Name: "ask", Default: true, Handle: func(ctx context.Context) error {
		if err := chat.Response(ctx).Event(protocol.EventConfirm, map[string]string{"id": "c1"}); err != nil {
			return err
		}
		return fmt.Errorf("waiting: %w", chat.ErrPaused)
	}})
	p.AddCatch(chatimpl.CatchSpec{Type: "error", Interface: true, Handle: func(ctx context.Context, err error) (bool, error) {
		caught++
		return true, nil
	}})
	r, err := chat.NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	c := chat.NewLocalClient(r)
	defer c.Close()
	var confirms []string
	s, err := c.Builder().On(protocol.EventConfirm, func(ev chat.Event) {
		var v struct{ ID string }
		if err := ev.Decode(&v); err != nil {
			t.Error(err)
		}
		confirms = append(confirms, v.ID)
	}).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(context.Background(), "delete it"); err != nil {
		t.Fatalf("a paused route failed its request: %v", err)
	}
	if len(confirms) != 1 || confirms[0] != "c1" || caught != 0 {
		t.Fatalf("confirms %v, error handler called %d times", confirms, caught)
	}
}
