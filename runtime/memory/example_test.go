package memory_test

import (
	"context"
	"fmt"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// Example keeps the memory of one AI service in a window of 4 messages and
// shows a turn with a tool exchange leaving the memory as a whole.
func Example() {
	ctx := context.Background()
	memories := memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(4, nil)})
	id := "scope-1#example.com/shop.Assistant.Chat"
	mem, err := memories.Memory(ctx, id)
	if err != nil {
		panic(err)
	}

	// One AI turn, committed at once: system message, user message, the
	// model's tool call, the tool's result, and the answer. It is bigger
	// than the window, and the newest turn is always kept whole.
	err = mem.Add(ctx,
		llms.TextParts(llms.ChatMessageTypeSystem, "You sell swords."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Price of a katana?"),
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.ToolCall{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{
				Name: "price", Arguments: `{"item":"katana"}`,
			}},
		}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "call_1", Name: "price", Content: "300"},
		}},
		llms.TextParts(llms.ChatMessageTypeAI, "300 gold."),
	)
	if err != nil {
		panic(err)
	}
	printMemory(ctx, mem)

	// The next turn evicts the first one, whole: the memory never starts
	// with an AI message or a tool result.
	err = mem.Add(ctx,
		llms.TextParts(llms.ChatMessageTypeSystem, "You sell swords."), // identical: ignored
		llms.TextParts(llms.ChatMessageTypeHuman, "Thanks!"),
		llms.TextParts(llms.ChatMessageTypeAI, "Anytime."),
	)
	if err != nil {
		panic(err)
	}
	printMemory(ctx, mem)

	// The chat scope ended.
	if err := memories.Delete(ctx, id); err != nil {
		panic(err)
	}
	ids, _ := memories.Store().IDs(ctx)
	fmt.Println("ids left:", len(ids))

	// Output:
	// system: You sell swords.
	// human: Price of a katana?
	// ai: call price {"item":"katana"}
	// tool: 300
	// ai: 300 gold.
	// --
	// system: You sell swords.
	// human: Thanks!
	// ai: Anytime.
	// --
	// ids left: 0
}

func printMemory(ctx context.Context, mem memory.Memory) {
	msgs, err := mem.Messages(ctx)
	if err != nil {
		panic(err)
	}
	for _, m := range msgs {
		fmt.Printf("%s:", m.Role)
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				fmt.Print(" ", p.Text)
			case llms.ToolCall:
				fmt.Print(" call ", p.FunctionCall.Name, " ", p.FunctionCall.Arguments)
			case llms.ToolCallResponse:
				fmt.Print(" ", p.Content)
			}
		}
		fmt.Println()
	}
	fmt.Println("--")
}
