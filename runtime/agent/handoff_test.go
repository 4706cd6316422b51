package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/agent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// Each input filter, through the websocket client: what billing's model
// receives when triage hands "refund please" over from a tool, after two
// turns of triage's; the Agent event; the hand-off's record.
func TestHandOffInputs(t *testing.T) {
	const sys = "system: " + billingSystem
	var triageUsage ai.Usage // of the turn that hands off, with no summary
	for _, tc := range []struct {
		input agent.Input
		want  []string
	}{
		{agent.Nothing(), []string{sys, "human: refund please"}},
		{agent.LastTurns(1), []string{sys, "human: second", "ai: triage: second", "human: refund please"}},
		{agent.All(), []string{sys, "human: hello", "ai: triage: hello", "human: second", "ai: triage: second", "human: refund please"}},
		{agent.Summary(nil), []string{sys + "\n\nThe conversation so far, summarised: SUMMARY", "human: refund please"}},
	} {
		t.Run(tc.input.String(), func(t *testing.T) {
			m := newModel(t)
			a := newApp(t, m, nil, tc.input)
			c := a.dial(t, "")
			wantStrings(t, "hello", c.say(t, "hello"), "Message: triage: hello")
			wantStrings(t, "second", c.say(t, "second"), "Message: triage: second")
			wantStrings(t, "the hand-off", c.say(t, "refund please"),
				`Agent: {"name":"billing","from":"triage"}`, "Message: billing: refund please")
			got := m.requestsOf(billingSystem)
			if len(got) != 1 {
				t.Fatalf("billing's model was called %d times", len(got))
			}
			wantStrings(t, "billing's model request", got[0], tc.want...)

			recs := <-a.records
			if len(recs) != 1 || recs[0].From != "triage" || recs[0].To != "billing" || recs[0].Input != tc.input.String() {
				t.Fatalf("records %+v", recs)
			}
			if tc.input.String() == "summary" {
				// The summary is a model call of its own, counted in the
				// record's usage, over the transcript of the two turns.
				sums := m.requestsOf(agent.DefaultSummaryPrompt)
				if len(sums) != 1 || !strings.Contains(sums[0][1], "user: hello\nassistant: triage: hello\nuser: second\nassistant: triage: second") {
					t.Fatalf("summary requests %q", sums)
				}
				if recs[0].Usage.TotalTokens == 0 || recs[0].Usage.PromptTokens == 0 || recs[0].Turns != 2 {
					t.Fatalf("summary record %+v", recs[0])
				}
				// It counts in the usage of triage's turn, whose tool
				// handed off: its own model call's and the summary's.
				got, sum := a.lastUsage("example.com/desk.Triage"), recs[0].Usage
				if got.TotalTokens != triageUsage.TotalTokens+sum.TotalTokens || got.PromptTokens != triageUsage.PromptTokens+sum.PromptTokens {
					t.Fatalf("the triage turn's usage %+v, want its own %+v plus the summary's %+v", got, triageUsage, sum)
				}
			} else if recs[0].Usage.TotalTokens != 0 {
				t.Fatalf("usage of a hand-off without a summary: %+v", recs[0])
			} else {
				triageUsage = a.lastUsage("example.com/desk.Triage")
			}

			// The next message goes to billing, which still sees what it
			// was given, then its own memory.
			wantStrings(t, "after the hand-off", c.say(t, "and more"), "Message: billing: and more")
			got = m.requestsOf(billingSystem)
			want := append(tc.want[:len(tc.want):len(tc.want)], "ai: billing: refund please", "human: and more")
			wantStrings(t, "billing's second request", got[1], want...)
		})
	}
}

// Billing hands back from a tool: triage answers the same message,
// seeing the last turn of billing's conversation; the client is told.
func TestHandBack(t *testing.T) {
	m := newModel(t)
	a := newApp(t, m, nil, agent.LastTurns(1))
	c := a.dial(t, "")
	c.say(t, "hello")
	c.say(t, "refund please")
	<-a.records
	wantStrings(t, "the hand-back", c.say(t, "go back"),
		`Agent: {"name":"triage","from":"billing","back":true}`, "Message: triage: go back")
	recs := <-a.records
	if len(recs) != 2 || !recs[1].Back || recs[1].From != "billing" || recs[1].To != "triage" {
		t.Fatalf("records %+v", recs)
	}
	got := m.requestsOf(triageSystem)
	wantStrings(t, "triage's request after the hand-back", got[len(got)-1],
		"system: "+triageSystem,
		"human: refund please", "ai: billing: refund please", // billing's last turn
		"human: hello", "ai: triage: hello", "human: refund please", "ai: call transfer_to_billing", "tool: transfer_to_billing", // triage's memory
		"human: go back")
	// Nothing left to hand back to.
	wantStrings(t, "at the top", c.say(t, "and now?"), "Message: triage: and now?")
}

