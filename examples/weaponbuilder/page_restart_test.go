//go:build unix

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
)

// TestPageContinuesAfterRestart drives the armorer's page in headless
// Chromium against the weaponbuilder program itself, with its data file:
// in the middle of the weapon builder the process is killed (SIGKILL) and
// started again on the same port and data; the page reconnects by itself,
// resumes its conversation ("Reconnected — continuing where you were"), and
// the walkthrough goes on in the weapon builder with the weapon and the
// armorer's memory as they were. A reload resumes it too.
func TestPageContinuesAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	dir := t.TempDir()
	bin := buildProgram(t, dir)
	data := filepath.Join(dir, "chat.db")
	addr := freeAddr(t)
	srv := startServer(t, bin, addr, data)

	b := browsertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	page, err := b.Open(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	if err := page.SetViewport(ctx, 1280, 800, false); err != nil {
		t.Fatal(err)
	}
	h := &pageHarness{t: t, ctx: ctx, b: b, page: page, width: 1280, addr: addr, shots: artifactDir(t)}
	h.eval(`(location.href = ` + jsString("http://"+addr+"/") + `, "ok")`)
	h.waitFor(`window.armorerSession && !document.getElementById("input").disabled`, "the page to connect")
	h.eval(`(document.getElementById("input").focus(), "ok")`)

	h.send("I want to build a sword")
	h.send("call it Dawnbreaker")
	if c := h.crumbs(); c != "Main menu > Weapon builder" {
		t.Fatalf("crumbs %q", c)
	}

	srv.kill9(t)
	h.waitFor(`document.getElementById("banner").dataset.kind === "lost"`, "the page to notice the lost connection")
	startServer(t, bin, addr, data) // stopped by the test's cleanup
	h.waitFor(`document.getElementById("banner").dataset.kind === "back" && !document.getElementById("input").disabled`, "the page to reconnect by itself")
	h.expect("Reconnected — continuing where you were", "system: Reconnected — continuing where you were, in the Weapon builder.")
	if strings.Contains(h.text(), "new conversation") {
		t.Fatalf("the page started a new conversation:\n%s", h.text())
	}
	if c := h.crumbs(); c != "Main menu > Weapon builder" {
		t.Fatalf("after the restart, crumbs %q", c)
	}
	h.shot("resumed")
	h.eval(`(document.getElementById("input").focus(), "ok")`)
	// The weapon builder's memory: with no tool to call, the armorer asks
	// from the last weapon it remembers.
	h.send("hmm")
	h.expect("armorer: Dawnbreaker, a worthy name.")
	// The workbench (a durable bean) kept the sword's kind and name.
	h.send("make it deal 40 damage")
	h.expect("armorer: Dawnbreaker is taking shape: a sword dealing 40 damage.")
	if card := h.eval(`document.getElementById("card").textContent`); !strings.Contains(card, "Dawnbreaker") || !strings.Contains(card, "40") {
		t.Fatalf("the card after the restart: %q", card)
	}

	// A reload resumes the conversation as well (sessionStorage).
	h.eval(`(location.reload(), "ok")`)
	h.waitFor(`document.getElementById("banner").dataset.kind === "back" && window.armorerSession && !document.getElementById("input").disabled`, "the reloaded page to resume")
	if c := h.crumbs(); c != "Main menu > Weapon builder" {
		t.Fatalf("after a reload, crumbs %q", c)
	}
	h.eval(`(document.getElementById("input").focus(), "ok")`)
	h.send("finish")
	h.expect("Dawnbreaker is in your armory.")
	if c := h.crumbs(); c != "Main menu" {
		t.Fatalf("after finishing, crumbs %q", c)
	}
}
