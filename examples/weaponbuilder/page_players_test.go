//go:build unix

package main

import "testing"

// TestPageRemembersReturningPlayer, in headless Chromium: a player tells
// the armorer their name and favourite weapon kind in one tab; a new tab —
// a new conversation, the same browser and so the same player cookie — is
// welcomed back by name with that kind.
func TestPageRemembersReturningPlayer(t *testing.T) {
	a := newPageHarness(t, 1280, 800, false)
	a.eval(`(document.getElementById("input").focus(), "ok")`)
	a.send("Hello! My name is Ada, and my favourite weapon is the axe.")
	a.expect("armorer: Well met, Ada! I will remember you.")
	b := a.openTab()
	b.send("Hello, it's Ada again! Do you remember my favourite weapon?")
	b.expect("armorer: Welcome back, Ada! Another axe, as you like them?")
}
