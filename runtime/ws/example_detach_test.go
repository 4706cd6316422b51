package ws_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// A client that stops without ending its conversation: Detach leaves it in
// the server's store, and another client (after a restart of the
// program, say) resumes it with its id and resume token.
func ExampleClient_Detach() {
	p := chatimpl.NewPackage("example.com/notes")
	p.AddRoute(chatimpl.RouteSpec{Name: "notes", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.SendValue(ctx, "noted: "+req.UserMessage())
	}})
	router, err := chat.NewRouter(&chat.RouterOptions{Store: chat.NewInMemoryConversationStore(nil)}, p)
	if err != nil {
		log.Fatal(err)
	}
	srv := ws.NewServer(router, nil)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()

	ctx := context.Background()
	client, err := ws.Dial(ctx, hs.URL, nil)
	if err != nil {
		log.Fatal(err)
	}
	s, err := client.Builder().OnMessage(func(text string) { fmt.Println(text) }).Connect(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Chat(ctx, "milk"); err != nil {
		log.Fatal(err)
	}
	if err := client.Detach(); err != nil {
		log.Fatal(err)
	}
	id, token := s.ConversationID(), s.ResumeToken() // kept by the program

	again, err := ws.Dial(ctx, hs.URL, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer again.Close() // ends the conversation
	s, err = again.Builder().OnMessage(func(text string) { fmt.Println(text) }).Resume(ctx, id, token)
	if err != nil {
		log.Fatal(err)
	}
	if err := s.Chat(ctx, "eggs"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// noted: milk
	// noted: eggs
}
