package chat_test

import (
	"context"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// BenchmarkLocalTurnDurable is BenchmarkLocalTurn on a router whose
// conversations are durable, over an InMemoryConversationStore: the
// turn's extra cost is its save (state snapshot, version check, lease).
func BenchmarkLocalTurnDurable(b *testing.B) {
	p := chatimpl.NewPackage("example.com/bench")
	p.AddRoute(typedEchoRoute())
	r, err := chat.NewRouter(&chat.RouterOptions{Store: chat.NewInMemoryConversationStore(nil)}, p)
	if err != nil {
		b.Fatal(err)
	}
	client := chat.NewLocalClient(r)
	b.Cleanup(func() { _ = client.Close() })
	s, err := client.Builder().OnMessage(func(string) {}).Connect(context.Background(), "")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Chat(ctx, "hello"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResumeInMemory is the resume of a two-scope conversation on a
// router that did not serve it (load, lease, rebuild, token rotation and
// save), then its first turn, then letting go of it again.
func BenchmarkResumeInMemory(b *testing.B) {
	store := chat.NewInMemoryConversationStore(nil)
	app := newDurableApp(store)
	ra, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: "a"}, app.pkg)
	if err != nil {
		b.Fatal(err)
	}
	rb, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: "b"}, app.pkg)
	if err != nil {
		b.Fatal(err)
	}
	c, err := ra.Connect(bg, "")
	if err != nil {
		b.Fatal(err)
	}
	for _, text := range []string{"build", "name sword"} {
		if _, f := c.Handle(bg, c.ScopeID(), chat.NewTextRequest(text), func(chat.Event) error { return nil }); f != nil {
			b.Fatal(f)
		}
	}
	id, token := c.ID(), c.ResumeToken()
	if err := c.Detach(bg); err != nil {
		b.Fatal(err)
	}
	routers := []*chat.Router{rb, ra}
	req := chat.NewTextRequest("show")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c, err := routers[i%2].Resume(bg, id, token)
		if err != nil {
			b.Fatal(err)
		}
		if _, f := c.Handle(bg, c.ScopeID(), req, func(chat.Event) error { return nil }); f != nil {
			b.Fatal(f)
		}
		token = c.ResumeToken()
		if err := c.Detach(bg); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
