package ai_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
)

// Asker is a //chat:ai interface, as an application declares one.
type Asker interface {
	Ask(ctx context.Context, userMessage string) (string, error)
}

// askerImpl is its implementation, as chatgen writes it.
type askerImpl struct{ svc *ai.Service }

var askerAsk = ai.Method{Name: "Ask", Kind: chat.KindChat}

func (x *askerImpl) Ask(ctx context.Context, userMessage string) (string, error) {
	reply, err := x.svc.Chat(ctx, &ai.Request{Method: &askerAsk, User: userMessage})
	if err != nil {
		return "", err
	}
	return reply.Content, nil
}

var askerBean = chat.NewBean[Asker]("example.com/notes.Asker", nil, nil)

// askerApp registers the service of cfg as the generated Register does,
// with one ai.Register, and a route asking it.
func askerApp(cfg *ai.Config) *chatimpl.Package {
	p := chatimpl.NewPackage("example.com/notes")
	ai.Register(p, askerBean, ai.ServiceSpec{Config: cfg, Methods: []*ai.Method{&askerAsk}}, func(svc *ai.Service) Asker {
		return &askerImpl{svc: svc}
	})
	p.AddRoute(chatimpl.RouteSpec{Name: "ask", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		asker, err := askerBean.Lookup(ctx)
		if err != nil {
			return err
		}
		answer, err := asker.Ask(ctx, req.UserMessage())
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, answer)
	}})
	return p
}

// ai.Register registers the service's checks, named as its bean: without
// a model chat.NewRouter fails, and with a store its default in-process
// memory is refused; a router it starts answers through the bean.
func TestRegisterChecksAndProvidesTheService(t *testing.T) {
	// A nil *Config (a Deps field left out) is a service without a model.
	for _, cfg := range []*ai.Config{{}, nil} {
		if _, err := chat.NewRouter(nil, askerApp(cfg)); !errors.Is(err, ai.ErrNoModel) || !strings.Contains(err.Error(), "example.com/notes.Asker") {
			t.Fatalf("NewRouter without a model (%v): %v", cfg, err)
		}
	}
	cs := chat.NewInMemoryConversationStore(nil)
	if _, err := chat.NewRouter(&chat.RouterOptions{Store: cs}, askerApp(&ai.Config{Model: echoModel()})); !errors.Is(err, chat.ErrMemoryNotDurable) {
		t.Fatalf("NewRouter with a store and an in-process memory: %v", err)
	}
	r, err := chat.NewRouter(nil, askerApp(&ai.Config{Model: echoModel()}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Connect(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	_, f := c.Handle(t.Context(), c.ScopeID(), chat.NewTextRequest("remember this"), func(e chat.Event) error {
		got = append(got, fmt.Sprint(e.Data))
		return nil
	})
	if f != nil || !strings.Contains(strings.Join(got, " "), "noted") {
		t.Fatalf("a turn through the registered bean: failure %v, events %q", f, got)
	}
	if err := c.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}
