package main

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// walkthrough is the README's story: menu → weapon builder → enchantment
// (nested two levels) → back to the builder → back to the menu.
var walkthrough = []string{
	"hello",
	"I want to build a sword",
	"call it Dawnbreaker",
	"make it deal 40 damage",
	"yes, enchant it",
	"fire",
	"power 7",
	"bind",
	"finish",
	"list my armory",
}

func newOfflineApp(t *testing.T) *app {
	t.Helper()
	a, err := newApp(context.Background(), llmtest.NewModel(llmtest.ScriptFunc(playArmorer), nil), slog.New(slog.DiscardHandler), storage{})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// showsInOrder fails the test unless the terminal's output got shows
// every string of want, in order.
func showsInOrder(t *testing.T, got string, want ...string) {
	t.Helper()
	rest := got
	for _, w := range want {
		i := strings.Index(rest, w)
		if i < 0 {
			t.Fatalf("the terminal did not show %q (in order); it showed:\n%s", w, got)
		}
		rest = rest[i+len(w):]
	}
}

// serveOffline serves the offline armorer's page and chat endpoint (its
// handler) on a loopback server that closes when the test ends.
func serveOffline(t *testing.T) *httptest.Server {
	t.Helper()
	h, chatServer, err := newOfflineApp(t).handler(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		_ = chatServer.Close()
		srv.Close()
	})
	return srv
}

func TestTerminalWalkthrough(t *testing.T) {
	a := newOfflineApp(t)
	var out strings.Builder
	in := strings.NewReader(strings.Join(walkthrough, "\n") + "\n")
	if err := runTerminal(context.Background(), a.router, in, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	// What the player sees, in order.
	want := []string{
		"armorer: Welcome to my forge",
		"── » Weapon builder ──",
		"… Laying out a sword blank on the anvil…",
		"armorer: A fine sword! What shall we call it?",
		"┌ Dawnbreaker",
		"armorer: **Dawnbreaker**, a worthy name. How much damage",
		"kind: sword   damage: 40",
		"Shall I enchant it, or finish it?",
		"── » » Enchantment ──",
		"armorer: Which element shall I bind: fire, frost or lightning?",
		"… Carving fire runes…",
		"armorer: Fire it is. How strong, from 1 to 10?",
		"… Charging the runes to power 7…",
		"│ enchantment: fire, power 7",
		"── » Weapon builder ──",
		"armorer: The fire enchantment (power 7) is bound to your sword.",
		"┌ Dawnbreaker  ✔ saved",
		"(Dawnbreaker added to your armory)",
		"── Main menu ──",
		"armorer: **Dawnbreaker** is in your armory. What next?",
		"• Dawnbreaker, a sword (40 damage) with fire 7",
	}
	showsInOrder(t, got, want...)
	if strings.Contains(got, "failed") {
		t.Fatalf("a request failed:\n%s", got)
	}
	if w := a.armory.Weapons(); len(w) != 1 || w[0].Enchantment == nil || w[0].Enchantment.Power != 7 {
		t.Fatalf("armory %+v", w)
	}
	// Closing the session left nothing behind.
	if st := a.router.Stats(); st.Conversations != 0 || st.Scopes != 0 {
		t.Fatalf("router stats after the session: %+v", st)
	}
	if ids, _ := a.memory.Store().IDs(context.Background()); len(ids) != 0 {
		t.Fatalf("chat memory left: %v", ids)
	}
}

// TestCancelLeavesNestedConversations: the builder and the enchanter have a
// way back without finishing — cancel (the page's breadcrumbs send it
// too) — that pops one conversation and saves nothing.
func TestCancelLeavesNestedConversations(t *testing.T) {
	a := newOfflineApp(t)
	var out strings.Builder
	in := strings.NewReader("build a sword\ncall it Nightfall\nenchant it\ngo back to the Weapon builder\ncancel\nI need armour\nnever mind\nlist my armory\n")
	if err := runTerminal(context.Background(), a.router, in, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	showsInOrder(t, got,
		"── » Weapon builder ──",
		"── » » Enchantment ──",
		"── » Weapon builder ──",
		"armorer: The runes fade; no enchantment this time.",
		"── Main menu ──",
		"armorer: I put the sword aside, unfinished. Back at the counter: what next?",
		"── » Armour builder ──",
		"── Main menu ──",
		"armorer: I put the armour aside, unfinished.",
		"(your armory is empty)",
	)
	if len(a.armory.Weapons()) != 0 || len(a.armory.ArmorPieces()) != 0 {
		t.Fatal("a cancelled build was saved")
	}
	if st := a.router.Stats(); st.Conversations != 0 || st.Scopes != 0 {
		t.Fatalf("router stats after the session: %+v", st)
	}
}

func TestFinishBeforeTheWeaponIsReady(t *testing.T) {
	a := newOfflineApp(t)
	var out strings.Builder
	in := strings.NewReader("build a weapon\nfinish\nit is an axe\n")
	if err := runTerminal(context.Background(), a.router, in, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, w := range []string{
		"What kind of weapon shall I forge",
		"Not yet: the weapon still needs a kind, a name, a damage between 1 and 100.",
		"A fine axe! What shall we call it?",
	} {
		if !strings.Contains(got, w) {
			t.Fatalf("missing %q in:\n%s", w, got)
		}
	}
	if len(a.armory.Weapons()) != 0 {
		t.Fatal("an invalid weapon was saved")
	}
}

// Ctrl-C (the context ending) quits the terminal while it waits for a line
// that never comes.
func TestTerminalQuitsWhileWaitingForInput(t *testing.T) {
	a := newOfflineApp(t)
	in, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- runTerminal(ctx, a.router, in, &out) }()
	// Wait for the prompt, then cancel with no input given.
	for !strings.Contains(out.String(), "> ") {
		select {
		case err := <-done:
			t.Fatalf("runTerminal returned before the prompt: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runTerminal: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runTerminal still waits for input after the context ended")
	}
}

// syncBuffer is a strings.Builder safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
