package llmtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/googleai"
	"github.com/tmc/langchaingo/llms/openai"
	"google.golang.org/api/option"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
)

// A scripted tool loop through langchaingo's real OpenAI client.
func Example() {
	srv := llmtest.NewServer(llmtest.Sequence(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}},
		llmtest.Reply{Text: "It is sunny in Paris."},
	), nil)
	defer srv.Close()

	llm, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithToken("test"), openai.WithModel("scripted"))
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	tools := llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name:       "weather",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`),
	}}})
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")}

	resp, err := llm.GenerateContent(ctx, msgs, tools)
	if err != nil {
		log.Fatal(err)
	}
	call := resp.Choices[0].ToolCalls[0]
	fmt.Println("tool call:", call.ID, call.FunctionCall.Name, call.FunctionCall.Arguments)

	msgs = append(msgs,
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: call.ID, Name: "weather", Content: "sunny"},
		}})
	var streamed []string
	resp, err = llm.GenerateContent(ctx, msgs, tools, llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
		if len(chunk) > 0 {
			streamed = append(streamed, string(chunk))
		}
		return nil
	}))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("answer: %s (%s)\n", resp.Choices[0].Content, resp.Choices[0].StopReason)
	fmt.Printf("chunks: %q\n", streamed)

	for _, req := range srv.Requests() {
		fmt.Printf("request %d: %d messages, tools %v, stream %v, last tool results %d\n",
			req.Index, len(req.Messages), req.ToolNames(), req.Stream, len(req.LastToolResults()))
	}
	// Output:
	// tool call: call_1 weather {"city":"Paris"}
	// answer: It is sunny in Paris. (stop)
	// chunks: ["It " "is " "sunny " "in " "Paris."]
	// request 0: 1 messages, tools [weather], stream false, last tool results 0
	// request 1: 3 messages, tools [weather], stream true, last tool results 1
}

// Claude's usual answer, text before a tool call, through langchaingo's
// real anthropic client and a strict AnthropicServer. The client sends only
// the first part of an AI message, so the answer goes back one part per
// message; the API (and the server) combine consecutive turns of one role.
func ExampleNewAnthropicServer() {
	srv := llmtest.NewAnthropicServer(llmtest.Sequence(
		llmtest.Reply{Text: "Let me check.", ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}},
		llmtest.Reply{Text: "It is sunny in Paris."},
	), &llmtest.Options{ModelName: "claude-sonnet-4-5"})
	defer srv.Close()
	llm, err := llmclient.Anthropic(srv)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	tools := llms.WithTools([]llms.Tool{{Type: "function", Function: &llms.FunctionDefinition{
		Name:       "weather",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	}}})
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Weather in Paris?")}
	resp, err := llm.GenerateContent(ctx, msgs, tools)
	if err != nil {
		log.Fatal(err)
	}
	// A choice per content block: the text, then the tool call.
	text, call := resp.Choices[0].Content, resp.Choices[1].ToolCalls[0]
	fmt.Println("text:", text)
	fmt.Println("tool call:", call.ID, call.FunctionCall.Name, call.FunctionCall.Arguments)

	msgs = append(msgs,
		llms.TextParts(llms.ChatMessageTypeAI, text),
		llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{call}},
		llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: call.ID, Name: "weather", Content: "sunny"},
		}})
	resp, err = llm.GenerateContent(ctx, msgs, tools)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("answer: %s (%s)\n", resp.Choices[0].Content, resp.Choices[0].StopReason)
	fmt.Println("results seen:", srv.Requests()[1].LastToolResults()[0].Content)
	// Output:
	// text: Let me check.
	// tool call: toolu_01 weather {"city":"Paris"}
	// answer: It is sunny in Paris. (end_turn)
	// results seen: sunny
}

// langchaingo's googleai client built by hand and pointed at a
// GeminiServer. The endpoint is a Google API option, which googleai takes
// in Options.ClientOptions; the server wants an API key, any key.
// (llmclient.GoogleAI builds the same client.)
func ExampleNewGeminiServer() {
	srv := llmtest.NewGeminiServer(llmtest.Sequence(llmtest.Reply{Text: "Hello from Gemini."}), &llmtest.Options{ModelName: "gemini-2.5-flash"})
	defer srv.Close()
	ctx := context.Background()
	llm, err := googleai.New(ctx,
		googleai.WithAPIKey("test-key"),
		googleai.WithDefaultModel(srv.ModelName()),
		func(o *googleai.Options) {
			o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL))
		},
	)
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()
	resp, err := llm.GenerateContent(ctx, []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Hi!"),
	})
	if err != nil {
		log.Fatal(err)
	}
	req := srv.Requests()[0]
	fmt.Println("answer:", resp.Choices[0].Content)
	fmt.Println("model:", req.Model, "streamed on the wire:", req.Stream)
	// Output:
	// answer: Hello from Gemini.
	// model: gemini-2.5-flash streamed on the wire: true
}
