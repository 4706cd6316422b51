package chat_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// A tool's //chat:event result reaches the client of the request when the
// tool returns; without a request, or once it is over, nothing is sent and
// the tool is not failed.
func TestSendToolEvent(t *testing.T) {
	logs := &logCapture{}
	var late context.Context
	p := chat.NewPackage("example.com/app")
	p.AddRoute(asDefault(textRoute("desk", func(ctx context.Context, msg string) (string, error) {
		chat.SendToolEvent(ctx, alert{Level: "opened " + msg})
		late = ctx
		return "done", nil
	})))
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: logs.logger()}, p)
	wantNoErr(t, err)
	client := chat.NewLocalClient(router)
	defer client.Close()
	l := &evlog{}
	s, err := client.Builder().OnDefault(l.add).Connect(bg, "")
	wantNoErr(t, err)
	wantNoErr(t, s.Chat(bg, "T-1"))
	wantEvents(t, l.take(), `Alert:{"level":"opened T-1"}`, "Message:done")

	// The request is over: logged, not sent.
	chat.SendToolEvent(late, alert{Level: "late"})
	if !strings.Contains(logs.String(), "a tool's event was not sent") {
		t.Fatalf("no warning logged for a tool event after the request: %s", logs.String())
	}
	wantEvents(t, l.take())

	// No request at all (an AI service called outside a route).
	chat.SendToolEvent(context.Background(), alert{Level: "nobody"})
	ctx, err := chat.Begin(bg, nil)
	wantNoErr(t, err)
	chat.SendToolEvent(ctx, alert{Level: "nobody"})
	wantNoErr(t, chat.End(ctx))
}
