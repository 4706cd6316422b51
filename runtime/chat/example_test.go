package chat_test

import (
	"context"
	"fmt"
	"log"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// Cart is a chat-scoped bean: what chatgen declares for
//
//	//chat:scoped
//	type Cart struct{ Items []string }
type Cart struct{ Items []string }

// Close runs when the scope that holds the cart is destroyed.
func (c *Cart) Close() error {
	fmt.Println("cart closed with", c.Items)
	return nil
}

// cartBean is the descriptor chatgen generates for Cart.
var cartBean = chat.NewBean("example.com/shop.Cart", nil, func(context.Context) (*Cart, error) {
	return &Cart{}, nil
})

// A conversation is a stack of scopes carried by the context. A chat-scoped
// bean is created on first use in the current scope, is seen by nested
// scopes, and is closed with the scope that holds it.
func ExampleBegin() {
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	cart, _ := cartBean.Lookup(ctx) // generated accessors call Lookup
	cart.Items = append(cart.Items, "sword")

	if err := chat.Push(ctx); err != nil { // a nested scope
		log.Fatal(err)
	}
	depth, _ := chat.Depth(ctx)
	same, _ := cartBean.Lookup(ctx)
	fmt.Println("depth", depth, "same cart:", same == cart)
	_ = chat.Pop(ctx) // back to the top scope; the cart lives there

	if err := chat.End(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("active:", chat.Active(ctx))
	// Output:
	// depth 1 same cart: true
	// cart closed with [sword]
	// active: false
}

// Greeter is a scoped bean whose constructor needs an application
// dependency, the greeting.
type Greeter struct{ Greeting string }

// A bean whose constructor needs application dependencies has no
// constructor of its own: its package's registration provides one (chatgen
// generates Register(deps) for this), and WithPackages hands the
// registration to the conversation.
func ExampleWithPackages() {
	greeterBean := chat.NewBean[*Greeter]("example.com/shop.Greeter", nil, nil)

	p := chatimpl.NewPackage("example.com/shop")
	greeting := "Welcome back" // the application's dependency
	chatimpl.Provide(p, greeterBean, func(context.Context) (*Greeter, error) {
		return &Greeter{Greeting: greeting}, nil
	})

	ctx, err := chat.Begin(chat.WithPackages(context.Background(), p), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer chat.End(ctx)
	g, err := greeterBean.Lookup(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(g.Greeting)
	// Output:
	// Welcome back
}

// A router serves routes; the local client talks to it in the same process
// (ws.Dial is the same client API over a websocket). The route here is
// written by hand the way chatgen registers
//
//	//chat:route echo default
//	func Echo(ctx context.Context, userMessage string) string
func ExampleNewRouter() {
	p := chatimpl.NewPackage("example.com/echo")
	p.AddRoute(chatimpl.RouteSpec{
		Name:    "echo",
		Default: true,
		Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			if err := chat.Response(ctx).Thinking("echoing"); err != nil {
				return err
			}
			return chat.SendValue(ctx, "you said: "+req.UserMessage())
		},
	})
	router, err := chat.NewRouter(nil, p)
	if err != nil {
		log.Fatal(err)
	}

	client := chat.NewLocalClient(router)
	defer client.Close()
	session, err := client.Builder().
		OnThinking(func(text string) { fmt.Println("…", text) }).
		OnMessage(func(text string) { fmt.Println(text) }).
		Connect(context.Background(), "") // "": the default route
	if err != nil {
		log.Fatal(err)
	}
	if err := session.Chat(context.Background(), "hello"); err != nil {
		log.Fatal(err)
	}
	// Output:
	// … echoing
	// you said: hello
}
