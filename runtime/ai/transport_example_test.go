package ai_test

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/tmc/langchaingo/llms/googleai"
	"google.golang.org/api/option"
	htransport "google.golang.org/api/transport/http"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// langchaingo's googleai client through ai.Transport, so that a turn's
// usage counts the whole of each call: Gemini's early responses carry the
// prompt's count only, and Google's SDK keeps the first. The client's
// HTTP client skips the API key, so Google's transport adds it over
// ai.Transport; the key is given to googleai too, for its cache service.
// Here the client is pointed at llmtest's Gemini server (without
// option.WithEndpoint, and with a nil base, it reaches Google).
func ExampleTransport_gemini() {
	srv := llmtest.NewGeminiServer(llmtest.Sequence(llmtest.Reply{
		Text:  "Hello there, brave new world.",
		Usage: llmtest.Usage{PromptTokens: 20, CompletionTokens: 12},
	}), &llmtest.Options{ModelName: "gemini-2.5-flash"})
	defer srv.Close()
	ctx := context.Background()
	key := "GEMINI_API_KEY"

	rt, err := htransport.NewTransport(ctx, ai.Transport(nil), option.WithAPIKey(key))
	if err != nil {
		log.Fatal(err)
	}
	llm, err := googleai.New(ctx,
		googleai.WithAPIKey(key),
		googleai.WithHTTPClient(&http.Client{Transport: rt}),
		googleai.WithDefaultModel("gemini-2.5-flash"),
		func(o *googleai.Options) {
			o.ClientOptions = append(o.ClientOptions, option.WithEndpoint(srv.URL))
		},
	)
	if err != nil {
		log.Fatal(err)
	}
	defer llm.Close()

	svc := ai.NewService("example.com/app.Assistant", &ai.Config{Model: llm})
	reply, err := svc.Chat(ctx, &ai.Request{Method: &ai.Method{Name: "Ask", System: "Be brief."}, MemoryID: "m", User: "Hi!"})
	if err != nil {
		log.Fatal(err)
	}
	u := reply.Usage
	fmt.Println(reply.Content)
	fmt.Printf("prompt %d, output %d, total %d\n", u.PromptTokens, u.CompletionTokens, u.TotalTokens)
	// Output:
	// Hello there, brave new world.
	// prompt 20, output 12, total 32
}
