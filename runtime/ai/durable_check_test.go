package ai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// notesApp is a package with one AI service of config cfg, as generated
// code registers it (with its store check when storeCheck is set), and a
// route asking it; the route's error is kept in *routeErr.
func notesApp(cfg *ai.Config, storeCheck bool, routeErr *error) *chatimpl.Package {
	svc := ai.NewService("example.com/notes.Notes", cfg)
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat}
	svc.AddMethods(method)
	p := chatimpl.NewPackage("example.com/notes")
	p.AddCheck(svc.Check)
	if storeCheck {
		p.AddStoreCheck(svc.CheckStore)
	}
	p.AddRoute(chatimpl.RouteSpec{Name: "ask", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: req.UserMessage()})
		*routeErr = err
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	return p
}

func echoModel() *llmtest.Model {
	return llmtest.NewModel(llmtest.Rules(llmtest.When(nil, llmtest.Reply{Text: "noted"})), nil)
}

// A durable router whose AI service keeps its chat memory in the process
// (an ai.Config without Memory, as the guide's durable example had it)
// does not start: after a restart the model would have forgotten every
// conversation. With the store's memories it starts; without a store the
// default memory is fine.
func TestDurableRouterRefusesAMemoryOutsideItsStore(t *testing.T) {
	cs := chat.NewInMemoryConversationStore(nil)
	var routeErr error
	_, err := chat.NewRouter(&chat.RouterOptions{Store: cs}, notesApp(&ai.Config{Model: echoModel()}, true, &routeErr))
	if !errors.Is(err, chat.ErrMemoryNotDurable) || !strings.Contains(err.Error(), "example.com/notes.Notes") || !strings.Contains(err.Error(), "Memory") {
		t.Fatalf("NewRouter with a store and an in-process memory: %v", err)
	}
	if _, err := chat.NewRouter(nil, notesApp(&ai.Config{Model: echoModel()}, true, &routeErr)); err != nil {
		t.Fatalf("NewRouter without a store: %v", err)
	}
	mem := memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(cs), Policy: memory.Window(20, nil)})
	if _, err := chat.NewRouter(&chat.RouterOptions{Store: cs}, notesApp(&ai.Config{Model: echoModel(), Memory: mem}, true, &routeErr)); err != nil {
		t.Fatalf("NewRouter with the store's memories: %v", err)
	}
}

// A package that registers no store check (generated code of an older
// chatgen, a hand-written registration) still does not forget silently:
// the first turn of a durable conversation fails with ErrMemoryNotDurable,
// and the memory is never attached to the scope.
func TestDurableTurnRefusesAMemoryOutsideItsStore(t *testing.T) {
	cs := chat.NewInMemoryConversationStore(nil)
	var routeErr error
	r, err := chat.NewRouter(&chat.RouterOptions{Store: cs}, notesApp(&ai.Config{Model: echoModel()}, false, &routeErr))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Connect(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	_, f := c.Handle(t.Context(), c.ScopeID(), chat.NewTextRequest("remember this"), func(chat.Event) error { return nil })
	if f == nil || !errors.Is(routeErr, chat.ErrMemoryNotDurable) {
		t.Fatalf("a turn with an in-process memory in a durable conversation: failure %v, route error %v", f, routeErr)
	}
	if err := c.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}
