package chat_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// An Observer sees each scope's lifecycle, in order: here, a conversation
// that nests one scope and ends. Beginning a second conversation in a
// context that carries one is refused.
func ExampleObserver() {
	what := map[chat.ScopeEventKind]string{
		chat.ScopeStarted:     "started",
		chat.ScopeActivated:   "is current",
		chat.ScopeDeactivated: "is no longer current",
		chat.ScopeEnded:       "ended",
		chat.ScopeDetached:    "left this process", // durable conversations only
		chat.ScopeResumed:     "was resumed here",  // durable conversations only
	}
	var observe chat.Observer = func(_ context.Context, ev chat.ScopeEvent) {
		fmt.Printf("scope at depth %d %s\n", ev.Depth, what[ev.Kind])
	}
	ctx, err := chat.Begin(context.Background(), &chat.BeginOptions{Observer: observe})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := chat.Begin(ctx, nil); errors.Is(err, chat.ErrActive) {
		fmt.Println("a conversation is active already")
	}
	if err := chat.Push(ctx); err != nil {
		log.Fatal(err)
	}
	if err := chat.End(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// scope at depth 0 started
	// scope at depth 0 is current
	// a conversation is active already
	// scope at depth 0 is no longer current
	// scope at depth 1 started
	// scope at depth 1 is current
	// scope at depth 1 is no longer current
	// scope at depth 1 ended
	// scope at depth 0 ended
}

// A bean whose constructor fails fails its lookup with a *BeanError
// naming it; Kind says how long its instances live.
func ExampleBeanError() {
	ledger := chat.NewBean("example.com/shop.Ledger", &chat.BeanOptions{Kind: chat.KindPerChat},
		func(context.Context) (*Cart, error) { return nil, errors.New("the ledger is locked") })
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer chat.End(ctx)
	var kind chat.Kind = ledger.Kind()
	_, err = ledger.Lookup(ctx)
	var be *chat.BeanError
	if errors.As(err, &be) {
		fmt.Println(kind, "bean", be.Bean, "failed:", be.Err)
	}
	// Output:
	// per-chat bean example.com/shop.Ledger failed: the ledger is locked
}

// ChatAsync sends a message without waiting; the Call it returns is
// waited for, or polled, later.
func ExampleSession_chatAsync() {
	p := chatimpl.NewPackage("example.com/echo")
	p.AddRoute(chatimpl.RouteSpec{Name: "echo", Default: true, Handle: func(ctx context.Context) error {
		return chat.Response(ctx).Message("echo: " + chat.Request(ctx).UserMessage())
	}})
	router, err := chat.NewRouter(nil, p)
	if err != nil {
		log.Fatal(err)
	}
	client := chat.NewLocalClient(router)
	defer client.Close()
	session, err := client.Builder().OnMessage(func(text string) { fmt.Println(text) }).Connect(context.Background(), "")
	if err != nil {
		log.Fatal(err)
	}
	var calls []*chat.Call
	for _, text := range []string{"one", "two"} {
		calls = append(calls, session.ChatAsync(context.Background(), text))
	}
	for _, c := range calls {
		if err := c.Wait(context.Background()); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// echo: one
	// echo: two
}