// A hand-off to a route the router does not serve fails at the call,
// naming the closest route, and the conversation stays where it was.
func TestHandOffUnknownRoute(t *testing.T) {
	m := newModel(t)
	a := newApp(t, m, nil, agent.All())
	c := a.dial(t, "lost")
	evs := c.say(t, "help")
	err := <-a.errs
	var unknown *chat.UnknownRouteError
	if !errors.As(err, &unknown) || unknown.Route != "biling" || unknown.Suggestion != "billing" {
		t.Fatalf("error %v", err)
	}
	wantStrings(t, "the events", evs, `Error: agent: hand-off from "lost": chat: unknown route "biling"; did you mean "billing"?`)
	c.say(t, "again") // still on "lost"
	if err := <-a.errs; !errors.As(err, &unknown) {
		t.Fatalf("second error %v", err)
	}
	if len(m.srv.Requests()) != 0 {
		t.Fatal("a model was called")
	}
}

// Two agents handing off to each other fail after MaxHandOffs with an
// error naming the path; the request fails, the conversation goes on.
func TestHandOffCycleBounded(t *testing.T) {
	m := newModel(t)
	a := newApp(t, m, nil, agent.All())
	c := a.dial(t, "ping")
	err := c.s.Chat(t.Context(), "hi")
	if err == nil {
		t.Fatal("the cycle did not fail")
	}
	cycle := <-a.errs
	want := `agent: hand-off from "ping" to "pong": too many hand-offs in one request (8: ping → pong → ping → pong → ping → pong → ping → pong → ping → pong)`
	if !errors.Is(cycle, agent.ErrTooManyHandOffs) || cycle.Error() != want {
		t.Fatalf("error\n got %v\nwant %s", cycle, want)
	}
}

// The hand-offs are durable state: a conversation handed to billing on
// one router, resumed on another, is still billing's, which still sees
// what it was given, and hands back to triage with the history intact.
func TestHandOffSurvivesAResume(t *testing.T) {
	m := newModel(t)
	store := chat.NewInMemoryConversationStore(nil)
	a := newApp(t, m, store, agent.All())
	c := a.dial(t, "")
	c.say(t, "hello")
	c.say(t, "refund please")
	<-a.records
	id, token := c.s.ConversationID(), c.s.ResumeToken()
	if err := c.c.Detach(); err != nil {
		t.Fatal(err)
	}
	waitDetached(t, a.router)

	b := newApp(t, m, store, agent.All())
	c2 := b.resume(t, id, token)
	wantStrings(t, "billing after the resume", c2.say(t, "and more"), "Message: billing: and more")
	got := m.requestsOf(billingSystem)
	wantStrings(t, "billing's request on the new router", got[len(got)-1],
		"system: "+billingSystem,
		"human: hello", "ai: triage: hello", // what it was given
		"human: refund please", "ai: billing: refund please", "human: and more") // its memory
	wantStrings(t, "the hand-back on the new router", c2.say(t, "go back"),
		`Agent: {"name":"triage","from":"billing","back":true}`, "Message: triage: go back")
	recs := <-b.records
	if len(recs) != 2 || recs[0].To != "billing" || recs[1].To != "triage" || !recs[1].Back {
		t.Fatalf("history after the resume %+v", recs)
	}
}

