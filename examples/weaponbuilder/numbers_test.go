package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/examples/weaponbuilder/flat"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// session is the 20-turn session both armorers play: a weapon with a
// nested enchantment, a piece of armour, a second weapon, and the armory
// listed twice.
var session = append(append([]string{}, walkthrough...),
	"I need some armour",
	"a helm please",
	"in steel",
	"finish it",
	"build me an axe",
	"name it Grim",
	"give it 55 damage",
	"done",
	"what have I built?",
	"thanks, farewell",
)

// usage is what one run of the session cost.
type usage struct {
	calls        int
	promptTokens int
	toolsOffered int
	// cached is the prompt tokens OpenAI's prompt cache (simulated) would
	// serve: a prefix of 1,024 tokens or more repeated from an earlier
	// request.
	cached int
}

func (u usage) String() string {
	return fmt.Sprintf("%d model calls, %d prompt tokens (%d cached), %.1f tools offered per call",
		u.calls, u.promptTokens, u.cached, float64(u.toolsOffered)/float64(u.calls))
}

// billed is the input bill in uncached-token equivalents at OpenAI's
// price for cached input (0.5×, gpt-4o).
func (u usage) billed() float64 { return float64(u.promptTokens-u.cached) + 0.5*float64(u.cached) }

// newModel returns the scripted model of a run, with OpenAI's prompt
// cache simulated (the session's turns come within its TTL).
func newModel(script llmtest.Script) *llmtest.Model {
	return llmtest.NewModel(script, &llmtest.Options{PromptCache: &llmtest.PromptCache{
		Rules: llmtest.CacheRulesOpenAI, Now: func() time.Time { return time.Unix(0, 0) },
	}})
}

func measure(model *llmtest.Model) usage {
	var u usage
	for _, r := range model.Requests() {
		u.calls++
		u.promptTokens += r.PromptTokens
		u.toolsOffered += len(r.Tools)
		u.cached += r.Cache.ReadTokens
	}
	return u
}

// playSession runs the session through a router and fails on any failed
// request. after, if not nil, runs after each turn.
func playSession(t testing.TB, router *chat.Router, after func(turn int)) {
	t.Helper()
	client := chat.NewLocalClient(router)
	defer client.Close()
	s, err := client.Builder().Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range session {
		if err := s.Chat(context.Background(), line); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if after != nil {
			after(i)
		}
	}
}

// runScoped plays the session on the chat-scoped armorer. It also counts
// the main menu's model calls in the turns that hand the player over to a
// nested conversation.
func runScoped(t testing.TB) (usage, *app, []int) {
	model := newModel(llmtest.ScriptFunc(playArmorer))
	a, err := newApp(context.Background(), model, slog.New(slog.DiscardHandler), storage{})
	if err != nil {
		t.Fatal(err)
	}
	handOffs := map[int]bool{1: true, 10: true, 14: true} // "I want to build a sword", "I need some armour", "build me an axe"
	var menuCalls []int
	seen := 0
	playSession(t, a.router, func(turn int) {
		reqs := model.Requests()
		if handOffs[turn] {
			n := 0
			for _, r := range reqs[seen:] {
				if slices.Contains(r.ToolNames(), "buildWeapon") {
					n++
				}
			}
			menuCalls = append(menuCalls, n)
		}
		seen = len(reqs)
	})
	return measure(model), a, menuCalls
}

// runFlat plays the session on the flat armorer: one prompt, every tool
// (the lore search too, as the scoped Main Menu has it), one memory (the
// same 40-message window).
func runFlat(t testing.TB) usage {
	model := newModel(llmtest.ScriptFunc(flat.Play))
	lore, err := loreKnowledge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ai.Config{Model: model, Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(40, nil)}), Logger: slog.New(slog.DiscardHandler), Knowledge: lore}
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.DiscardHandler)}, flat.Register(flat.Deps{Armorer: cfg}))
	if err != nil {
		t.Fatal(err)
	}
	playSession(t, router, nil)
	return measure(model)
}

// TestTokenEfficiency is the comparison reported in docs/numbers.md: the
// same 20-turn session, with chat scopes and as one flat prompt.
func TestTokenEfficiency(t *testing.T) {
	scoped, a, menuCalls := runScoped(t)
	flatUsage := runFlat(t)
	t.Logf("chat scopes: %s", scoped)
	t.Logf("flat prompt: %s", flatUsage)
	t.Logf("prompt tokens: chat scopes send %.0f%% of the flat prompt's", 100*float64(scoped.promptTokens)/float64(flatUsage.promptTokens))
	t.Logf("billed with OpenAI's prompt cache: chat scopes %.0f, flat prompt %.0f (%.0f%%)", scoped.billed(), flatUsage.billed(), 100*scoped.billed()/flatUsage.billed())
	// Immediate hand-off tools: the menu's model picks the tool and no
	// second menu call follows (a normal tool needs one more round trip to
	// hand the tool's result back to the model).
	t.Logf("main menu model calls per hand-off: %v", menuCalls)
	if !slices.Equal(menuCalls, []int{1, 1, 1}) {
		t.Errorf("main menu model calls per hand-off %v, want 1 each", menuCalls)
	}
	if w := a.armory.Weapons(); len(w) != 2 || len(a.armory.ArmorPieces()) != 1 {
		t.Fatalf("the scoped session built %d weapons and %d armour, want 2 and 1", len(w), len(a.armory.ArmorPieces()))
	}
	if 2*scoped.promptTokens > flatUsage.promptTokens {
		t.Errorf("chat scopes sent %d prompt tokens, more than half of the flat prompt's %d", scoped.promptTokens, flatUsage.promptTokens)
	}
	if os.Getenv("CHATGEN_NUMBERS") != "" {
		for _, r := range []struct {
			name string
			u    usage
		}{{"chat scopes", scoped}, {"flat prompt", flatUsage}} {
			fmt.Printf("| %s | %d | %d | %.1f | %d | %.0f |\n", r.name, r.u.calls, r.u.promptTokens,
				float64(r.u.toolsOffered)/float64(r.u.calls), r.u.cached, r.u.billed())
		}
	}
}
