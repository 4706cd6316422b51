package ai_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// Ticket is a //chat:event value a tool returns.
type Ticket struct {
	ID string `json:"id"`
}

func (Ticket) ChatEventType() string { return "Ticket" }

// An event tool's result reaches the client once, when the tool returns:
// Result.Send, which sends the results of a turn that ended on immediate
// tools, skips it, in a hand-written route as in a generated one; outside a
// request nothing is sent and the execution is not marked Sent.
func TestEventToolSentOnce(t *testing.T) {
	model := llmtest.NewModel(llmtest.Sequence(
		calls(call("open", `{}`)), // the turn ends on the immediate tool
		calls(call("open", `{}`)),
	), nil)
	svc := ai.NewService(svcName, &ai.Config{Model: model, Logger: (&logBuffer{}).logger()})
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, Tools: []ai.Tool{{
		Name: "open", Parameters: json.RawMessage(`{"type":"object"}`), Event: true, Immediate: true,
		Invoke: func(context.Context, string) (any, error) { return Ticket{ID: "T-1"}, nil },
	}}}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "desk", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: req.UserMessage()})
		if err != nil {
			return err
		}
		if !r.Executions[0].Sent {
			t.Errorf("the execution of an event tool inside a request is not marked Sent")
		}
		return ai.NewResult("", r).Send(ctx)
	}})
	router, err := chat.NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	client := chat.NewLocalClient(router)
	defer client.Close()
	var mu sync.Mutex
	var got []string
	s, err := client.Builder().OnDefault(func(ev chat.Event) {
		mu.Lock()
		b, _ := json.Marshal(ev.Data)
		got = append(got, ev.Type+":"+string(b))
		mu.Unlock()
	}).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(context.Background(), "open a ticket"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if want := []string{`Ticket:{"id":"T-1"}`}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
	mu.Unlock()

	// Outside a request (a test calling the service): not sent.
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer chat.End(ctx)
	r, err := svc.Chat(ctx, &ai.Request{Method: method, User: "open"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Executions[0].Sent || r.Executions[0].Result != (Ticket{ID: "T-1"}) {
		t.Fatalf("outside a request: %+v", r.Executions[0])
	}
}
