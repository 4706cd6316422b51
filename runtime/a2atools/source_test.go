package a2atools_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/a2atools"
	"github.com/chatscopes/chatgen/runtime/ai"
)

// agents are the real servers the tests talk to: @a2a-js/sdk 1.3.0's
// (A2A 1.0, in Node) and a2a-go v0.3.15's (A2A 0.3, in process).
var agents = []struct {
	name    string
	start   func(t testing.TB) string
	version string
}{
	{"js-1.0", func(t testing.TB) string { return jsAgent(t) }, a2atools.Version1},
	{"go-0.3", func(t testing.TB) string { return goAgent(t, true) }, a2atools.Version03},
}

// A model's calls of the remote agent's tool, through a real AI service
// turn over the websocket: the answers of a streamed task, its progress
// as SubAgent events tagged with the agent, one remote context per chat
// scope (a second call continues it, new_conversation starts another, a
// nested scope continues its parent's), an input-required question
// answered by the next call, and a failed task told to the model while
// the conversation goes on.
func TestConversation(t *testing.T) {
	for _, ag := range agents {
		t.Run(ag.name, func(t *testing.T) {
			leaktest.Check(t)
			src := connect(t, ag.start(t), nil)
			if src.Version() != ag.version {
				t.Fatalf("version %q, want %q", src.Version(), ag.version)
			}
			tools := src.ListTools()
			if len(tools) != 1 || tools[0].Name != "Smith" || !strings.Contains(tools[0].Description, "Forges blades on request.") ||
				!strings.Contains(tools[0].Description, "Forge: Forges a blade of the metal you name.") {
				t.Fatalf("tools %+v", tools)
			}
			a := newApp(t, nil, nil, src)
			c := a.dial(t)
			if got, want := c.chat(t, "ask Smith: hello"), "Smith said: blade sharpened\nmessage 1 of this context: hello"; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			evs := c.takeAgentEvents()
			var steps []string
			session := ""
			for _, ev := range evs {
				if ev.Agent != "Smith" || ev.Session == "" || (session != "" && ev.Session != session) {
					t.Fatalf("event %+v: not tagged with the agent and one session", ev)
				}
				session = ev.Session
				steps = append(steps, ev.Type+" "+ev.Text)
			}
			want := []string{"Status working: heating", "Artifact blade ", "Artifact sharpened", "Status completed: message 1 of this context: hello"}
			if strings.Join(steps, "|") != strings.Join(want, "|") {
				t.Fatalf("steps %q, want %q", steps, want)
			}
			if got := c.chat(t, "ask Smith: again"); !strings.HasSuffix(got, "message 2 of this context: again") {
				t.Fatalf("the second call: %q", got)
			}
			if ev := c.takeAgentEvents(); len(ev) == 0 || ev[0].Session != session {
				t.Fatalf("the second call's events %+v, want session %s", ev, session)
			}
			c.chat(t, "nest")
			if got := c.chat(t, "ask Smith: nested"); !strings.HasSuffix(got, "message 3 of this context: nested") {
				t.Fatalf("in a nested scope: %q", got)
			}
			c.chat(t, "back")
			c.takeAgentEvents()
			if got := c.chat(t, "new Smith: fresh"); !strings.HasSuffix(got, "message 1 of this context: fresh") {
				t.Fatalf("a new conversation: %q", got)
			}
			if ev := c.takeAgentEvents(); len(ev) == 0 || ev[0].Session == session {
				t.Fatalf("a new conversation's events %+v, want a new session", ev)
			}

			// input-required: the question, then the answer on the same task.
			got := c.chat(t, "ask Smith: ask me")
			if !strings.Contains(got, "input-required") || !strings.Contains(got, "\nWhich metal?\n") {
				t.Fatalf("the question: %q", got)
			}
			if got := c.chat(t, "ask Smith: steel"); got != "Smith said: forging steel" {
				t.Fatalf("the answer: %q", got)
			}

			// A failed task fails the call only.
			if got := c.chat(t, "ask Smith: fail"); got != `Smith said: error: A2A agent "Smith": the task ended failed: the anvil cracked` {
				t.Fatalf("a failed task: %q", got)
			}
			if got := c.chat(t, "ask Smith: after"); !strings.HasSuffix(got, "of this context: after") {
				t.Fatalf("after the failure: %q", got)
			}

			// An agent answering with a message (no task).
			if got := c.chat(t, "ask Smith: say hi"); got != "Smith said: you said hi" {
				t.Fatalf("a message: %q", got)
			}
			if got := c.chat(t, "ask Smith: then"); !strings.Contains(got, " of this context: then") {
				t.Fatalf("after a message: %q", got)
			}

			// Another conversation has its own remote context.
			c2 := a.dial(t)
			if got := c2.chat(t, "ask Smith: other"); !strings.HasSuffix(got, "message 1 of this context: other") {
				t.Fatalf("another conversation: %q", got)
			}
		})
	}
}

