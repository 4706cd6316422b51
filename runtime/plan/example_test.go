package plan_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/plan"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// A service with the plan tool box: the model (scripted here) creates a
// plan; the client gets a Plan event; the next request carries the plan
// in its per-request slot, before the user's message.
func Example() {
	model := llmtest.NewModel(llmtest.Sequence(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: plan.ToolCreate, Arguments: `{"name":"Crossbow","subtasks":[{"name":"Pick a stave"},{"name":"String it"}]}`}}},
		llmtest.Reply{Text: "I have a plan."},
		llmtest.Reply{Text: "Start with the stave."},
	), nil)
	plans := plan.New(nil)
	svc := ai.NewService("example.com/app.Smith", &ai.Config{Model: model, ToolSources: []ai.ToolSource{plans}})
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are a weaponsmith."}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "smith", Default: true, Handle: func(ctx context.Context) error {
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	router, err := chat.NewRouter(nil, p)
	if err != nil {
		log.Fatal(err)
	}
	client := chat.NewLocalClient(router)
	defer client.Close()

	ctx := context.Background()
	s, err := client.Builder().
		On(protocol.EventPlan, func(ev chat.Event) {
			var p plan.Plan
			if err := ev.Decode(&p); err != nil {
				log.Fatal(err)
			}
			fmt.Printf("plan %q revision %d: %d subtasks\n", p.Name, p.Revision, len(p.Subtasks))
		}).
		OnMessage(func(text string) { fmt.Println(text) }).
		Connect(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	for _, msg := range []string{"plan a crossbow", "what first?"} {
		if err := s.Chat(ctx, msg); err != nil {
			log.Fatal(err)
		}
	}
	sent := model.Requests()[2].LastUserText()
	fmt.Println(strings.Contains(sent, `Plan "Crossbow" (revision 1, in_progress)`), strings.HasSuffix(sent, "\nMessage:\nwhat first?"))
	// Output:
	// plan "Crossbow" revision 1: 2 subtasks
	// I have a plan.
	// Start with the stave.
	// true true
}
