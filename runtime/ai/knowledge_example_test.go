package ai_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/tmc/langchaingo/schema"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// faq is a retriever: any langchaingo vector store's
// vectorstores.ToRetriever would do as well.
type faq []schema.Document

func (f faq) GetRelevantDocuments(_ context.Context, query string) ([]schema.Document, error) {
	var out []schema.Document
	for _, d := range f {
		if strings.Contains(strings.ToLower(query), d.Metadata["id"].(string)) {
			out = append(out, d)
		}
	}
	return out, nil
}

// A service answering from documents in generic mode: the passages go
// with the user's message to the model, never to the memory.
func ExampleKnowledge() {
	docs := faq{
		{PageContent: "Savings accounts pay 2% a year.", Score: 1, Metadata: map[string]any{"id": "savings", "title": "Savings", "source": "faq.md"}},
		{PageContent: "Transfers abroad cost 5 crowns.", Score: 1, Metadata: map[string]any{"id": "transfers", "title": "Transfers", "source": "faq.md"}},
	}
	model := llmtest.NewModel(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: fmt.Sprintf("(read %d characters)", len(req.LastUserText()))}, nil
	}), nil)
	svc := ai.NewService("example.com/bank.RagBot", &ai.Config{Model: model, Knowledge: &ai.Knowledge{Retriever: docs}})
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You answer from the bank's FAQ."}

	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer chat.End(ctx)
	reply, err := svc.Chat(ctx, &ai.Request{Method: method, User: "What do savings pay?"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.Sources[0].Title, reply.Sources[0].Source)
	fmt.Println(model.Requests()[0].LastUserText())
	// Output:
	// Savings faq.md
	// Passages from the knowledge base that may help (answer from them when they are relevant, and cite their titles; say so when they do not answer):
	//
	// [1] Savings (faq.md)
	// Savings accounts pay 2% a year.
	//
	// Message:
	// What do savings pay?
}
