//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
)

// openTab opens the armorer's page in a new tab of h's browser, a page of
// its own (its own sessionStorage: its own conversation), and waits until
// it is connected.
func (h *pageHarness) openTab() *pageHarness {
	h.t.Helper()
	page, err := h.b.Open(h.ctx, "about:blank")
	if err != nil {
		h.t.Fatal(err)
	}
	if err := page.SetViewport(h.ctx, h.width, 800, false); err != nil {
		h.t.Fatal(err)
	}
	tab := *h
	tab.page = page
	tab.eval(`(location.href = ` + jsString("http://"+h.addr+"/") + `, "ok")`)
	tab.waitFor(`window.armorerSession && !document.getElementById("input").disabled`, "the second tab to connect")
	tab.eval(`(document.getElementById("input").focus(), "ok")`)
	return &tab
}

// armory is what the page's armory panel lists.
func (h *pageHarness) armory() string {
	h.t.Helper()
	return h.eval(`Array.from(document.querySelectorAll("#armory li")).map(e => e.textContent).join("; ")`)
}

// TestPageSharedArmoryAndTakenNames: the armory is the forge's, shared by
// every tab: a tab opened after another finished a weapon lists it at
// once, before anyone asks, and a tab that reconnects lists what others
// saved meanwhile. In the weapon builder the page says how to leave
// without finishing (cancel); finishing a weapon whose name is taken says
// so and what to do, the player renames it with a bare name, and finish
// then saves it.
func TestPageSharedArmoryAndTakenNames(t *testing.T) {
	a := newPageHarness(t, 1280, 800, false)
	a.eval(`(document.getElementById("input").focus(), "ok")`)
	a.send("I want to build a sword")
	a.expect("Say “cancel” to leave the Weapon builder without finishing")
	if p := a.eval(`document.getElementById("input").placeholder`); !strings.Contains(p, "cancel") {
		t.Fatalf("in the weapon builder the message box says %q, nothing of cancel", p)
	}
	a.send("call it Dawnbreaker")
	a.send("make it deal 40 damage")
	a.send("finish")
	a.expect("armory: Dawnbreaker, a sword (40 damage)")

	b := a.openTab()
	b.waitFor(`document.querySelector("#armory li") && document.querySelector("#armory li").textContent.startsWith("Dawnbreaker")`, "the second tab to list the armory")
	if got := b.armory(); got != "Dawnbreaker, a sword (40 damage)" {
		t.Fatalf("the second tab's armory lists %q", got)
	}
	if strings.Contains(b.text(), "Here is your armory") {
		t.Fatalf("the armory shown on connecting is announced as an answer:\n%s", b.text())
	}

	b.send("I want to build a sword")
	b.send("call it Dawnbreaker")
	b.send("make it deal 40 damage")
	b.send("finish")
	b.expect("armorer: Not yet: the armory already holds a weapon called Dawnbreaker. Give this one another name")
	if !strings.Contains(b.text(), "or say cancel to leave it unfinished") {
		t.Fatalf("the answer to a taken name does not say how to leave:\n%s", b.text())
	}
	b.send("Frostbite")
	b.expect("armorer: Frostbite is taking shape: a sword dealing 40 damage.", "card: Frostbite")
	b.send("finish")
	b.expect("armorer: Frostbite is in your armory.", "crumbs: Main menu")
	if got := b.armory(); got != "Dawnbreaker, a sword (40 damage)Frostbite, a sword (40 damage)" &&
		got != "Dawnbreaker, a sword (40 damage); Frostbite, a sword (40 damage)" {
		t.Fatalf("the second tab's armory lists %q", got)
	}

	// The first tab learns of Frostbite when it connects again.
	a.down()
	a.waitFor(`document.getElementById("banner").dataset.kind === "lost"`, "the first tab to notice the lost connection")
	a.up()
	a.waitFor(`document.getElementById("banner").dataset.kind === "back" && !document.getElementById("input").disabled`, "the first tab to reconnect")
	a.waitFor(`document.getElementById("armory").textContent.includes("Frostbite")`, "the first tab to list Frostbite")
}

// TestPageTranscriptAfterReload: a reloaded page that resumes its
// conversation shows again what it showed of it — the player's messages,
// the armorer's answers (markdown rendered, markup a model wrote still
// inert), the card — and goes on below; a reload whose conversation cannot
// be resumed starts afresh, without the old transcript.
func TestPageTranscriptAfterReload(t *testing.T) {
	cs := chat.NewInMemoryConversationStore(nil)
	h := newPageHarnessWith(t, 1280, 800, false, storage{conversations: cs, memories: chatstoretest.InMemoryMemories(cs)})
	h.eval(`(document.getElementById("input").focus(), "ok")`)
	h.send("I want to build a sword")
	h.send("call it Dawnbreaker")
	h.send("show me your tricks")
	messages := func() []string {
		var m []string
		h.evalJSON(`Array.from(document.querySelectorAll("#log .msg")).map(e => e.className + ": " + e.textContent.trim())`, &m)
		return m
	}
	before := messages()
	reload := func() {
		h.t.Helper()
		h.eval(`(window.oldPage = true, location.reload(), "ok")`)
		h.waitFor(`!window.oldPage && document.getElementById("banner").dataset.kind === "back" && window.armorerSession && !document.getElementById("input").disabled`, "the reloaded page to resume")
		h.eval(`(document.getElementById("input").focus(), "ok")`)
	}
	reload()
	after := messages()
	if len(after) != len(before)+1 || strings.Join(after[:len(before)], "\n") != strings.Join(before, "\n") {
		t.Fatalf("after the reload the log shows:\n%s\nwant what it showed before:\n%s\nthen the resumption", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	h.expect("system: Reconnected — continuing where you were, in the Weapon builder.", "card: Dawnbreaker", "crumbs: Main menu > Weapon builder")
	if got := h.eval(`String(window.pwned)`); got != "undefined" {
		t.Fatalf("restoring the transcript ran the model's markup: window.pwned = %s", got)
	}
	if n := h.eval(`String(document.querySelectorAll("#log strong").length)`); n == "0" {
		t.Fatal("the restored answers lost their rendered markdown")
	}

	h.send("make it deal 40 damage")
	h.expect("armorer: Dawnbreaker is taking shape: a sword dealing 40 damage.")
	reload()
	h.expect("user: call it Dawnbreaker", "armorer: Dawnbreaker is taking shape: a sword dealing 40 damage.")

	// A conversation the server cannot resume: a new one, and a clean log.
	h.eval(`(() => {
		const s = JSON.parse(sessionStorage.getItem("weaponbuilder.conversation"));
		s.token = "forged";
		sessionStorage.setItem("weaponbuilder.conversation", JSON.stringify(s));
		window.oldPage = true;
		location.reload();
		return "ok";
	})()`)
	h.waitFor(`!window.oldPage && window.armorerSession && !document.getElementById("input").disabled && document.querySelector("#log .msg.system")`, "the reloaded page to start anew")
	if text := h.text(); strings.Contains(text, "call it Dawnbreaker") || strings.Contains(text, "taking shape") || !strings.Contains(text, "card: Nothing yet.") {
		t.Fatalf("a new conversation shows the old one's transcript:\n%s", text)
	}
}
