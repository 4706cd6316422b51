package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// TestTerminalConfirmsDeletion: deleting an item from the armory asks
// the player y/n; no keeps it, another message passes over the question,
// yes deletes it.
func TestTerminalConfirmsDeletion(t *testing.T) {
	a := newOfflineApp(t)
	var out strings.Builder
	in := strings.NewReader(strings.Join([]string{
		"build a sword", "call it Nightfall", "make it deal 30 damage", "finish",
		"delete Nightfall", "n",
		"delete Nightfall", "hello",
		"delete Nightfall", "y",
		"list my armory",
	}, "\n") + "\n")
	if err := runTerminal(context.Background(), a.router, in, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	ask := `? the armorer wants to run deleteItem {"item":"Nightfall"}. Allow it? [y/n]`
	showsInOrder(t, got,
		"(Nightfall added to your armory)",
		ask,
		"armorer: As you wish, it stays in your armory (the player said no). What next?",
		ask,
		"armorer: Welcome to my forge",
		ask,
		"(your armory is empty)",
		"armorer: Done: Nightfall is gone from the armory. What next?",
		"(your armory is empty)",
	)
	if strings.Contains(got, "failed") {
		t.Fatalf("a request failed:\n%s", got)
	}
	if w := a.armory.Weapons(); len(w) != 0 {
		t.Fatalf("armory %+v", w)
	}
	if st := a.router.Stats(); st.Conversations != 0 || st.Scopes != 0 {
		t.Fatalf("router stats after the session: %+v", st)
	}
}

// durableArmorer is one process of the armorer over a conversation store
// (the armory standing for the application's database).
func durableArmorer(t *testing.T, node string, cs *chat.InMemoryConversationStore, armory *Armory) (*chat.Router, *chat.LocalClient) {
	t.Helper()
	cfg := &ai.Config{
		Model:  llmtest.NewModel(llmtest.ScriptFunc(playArmorer), nil),
		Memory: memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(cs), Policy: memory.Window(40, nil)}),
		Logger: slog.New(slog.DiscardHandler),
	}
	r, err := chat.NewRouter(&chat.RouterOptions{Store: cs, Node: node, Logger: slog.New(slog.DiscardHandler)},
		Register(Deps{Armory: armory, MainMenu: cfg, WeaponBuilder: cfg, Enchanter: cfg, ArmorBuilder: cfg}))
	if err != nil {
		t.Fatal(err)
	}
	c := chat.NewLocalClient(r)
	t.Cleanup(func() { _ = c.Close() })
	return r, c
}

// events records what a session receives.
type events struct {
	mu       sync.Mutex
	stream   strings.Builder
	confirms []ai.Confirmation
}

func (e *events) builder(c *chat.LocalClient) *chat.SessionBuilder {
	return c.Builder().
		OnStream(func(s string) { e.mu.Lock(); e.stream.WriteString(s); e.mu.Unlock() }).
		On(protocol.EventConfirm, func(ev chat.Event) {
			var c ai.Confirmation
			if err := ev.Decode(&c); err != nil {
				panic(err)
			}
			e.mu.Lock()
			e.confirms = append(e.confirms, c)
			e.mu.Unlock()
		}).
		OnDefault(func(chat.Event) {})
}

func (e *events) take() (string, []ai.Confirmation) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, c := e.stream.String(), e.confirms
	e.stream.Reset()
	e.confirms = nil
	return s, c
}

// TestConfirmedDeletionSurvivesARestart runs the generated code over a
// durable router: the turn pauses on deleteItem, a stale answer is
// refused, the process stops, and another one resumes the conversation
// and approves the deletion with edited arguments.
func TestConfirmedDeletionSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	cs := chat.NewInMemoryConversationStore(nil)
	armory := &Armory{}
	for _, name := range []string{"Nightfall", "Dawnbreaker"} {
		if _, err := armory.SaveWeapon(ctx, Weapon{Name: name, Kind: Sword, Damage: 30}); err != nil {
			t.Fatal(err)
		}
	}
	_, ca := durableArmorer(t, "a", cs, armory)
	var ev events
	s, err := ev.builder(ca).Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(ctx, "delete Nightfall"); err != nil {
		t.Fatal(err)
	}
	text, asks := ev.take()
	if len(asks) != 1 || asks[0].Tool != "deleteItem" || string(asks[0].Arguments) != `{"item":"Nightfall"}` || text != "" {
		t.Fatalf("after asking to delete: confirmations %+v, text %q", asks, text)
	}
	err = s.Send(ctx, map[string]any{"confirm": "not-" + asks[0].ID, "approve": true})
	if !errors.Is(err, chat.ErrBadRequest) {
		t.Fatalf("a stale confirmation id: %v", err)
	}
	if len(armory.Weapons()) != 2 {
		t.Fatal("deleted without a confirmation")
	}

	id, token := s.ConversationID(), s.ResumeToken()
	if err := ca.Detach(); err != nil {
		t.Fatal(err)
	}
	rb, cb := durableArmorer(t, "b", cs, armory)
	s2, err := ev.builder(cb).Resume(ctx, id, token)
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Send(ctx, map[string]any{"confirm": asks[0].ID, "approve": true, "arguments": map[string]any{"item": "Dawnbreaker"}}); err != nil {
		t.Fatal(err)
	}
	if text, _ := ev.take(); text != "Done: Dawnbreaker is gone from the armory. What next?" {
		t.Fatalf("after approving in the new process: %q", text)
	}
	if w := armory.Weapons(); len(w) != 1 || w[0].Name != "Nightfall" {
		t.Fatalf("armory %+v", w)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if st := rb.Stats(); st.Conversations != 0 || st.Scopes != 0 {
		t.Fatalf("router stats: %+v", st)
	}
}
