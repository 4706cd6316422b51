package mcptools_test

import (
	"context"
	"testing"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/mcptools"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// TestPerScopeSessionLeavesWithItsScope: the session of a durable
// conversation's scope is this process's: when the conversation leaves
// the process (Detach), the session closes and the server forgets it,
// though the scope goes on; the node that resumes the conversation opens
// its own on its first turn.
func TestPerScopeSessionLeavesWithItsScope(t *testing.T) {
	leaktest.Check(t)
	h := newHTTPServer(t, "lore")
	src, err := mcptools.PerScope(chat.KindChat, &mcptools.Options{Name: "lore", Transport: h.transport(), Allow: []string{"count"}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	script := llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if r := req.LastToolResults(); len(r) > 0 {
			return say("count " + r[0].Content), nil
		}
		return calls(call("count", `{}`)), nil
	})
	f := newFixture(t, script, src)
	store := chat.NewInMemoryConversationStore(nil)
	// A durable conversation's service keeps its memory in the store.
	svc := ai.NewService("example.com/lore.Keeper", &ai.Config{
		Model:       must(f.llm.Client()),
		ToolSources: []ai.ToolSource{src},
		Memory:      memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(store), Policy: memory.Window(20, nil)}),
		Logger:      f.logs.logger(),
	})
	svc.AddMethods(&ask)
	router := func(node string) *chat.Router {
		p := chatimpl.NewPackage("example.com/lore")
		p.AddRoute(chatimpl.RouteSpec{Name: "ask", Default: true, Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			reply, err := svc.Chat(ctx, &ai.Request{Method: &ask, User: req.UserMessage()})
			if err != nil {
				return err
			}
			return chat.SendValue(ctx, reply.Content)
		}})
		r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: node}, p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	count := func(c *chat.Conversation) string {
		t.Helper()
		var got string
		if _, fl := c.Handle(context.Background(), c.ScopeID(), chat.NewTextRequest("count"), func(ev chat.Event) error {
			if ev.Type == protocol.EventMessage {
				got = ev.Text()
			}
			return nil
		}); fl != nil {
			t.Fatal(fl)
		}
		return got
	}

	c, err := router("a").Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := count(c); got != "count 1" {
		t.Fatalf("node a: %q", got)
	}
	if src.Sessions() != 1 || h.waitSessions(1) != 1 {
		t.Fatalf("during the turns: %d sessions, %d on the server", src.Sessions(), h.sessions())
	}
	id, token := c.ID(), c.ResumeToken()
	if err := c.Detach(context.Background()); err != nil {
		t.Fatal(err)
	}
	if src.Sessions() != 0 || h.waitSessions(0) != 0 {
		t.Fatalf("after Detach: %d sessions, %d on the server", src.Sessions(), h.sessions())
	}

	c2, err := router("b").Resume(context.Background(), id, token)
	if err != nil {
		t.Fatal(err)
	}
	if got := count(c2); got != "count 1" {
		t.Fatalf("node b: %q (a session of its own counts from 1)", got)
	}
	if err := c2.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if src.Sessions() != 0 || h.waitSessions(0) != 0 {
		t.Fatalf("after the end: %d sessions, %d on the server", src.Sessions(), h.sessions())
	}
}
