package ai_test

import (
	"context"
	"slices"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// TestResultSendText: the text values of a Result — a string content, the
// string results of tools — go through the given func (what
// //chat:markdown routes pass); every other value is sent as Send sends
// it.
func TestResultSendText(t *testing.T) {
	quote := func(ctx context.Context, s string) error {
		return chat.Response(ctx).Message("text: " + s)
	}
	results := map[string]func(ctx context.Context) error{
		"content": func(ctx context.Context) error { return ai.NewResult("**hi**", nil).SendText(ctx, quote) },
		"tools": func(ctx context.Context) error {
			return ai.NewResult("", &ai.Reply{Executions: []ai.ToolExecution{
				{Name: "a", Result: "saved"}, {Name: "b"}, {Name: "c", Result: Forecast{City: "Oslo"}}, {Name: "d", Result: "back"},
			}}).SendText(ctx, quote)
		},
		"struct": func(ctx context.Context) error {
			return ai.NewResult(Forecast{City: "Bergen"}, nil).SendText(ctx, quote)
		},
		"nil": func(ctx context.Context) error { return ai.NewResult("plain", nil).SendText(ctx, nil) },
	}
	p := chatimpl.NewPackage("example.com/sendtext")
	p.AddRoute(chatimpl.RouteSpec{Name: "r", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return results[req.UserMessage()](ctx)
	}})
	router, err := chat.NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	client := chat.NewLocalClient(router)
	defer client.Close()
	var got []string
	s, err := client.Builder().OnDefault(func(ev chat.Event) { got = append(got, ev.Type+" "+ev.Text()) }).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"content", []string{"Message text: **hi**"}},
		{"tools", []string{"Message text: saved", `Object {"city":"Oslo","sky":""}`, "Message text: back"}},
		{"struct", []string{`Object {"city":"Bergen","sky":""}`}},
		{"nil", []string{"Message plain"}},
	} {
		got = nil
		if err := s.Chat(context.Background(), tc.name); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: events %q, want %q", tc.name, got, tc.want)
		}
	}
}
