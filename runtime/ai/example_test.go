package ai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"text/template"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// What chatgen generates for
//
//	//chat:ai
//	//chat:tools Weather
//	type Assistant interface {
//		//chat:system You are terse. The user's name is {{.name}}.
//		//chat:user {{.userMessage}}
//		Ask(ctx context.Context, name, userMessage string) (string, error)
//	}
//
// written by hand.
var (
	askSystem = template.Must(template.New("Assistant.Ask system").Parse("You are terse. The user's name is {{.name}}."))
	askUser   = template.Must(template.New("Assistant.Ask user").Parse("{{.userMessage}}"))

	askTools = []llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name:        "weather",
		Description: "Weather tells the weather in a city.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
	}}}
	askInvokers = []ai.Invoker{{Invoke: func(ctx context.Context, arguments string) (any, error) {
		var args struct {
			City string `json:"city"`
		}
		if err := json.Unmarshal([]byte(arguments), &args); err != nil {
			return nil, &ai.ArgumentsError{Err: err}
		}
		return map[string]string{"city": args.City, "sky": "sunny"}, nil
	}}}
)

type assistantImpl struct{ svc *ai.Service }

func (x *assistantImpl) Ask(ctx context.Context, name, userMessage string) (string, error) {
	data := map[string]any{"name": name, "userMessage": userMessage}
	system, err := ai.Render(askSystem, data)
	if err != nil {
		return "", err
	}
	user, err := ai.Render(askUser, data)
	if err != nil {
		return "", err
	}
	reply, err := x.svc.Chat(ctx, &ai.Request{
		Method: "Ask", Kind: chat.KindChat,
		System: system, User: user,
		Tools: askTools, Invokers: askInvokers,
	})
	if err != nil {
		return "", err
	}
	return reply.Content, nil
}

func Example() {
	model := llmtest.NewModel(llmtest.Sequence(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}},
		llmtest.Reply{Text: "Sunny in Paris, Ann."},
		llmtest.Reply{Text: "You asked about Paris."},
	))
	memories := memory.NewManager(memory.Config{})
	assistant := &assistantImpl{svc: ai.NewService("example.com/app.Assistant", ai.Config{Model: model, Memory: memories})}

	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, msg := range []string{"Weather in Paris?", "What did I ask?"} {
		answer, err := assistant.Ask(ctx, "Ann", msg)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(answer)
	}
	last := model.Requests()[2]
	fmt.Println("the third model call got", len(last.Messages), "messages")

	// Ending the conversation deletes its memory.
	if err := chat.End(ctx); err != nil {
		log.Fatal(err)
	}
	ids, _ := memories.Store().(*memory.InMemoryStore).IDs(context.Background())
	fmt.Println("memory ids left:", len(ids))
	// Output:
	// Sunny in Paris, Ann.
	// You asked about Paris.
	// the third model call got 6 messages
	// memory ids left: 0
}
