package ai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"text/template"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// Weather is a chat-scoped bean whose method is a tool.
type Weather struct{}

// Weather tells the weather in a city.
func (*Weather) Weather(_ context.Context, city string) (map[string]string, error) {
	return map[string]string{"city": city, "sky": "sunny"}, nil
}

// What chatgen generates for
//
//	//chat:ai
//	//chat:tools Weather
//	type Assistant interface {
//		//chat:system You are terse. The user's name is {{.name}}.
//		Ask(ctx context.Context, name, userMessage string) (string, error)
//	}
//
// written by hand: the system message is a template, the user message is
// userMessage as it is.
var (
	weatherBean = chat.NewBean("example.com/app.Weather", nil, func(context.Context) (*Weather, error) {
		return new(Weather), nil
	})

	assistantAsk = ai.Method{
		Name:           "Ask",
		Kind:           chat.KindChat,
		SystemTemplate: template.Must(template.New("Assistant.Ask system").Parse("You are terse. The user's name is {{.name}}.")),
		Tools: []ai.Tool{{
			Name:        "weather",
			Description: "Weather tells the weather in a city.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
			Invoke: ai.BeanTool(weatherBean, func(ctx context.Context, w *Weather, args struct {
				City string `json:"city"`
			}) (any, error) {
				return w.Weather(ctx, args.City)
			}),
		}},
	}
)

type assistantImpl struct{ svc *ai.Service }

func (x *assistantImpl) Ask(ctx context.Context, name, userMessage string) (string, error) {
	reply, err := x.svc.Chat(ctx, &ai.Request{
		Method: &assistantAsk,
		User:   userMessage,
		Data:   map[string]any{"name": name, "userMessage": userMessage},
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
	), nil)
	memories := memory.NewManager(&memory.ManagerOptions{})
	assistant := &assistantImpl{svc: ai.NewService("example.com/app.Assistant", &ai.Config{Model: model, Memory: memories})}

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
