package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
)

// pageState is what the player sees on the page.
type pageState struct {
	Log          []string `json:"log"`
	Conversation []string `json:"conversation"`
	Card         string   `json:"card"`
	Armory       []string `json:"armory"`
}

const readPage = `JSON.stringify({
	log: Array.from(document.querySelectorAll("#log .msg")).map(e => e.className.replace("msg ", "") + ": " + e.textContent),
	conversation: Array.from(document.querySelectorAll("#conversation .crumb")).map(e => e.textContent),
	card: Array.from(document.getElementById("card").children)
		.map(e => e.children.length ? Array.from(e.children).map(c => c.textContent).join(": ") : e.textContent).join("\n"),
	armory: Array.from(document.querySelectorAll("#armory li")).map(e => e.textContent),
})`

// TestWebWalkthrough plays the README's walkthrough on the web page in
// headless Chromium, typing into the form, and checks what the player sees.
func TestWebWalkthrough(t *testing.T) {
	b := browsertest.Start(t)
	srv := serveOffline(t)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	page, err := b.Open(ctx, srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the session.
	if _, err := page.Eval(ctx, `(async () => {
		for (let i = 0; i < 1000 && !window.armorerSession; i++) await new Promise(r => setTimeout(r, 10));
		if (!window.armorerSession) throw new Error("no session");
		return "ok";
	})()`); err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, b.ConsoleLog())
	}
	state := func() pageState {
		t.Helper()
		raw, err := page.Eval(ctx, readPage)
		if err != nil {
			t.Fatal(err)
		}
		var s pageState
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	say := func(text string) pageState {
		t.Helper()
		quoted, _ := json.Marshal(text)
		_, err := page.Eval(ctx, `(async () => {
			const input = document.getElementById("input"), form = document.getElementById("form");
			input.value = `+string(quoted)+`;
			form.requestSubmit();
			for (let i = 0; i < 1000 && form.dataset.busy; i++) await new Promise(r => setTimeout(r, 10));
			if (form.dataset.busy) throw new Error("the request did not settle");
			return "ok";
		})()`)
		if err != nil {
			t.Fatalf("%q: %v\nconsole:\n%s", text, err, b.ConsoleLog())
		}
		return state()
	}
	lastLines := func(s pageState, n int) string {
		if len(s.Log) < n {
			n = len(s.Log)
		}
		return strings.Join(s.Log[len(s.Log)-n:], "\n")
	}
	expect := func(s pageState, want ...string) {
		t.Helper()
		text := strings.Join(s.Log, "\n") + "\n" + strings.Join(s.Conversation, " > ") + "\n" + s.Card + "\n" + strings.Join(s.Armory, "\n")
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Fatalf("the page does not show %q; it shows:\n%s\n[%s]\n%s\n%v", w, lastLines(s, 8), strings.Join(s.Conversation, " > "), s.Card, s.Armory)
			}
		}
	}

	s := say("hello")
	expect(s, "user: hello", "armorer: Welcome to my forge")
	if got := strings.Join(s.Conversation, ">"); got != "Main menu" {
		t.Fatalf("conversation %q, want the main menu", got)
	}
	s = say("I want to build a sword")
	expect(s, "system: — Weapon builder —", "thinking: Laying out a sword blank on the anvil…", "armorer: A fine sword! What shall we call it?")
	if got := strings.Join(s.Conversation, ">"); got != "Main menu>Weapon builder" {
		t.Fatalf("conversation %q", got)
	}
	s = say("call it Dawnbreaker")
	expect(s, "Dawnbreaker", "armorer: Dawnbreaker, a worthy name.")
	s = say("make it deal 40 damage")
	expect(s, "Damage: 40", "Shall I enchant it, or finish it?")
	s = say("yes, enchant it")
	if got := strings.Join(s.Conversation, ">"); got != "Main menu>Weapon builder>Enchantment" {
		t.Fatalf("conversation %q, want the enchantment nested two levels deep", got)
	}
	expect(s, "armorer: Which element shall I bind")
	say("fire")
	s = say("power 7")
	expect(s, "thinking: Charging the runes to power 7…")
	s = say("bind")
	expect(s, "Enchantment: fire 7", "armorer: The fire enchantment (power 7) is bound to your sword.")
	if got := strings.Join(s.Conversation, ">"); got != "Main menu>Weapon builder" {
		t.Fatalf("after bind, conversation %q", got)
	}
	s = say("finish")
	expect(s, "✔ Saved to your armory", "armorer: Dawnbreaker is in your armory. What next?")
	if got := strings.Join(s.Conversation, ">"); got != "Main menu" {
		t.Fatalf("after finish, conversation %q", got)
	}
	s = say("list my armory")
	expect(s, "Dawnbreaker, a sword (40 damage, fire 7)")
	// The listArmory tool's inventory event reaches the page once: the
	// generated code sends a tool's //chat:event result, the tool does not.
	if n := strings.Count(strings.Join(s.Log, "\n"), "armorer: Here is your armory."); n != 1 {
		t.Fatalf("the armory was shown %d times:\n%s", n, lastLines(s, 8))
	}

	// Deleting the weapon on the card (approved): the card no longer says
	// it is saved in the armory.
	if !strings.Contains(say("delete Dawnbreaker").Card, "Saved to your armory") {
		t.Fatal("the card no longer shows the saved weapon before the deletion")
	}
	if _, err := page.Eval(ctx, `(async () => {
		document.querySelector("#log .msg.confirm button.approve").click();
		const form = document.getElementById("form");
		for (let i = 0; i < 1000 && !form.dataset.busy; i++) await new Promise(r => setTimeout(r, 10));
		for (let i = 0; i < 1000 && form.dataset.busy; i++) await new Promise(r => setTimeout(r, 10));
		if (form.dataset.busy) throw new Error("the approval did not settle");
		return "ok";
	})()`); err != nil {
		t.Fatalf("approving: %v\nconsole:\n%s", err, b.ConsoleLog())
	}
	s = state()
	expect(s, "Dawnbreaker is gone from the armory")
	if strings.Contains(s.Card, "Saved") || strings.Contains(s.Card, "Dawnbreaker") {
		t.Fatalf("after the deletion the card still shows %q", s.Card)
	}
	for _, line := range s.Log {
		if strings.HasPrefix(line, "error:") {
			t.Fatalf("the page showed an error: %s", line)
		}
	}
	// CHATGEN_SCREENSHOT=path.png saves what the page looks like now.
	if path := os.Getenv("CHATGEN_SCREENSHOT"); path != "" {
		png, err := page.Screenshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