// A route hands off (no model call of this request before it): billing
// gets the last turn as triage saw it, its answer included. The Go
// client decodes the Agent event.
func TestHandOffFromARoute(t *testing.T) {
	m := newModel(t)
	a := newApp(t, m, nil, agent.All())
	cl, err := ws.Dial(t.Context(), a.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []agent.Event
	var msgs []string
	s, err := cl.Builder().On(agent.EventAgent, func(ev chat.Event) {
		var e agent.Event
		if err := ev.Decode(&e); err != nil {
			t.Errorf("decoding %v: %v", ev, err)
		}
		got = append(got, e)
	}).OnMessage(func(s string) { msgs = append(msgs, s) }).Connect(t.Context(), "desk")
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"hello", "second", "my billing address"} {
		if err := s.Chat(t.Context(), text); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 1 || got[0] != (agent.Event{Name: "billing", From: "desk"}) {
		t.Fatalf("Agent events %+v", got)
	}
	wantStrings(t, "the messages", msgs, "triage: hello", "triage: second", "billing: my billing address")
	wantStrings(t, "billing's request", m.requestsOf(billingSystem)[0],
		"system: "+billingSystem, "human: second", "ai: triage: second", "human: my billing address")
}

// Options.MaxTurns bounds what All gives.
func TestHandOffMaxTurns(t *testing.T) {
	m := newModel(t)
	a := newAppWith(t, m, nil, agent.All(), &agent.Options{MaxTurns: 1})
	c := a.dial(t, "")
	c.say(t, "hello")
	c.say(t, "second")
	c.say(t, "refund please")
	wantStrings(t, "billing's request", m.requestsOf(billingSystem)[0],
		"system: "+billingSystem, "human: second", "ai: triage: second", "human: refund please")
	if recs := <-a.records; recs[0].Turns != 1 {
		t.Fatalf("records %+v", recs)
	}
}

// A summary that fails fails the hand-off: the model is told, the
// conversation stays with triage, billing never runs.
func TestHandOffSummaryFails(t *testing.T) {
	m := newModel(t)
	a := newApp(t, m, nil, agent.All())
	a.input = agent.Summary(func(context.Context, string) (string, ai.Usage, error) {
		return "", ai.Usage{}, errors.New("the summariser is down")
	})
	c := a.dial(t, "")
	c.say(t, "hello")
	wantStrings(t, "the failed hand-off", c.say(t, "refund please"), "Message: done")
	wantStrings(t, "the next message", c.say(t, "hello again"), "Message: triage: hello again")
	if n := len(m.requestsOf(billingSystem)); n != 0 {
		t.Fatalf("billing ran %d times", n)
	}
	if got := toolResult(m, triageSystem); !strings.Contains(got, "summarising the conversation: the summariser is down") {
		t.Fatalf("the model was told %q", got)
	}
}

// A hand-back with no agent to go back to is told to the model.
func TestHandBackWithoutHandOff(t *testing.T) {
	m := newModel(t)
	a := newApp(t, m, nil, agent.All())
	c := a.dial(t, "billing")
	wantStrings(t, "the hand-back", c.say(t, "go back"), "Message: done")
	if got := toolResult(m, billingSystem); !strings.Contains(got, agent.ErrNothingToHandBack.Error()) {
		t.Fatalf("the model was told %q", got)
	}
}

// toolResult returns the last tool result the agent's model was told.
func toolResult(m *model, system string) string {
	var out string
	for _, r := range m.srv.Requests() {
		if !strings.HasPrefix(text(r.Messages[0]), system) {
			continue
		}
		for _, msg := range r.Messages {
			for _, p := range msg.Parts {
				if tr, ok := p.(llms.ToolCallResponse); ok {
					out = tr.Content
				}
			}
		}
	}
	return out
}

// Outside a route's request there is nothing to hand off.
func TestHandOffOutsideARequest(t *testing.T) {
	h := agent.New(nil)
	if err := h.HandOff(t.Context(), "billing", nil); !errors.Is(err, agent.ErrNoRequest) {
		t.Fatalf("HandOff: %v", err)
	}
	if _, err := h.History(t.Context()); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("History: %v", err)
	}
}

// A hand-off to a route the principal may not use fails Forbidden and is
// undone: the conversation stays on its route, with no hand-off recorded.
func TestHandOffForbidden(t *testing.T) {
	m := newModel(t)
	a := newApp(t, m, nil, agent.All())
	c := a.dial(t, "door")
	if err := c.s.Chat(t.Context(), "let me in"); !errors.Is(err, chat.ErrForbidden) {
		t.Fatalf("the hand-off to vip: %v", err)
	}
	wantStrings(t, "after the refusal", c.say(t, "history"), "Message: door: 0 hand-offs")
}
