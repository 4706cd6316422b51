package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/internal/browsertest"
)

// say types text into the page's form and sends it, as the customer does,
// and resolves once the page takes input again (the answer is in), with
// what the page shows.
const say = `(async (text) => {
	const $ = (id) => document.getElementById(id);
	for (let i = 0; i < 3000 && !window.helpdeskSession; i++) await new Promise(r => setTimeout(r, 10));
	$("input").value = text;
	$("form").requestSubmit();
	for (let i = 0; i < 3000 && $("input").disabled; i++) await new Promise(r => setTimeout(r, 10));
	return JSON.stringify({
		agent: $("agent").textContent,
		log: $("log").innerText,
		plan: $("plan").innerText,
		done: document.querySelectorAll("#plan li.done").length,
		subagents: $("subagents").innerText,
		busy: $("input").disabled,
	});
})`

// shown is what say returns.
type shown struct {
	Agent, Log, Plan, Subagents string
	Done                        int
	Busy                        bool
}

// TestPage: the page in headless Chromium shows who answers (Agent events),
// the plan as the planner keeps it (Plan events) and the sub-agents' steps
// (SubAgent events).
func TestPage(t *testing.T) {
	b := browsertest.Start(t)
	a, err := newApp(offlineModel(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	h, chatServer, err := a.handler(quiet())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); chatServer.Close() })
	ctx := t.Context()
	page, err := b.Open(ctx, hs.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	send := func(text string) shown {
		t.Helper()
		arg, _ := json.Marshal(text)
		out, err := page.Eval(ctx, say+"("+string(arg)+")")
		if err != nil {
			t.Fatalf("%s: %v\n%s", text, err, b.ConsoleLog())
		}
		var s shown
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		if s.Busy {
			t.Fatalf("%s: the page still waits for the answer: %+v", text, s)
		}
		return s
	}
	if s := send("I need a refund"); s.Agent != "billing" || !strings.Contains(s.Log, "triage hands you to billing") || !strings.Contains(s.Log, "refund of 42 EUR") {
		t.Errorf("after the refund question: %+v", s)
	}
	if s := send("thanks, something else"); s.Agent != "triage" || !strings.Contains(s.Log, "billing hands you back to triage") {
		t.Errorf("after the hand-back: %+v", s)
	}
	s := send("plan an office move")
	if s.Agent != "planner" || !strings.Contains(s.Plan, "Office move (done)") || s.Done != 2 || !strings.Contains(s.Log, "12 desks") {
		t.Errorf("after the plan: %+v", s)
	}
	if !strings.Contains(s.Subagents, "research: Research: the new office has 12 desks") || !strings.Contains(s.Subagents, "check_policy: Policy: moves need") {
		t.Errorf("the sub-agents' steps: %q", s.Subagents)
	}
}
