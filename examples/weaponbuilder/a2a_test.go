package main

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
)

// TestA2AServesTheArmorer: a2a-go's client finds the armorer's card and
// builds a weapon in one context: the messages of a context are one
// conversation, handed over from the Main Menu to the weapon builder.
func TestA2AServesTheArmorer(t *testing.T) {
	a := newOfflineApp(t)
	h, err := newA2AHandler(a, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveHandler(ctx, h, ln, h.Close) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	card, err := agentcard.DefaultResolver.Resolve(context.Background(), "http://"+ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var skills []string
	for _, s := range card.Skills {
		skills = append(skills, s.ID)
	}
	if card.Name != "weaponbuilder" || strings.Join(skills, ",") != "armor,enchant,menu,weapon" {
		t.Fatalf("card %s, skills %v", card.Name, skills)
	}
	client, err := a2aclient.NewFromCard(context.Background(), card)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Destroy()
	contextID := ""
	for _, text := range []string{"build a sword", "call it Nightfall", "make it deal 30 damage", "finish"} {
		msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})
		msg.ContextID = contextID
		res, err := client.SendMessage(context.Background(), &a2a.MessageSendParams{Message: msg})
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		task, ok := res.(*a2a.Task)
		if !ok || task.Status.State != a2a.TaskStateCompleted {
			t.Fatalf("%q: %+v", text, res)
		}
		contextID = task.ContextID
	}
	if w := a.armory.Weapons(); len(w) != 1 || w[0].Name != "Nightfall" {
		t.Fatalf("armory %+v", w)
	}
}
