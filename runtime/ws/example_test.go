package ws_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// newRouter returns a router with one route, written by hand here; chatgen
// generates such registrations from //chat:route methods.
func newRouter() *chat.Router {
	p := chatimpl.NewPackage("example.com/shop")
	p.AddRoute(chatimpl.RouteSpec{Name: "shop", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		if err := chat.Response(ctx).Thinking("looking for " + req.UserMessage()); err != nil {
			return err
		}
		return chat.SendValue(ctx, "we have "+req.UserMessage())
	}})
	router, err := chat.NewRouter(nil, p)
	if err != nil {
		log.Fatal(err)
	}
	return router
}

// A router served over websocket, and a Go client chatting with it: the
// same Builder and Session API as chat.LocalClient.
func Example() {
	srv := ws.NewServer(newRouter(), nil)
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()

	ctx := context.Background()
	client, err := ws.Dial(ctx, hs.URL, nil) // the path defaults to ws.RoutesPath
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	s, err := client.Builder().
		OnThinking(func(text string) { fmt.Println("thinking:", text) }).
		OnMessage(func(text string) { fmt.Println("message:", text) }).
		Connect(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	// Chat returns once the request's events have been handled.
	if err := s.Chat(ctx, "swords"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// thinking: looking for swords
	// message: we have swords
}

// The server mounted on a mux, beside the application's pages, with
// options; it also serves the JavaScript client.
func ExampleNewServer() {
	srv := ws.NewServer(newRouter(), &ws.ServerOptions{
		OriginPatterns: []string{"app.example.com"},
		MaxSessions:    8,
	})
	mux := http.NewServeMux()
	mux.Handle("/_chat/", srv)
	mux.Handle("/", http.NotFoundHandler()) // the application's pages
	hs := httptest.NewServer(mux)
	defer hs.Close()
	defer srv.Close()

	resp, err := http.Get(hs.URL + ws.ScriptPath)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println(ws.ScriptPath, resp.Status)
	// Output: /_chat/javascript/chatscopes.js 200 OK
}
