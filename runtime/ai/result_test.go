package ai_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"text/template"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

func TestResultSend(t *testing.T) {
	f := newModelFixture(t, llmtest.Rules(
		llmtest.When(llmtest.LastUserContains("cards"),
			calls(call("show", `{"card":"Ace"}`), call("show", `{"card":"King"}`))),
		llmtest.When(llmtest.LastUserContains("pick"),
			calls(call("show", `{"card":"Queen"}`))),
		llmtest.When(llmtest.LastUserContains("weapon"), llmtest.Reply{Text: `{"name":"Axe","damage":3}`}),
	).WithFallback(llmtest.Reply{Text: "Hello."}), &ai.Config{})

	// The routes play generated methods returning ai.Result[string] and
	// ai.Result[Weapon].
	text := chatimpl.RouteSpec{Name: "text", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		if req.UserMessage() == "manual" {
			return ai.NewResult("", &ai.Reply{Executions: []ai.ToolExecution{
				{Name: "note"}, {Name: "weather", Result: Forecast{City: "Oslo"}}, {Name: "boom", Err: errBoom},
			}}).Send(ctx)
		}
		reply, err := f.svc.Chat(ctx, f.req(req.UserMessage()))
		if err != nil {
			return err
		}
		return ai.NewResult(reply.Content, reply).Send(ctx)
	}}
	structured := chatimpl.RouteSpec{Name: "structured", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r := f.weaponReq(req.UserMessage())
		r.Method.Tools = f.tools
		w, reply, err := ai.Structured[Weapon](ctx, f.svc, r)
		if err != nil {
			return err
		}
		return ai.NewResult(w, reply).Send(ctx)
	}}
	e := newRouteEnv(t, f, text, structured)
	var mu sync.Mutex
	var events []string
	record := func(ev chat.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev.Type+":"+ev.Text())
	}
	take := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := events
		events = nil
		return out
	}
	for _, route := range []string{"text", "structured"} {
		s, err := e.client.Builder().OnDefault(record).Connect(context.Background(), route)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		send := func(msg string, want ...string) {
			t.Helper()
			if err := s.Chat(context.Background(), msg); err != nil {
				t.Fatalf("%s %q: %v\n%s", route, msg, err, f.logs)
			}
			wantStrings(t, route+" "+msg, take(), want...)
		}
		if route == "text" {
			send("hi", "Message:Hello.")
			// No content: one event per execution with a result, Card
			// being a //chat:event type; executions without one send
			// nothing.
			send("cards", `Card:{"title":"Ace"}`, `Card:{"title":"King"}`)
			send("manual", `Object:{"city":"Oslo","sky":""}`)
		} else {
			send("weapon", `Object:{"name":"Axe","damage":3}`)
			send("pick", `Card:{"title":"Queen"}`)
		}
	}

	// Send outside a route fails with chat.ErrNotActive.
	if err := ai.NewResult("x", nil).Send(context.Background()); err == nil {
		t.Fatal("Send outside a route succeeded")
	}
	if err := (ai.Result[string]{}).Send(context.Background()); err != nil {
		t.Fatalf("empty result: %v", err)
	}
	r := ai.NewResult(7, &ai.Reply{Executions: []ai.ToolExecution{{Name: "x"}}, Usage: ai.Usage{TotalTokens: 3}, FinishReason: "stop"})
	if r.Content != 7 || len(r.Executions) != 1 || r.Usage.TotalTokens != 3 || r.FinishReason != "stop" {
		t.Fatalf("result %+v", r)
	}
}

var errBoom = errors.New("boom")

func TestTemplates(t *testing.T) {
	f := newModelFixture(t, echo(), &ai.Config{})
	ctx := begin(t)
	req := f.req("ignored: the user template wins")
	req.Method.System = "ignored: the system template wins"
	req.Method.SystemTemplate = template.Must(template.New("Assistant.Ask system").Parse("You talk about {{.topic}}."))
	req.Method.UserTemplate = template.Must(template.New("Assistant.Ask user").Parse("Tell me about {{.topic}}."))
	req.Data = map[string]any{"topic": "swords"}
	r := must[*ai.Reply](t)(f.svc.Chat(ctx, req))
	if r.Content != "re: Tell me about swords." {
		t.Fatalf("reply %+v", r)
	}
	wantStrings(t, "request", describe(f.requests()[0].Messages),
		"system: You talk about swords.", "human: Tell me about swords.")

	// A template that fails to execute fails the call before the model or
	// the memory are reached.
	for _, which := range []string{"system", "user"} {
		bad := f.req("hi")
		tmpl := template.Must(template.New("bad " + which).Parse("{{.x.y}}"))
		if which == "system" {
			bad.Method.SystemTemplate = tmpl
		} else {
			bad.Method.UserTemplate = tmpl
		}
		bad.Data = map[string]any{"x": 1}
		_, err := f.svc.Chat(ctx, bad)
		if err == nil || !strings.Contains(err.Error(), "rendering the "+which+" message") || !strings.Contains(err.Error(), "bad "+which) {
			t.Fatalf("%s: err %v", which, err)
		}
	}
	if n := len(f.requests()); n != 1 {
		t.Fatalf("%d model calls", n)
	}
}