// Without streaming (a card without capabilities.streaming, or
// NoStream), the plain send answers the same and no progress is sent.
func TestPlainSend(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t testing.TB) string
		opts *a2atools.Options
	}{
		{"js-1.0 card", func(t testing.TB) string { return jsAgent(t, "nostream") }, nil},
		{"js-1.0 NoStream", func(t testing.TB) string { return jsAgent(t) }, &a2atools.Options{NoStream: true}},
		{"go-0.3 card", func(t testing.TB) string { return goAgent(t, false) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaktest.Check(t)
			src := connect(t, tc.url(t), tc.opts)
			c := newApp(t, nil, nil, src).dial(t)
			if got, want := c.chat(t, "ask Smith: hello"), "Smith said: blade sharpened\nmessage 1 of this context: hello"; got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
			if got := c.chat(t, "ask Smith: again"); !strings.HasSuffix(got, "message 2 of this context: again") {
				t.Fatalf("the second call: %q", got)
			}
			if ev := c.takeAgentEvents(); len(ev) != 0 {
				t.Fatalf("events %+v, want none", ev)
			}
		})
	}
}

// The answer to a question of a task the agent no longer knows (it
// restarted) goes to the context as a new task.
func TestForgottenTask(t *testing.T) {
	leaktest.Check(t)
	g := startGoAgent(t, true)
	c := newApp(t, nil, nil, connect(t, g.url, nil)).dial(t)
	if got := c.chat(t, "ask Smith: ask me"); !strings.Contains(got, "Which metal?") {
		t.Fatalf("the question: %q", got)
	}
	g.restart()
	if got := c.chat(t, "ask Smith: steel"); !strings.HasSuffix(got, "message 1 of this context: steel") {
		t.Fatalf("the answer after a restart: %q", got)
	}
}

// Close waits for the calls under way; then the source offers no tool and
// a call fails with ErrClosed. Outside a chat scope, each call is a new
// remote conversation.
func TestClose(t *testing.T) {
	leaktest.Check(t)
	src := connect(t, goAgent(t, true), nil)
	call := src.ListTools()[0].Invoke
	for range 2 {
		res, err := call(t.Context(), `{"message":"hello"}`)
		if s, _ := res.(string); err != nil || !strings.HasSuffix(s, "message 1 of this context: hello") {
			t.Fatalf("outside a scope: %v %v", res, err)
		}
	}
	if _, err := call(t.Context(), `{"message":""}`); !errors.As(err, new(*ai.ArgumentsError)) {
		t.Fatalf("an empty message: %v", err)
	}
	if _, err := call(t.Context(), `[1]`); !errors.As(err, new(*ai.ArgumentsError)) {
		t.Fatalf("arguments that are not an object: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := call(t.Context(), `{"message":"pause"}`)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < time.Second {
		t.Fatalf("Close returned after %v, before the call under way", d)
	}
	if err := <-done; err != nil {
		t.Fatalf("the call under way: %v", err)
	}
	if _, err := src.Tools(t.Context()); !errors.Is(err, a2atools.ErrClosed) {
		t.Fatalf("Tools after Close: %v", err)
	}
	if _, err := call(t.Context(), `{"message":"hello"}`); !errors.Is(err, a2atools.ErrClosed) {
		t.Fatalf("a call after Close: %v", err)
	}
}
