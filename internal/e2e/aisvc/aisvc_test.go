package aisvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

type harness struct {
	srv     *llmtest.Server
	mem     *memory.Manager
	router  *chat.Router
	client  *chat.LocalClient
	session chat.Session
	mu      sync.Mutex
	events  []string
}

// newHarness serves the generated Smith through langchaingo's real OpenAI
// client talking to the scripted server.
func newHarness(t *testing.T, route string, replies ...llmtest.Reply) *harness {
	t.Helper()
	h := &harness{srv: llmtest.NewServer(llmtest.Sequence(replies...), nil)}
	t.Cleanup(h.srv.Close)
	llm, err := h.srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	h.mem = memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(20, nil)})
	h.router, err = chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.DiscardHandler)},
		Register(Deps{Smith: &ai.Config{Model: llm, Memory: h.mem, Logger: slog.New(slog.DiscardHandler)}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	h.client = chat.NewLocalClient(h.router)
	t.Cleanup(func() { h.client.Close() })
	add := func(s string) { h.mu.Lock(); h.events = append(h.events, s); h.mu.Unlock() }
	h.session, err = h.client.Builder().
		OnMessage(func(m string) { add("message: " + m) }).
		OnThinking(func(m string) { add("thinking: " + m) }).
		OnStream(func(c string) { add("stream: " + c) }).
		On("weapon", func(ev chat.Event) {
			var w Weapon
			if err := ev.Decode(&w); err != nil {
				t.Error(err)
			}
			add(fmt.Sprintf("weapon: %s %s %d", w.Name, w.Kind, w.Damage))
		}).
		OnDefault(func(ev chat.Event) { add(ev.Type + ": " + ev.Text()) }).
		Connect(context.Background(), route)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) chat(t *testing.T, text string, want ...string) {
	t.Helper()
	if err := h.session.Chat(context.Background(), text); err != nil {
		t.Fatalf("Chat(%q): %v", text, err)
	}
	h.expect(t, want...)
}

func (h *harness) expect(t *testing.T, want ...string) {
	t.Helper()
	h.mu.Lock()
	got := h.events
	h.events = nil
	h.mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("events\n  got  %q\n  want %q", got, want)
	}
}

func (h *harness) memoryIDs(t *testing.T) []string {
	t.Helper()
	ids, err := h.mem.Store().IDs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func call(name, args string) llmtest.ToolCall { return llmtest.ToolCall{Name: name, Arguments: args} }

func roles(msgs []llms.MessageContent) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role)[:1])
	}
	return b.String()
}

func TestToolLoopAndMemory(t *testing.T) {
	h := newHarness(t, "",
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("SetKind", `{"kind":"sword"}`)}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("SetName", `{"name":"Dawn"}`)}},
		llmtest.Reply{Text: "Your sword Dawn is ready."},
		llmtest.Reply{Text: "It is still called Dawn."},
	)
	// The tools' results are //chat:event values (Weapon has //chat:event
	// weapon): each reaches the client when its tool returns, besides
	// being told to the model.
	h.chat(t, "a sword called Dawn", "thinking: kind set to sword", "weapon:  sword 0", "weapon: Dawn sword 0", "message: Your sword Dawn is ready.")
	reqs := h.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	// The tools were offered with schemas computed at generate time.
	if got := reqs[0].ToolNames(); !slices.Equal(got, []string{"SetKind", "SetName", "Inspect", "Explode"}) {
		t.Fatalf("tools offered %v", got)
	}
	raw, err := json.Marshal(reqs[0].Tools[0].Function.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	params := string(raw)
	if !strings.Contains(params, `"enum":["sword","axe","bow"]`) {
		t.Fatalf("SetKind schema lacks the enum: %s", params)
	}
	// system, human, ai(tool call), tool, ai(tool call), tool
	if got := roles(reqs[2].Messages); got != "shatat" {
		t.Fatalf("third request roles %q", got)
	}

	h.chat(t, "what is its name?", "message: It is still called Dawn.")
	second := h.srv.Requests()[3].Messages
	// The second turn sees the whole first turn from memory.
	if got := roles(second); got != "shatatah" {
		t.Fatalf("second turn roles %q, want the first turn remembered", got)
	}
	if second[1].Parts[0].(llms.TextContent).Text != "a sword called Dawn" {
		t.Fatalf("first user message not remembered: %+v", second[1])
	}
	if ids := h.memoryIDs(t); len(ids) != 1 || !strings.HasPrefix(ids[0], h.session.ScopeID()+"#") || !strings.HasSuffix(ids[0], "aisvc.Smith.Build") {
		t.Fatalf("memory ids %v, want <scope>#…/aisvc.Smith.Build", ids)
	}
	if err := h.client.Close(); err != nil {
		t.Fatal(err)
	}
	if ids := h.memoryIDs(t); len(ids) != 0 {
		t.Fatalf("memory left after Close: %v", ids)
	}
	if st := h.router.Stats(); st != (chat.Stats{}) {
		t.Fatalf("router stats after Close: %+v", st)
	}
}

func TestImmediateToolMakesOneModelCall(t *testing.T) {
	h := newHarness(t, "",
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("SetName", `{"name":"Oak"}`)}},
		llmtest.Reply{Text: "Named."},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("Inspect", `{}`)}},
		llmtest.Reply{Text: "after the inspection"},
	)
	h.chat(t, "name it Oak", "weapon: Oak  0", "message: Named.")
	before := h.srv.Calls()
	// The route returns ai.Result with no content: the immediate tool's
	// result was sent as an event when it returned (Weapon has
	// //chat:event weapon), and ai.Result.Send does not send it again.
	h.chat(t, "show me", "weapon: Oak  0")
	if got := h.srv.Calls() - before; got != 1 {
		t.Fatalf("%d model calls for an immediate tool, want 1", got)
	}
	// The history stays valid for the next turn (the server rejects
	// dangling tool calls).
	h.chat(t, "thanks", "message: after the inspection")
}

func TestBadToolCallsGoBackToTheModel(t *testing.T) {
	h := newHarness(t, "",
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("Nope", `{}`)}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("SetKind", `{"kind":42}`)}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("SetKind", `{"kind":"spoon"}`)}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{call("Explode", `{}`)}},
		llmtest.Reply{Text: "I could not do it."},
	)
	h.chat(t, "try things", "message: I could not do it.")
	reqs := h.srv.Requests()
	var results []string
	for _, r := range reqs[1:] {
		for _, tr := range r.LastToolResults() {
			results = append(results, tr.Content)
		}
	}
	want := []string{`unknown tool "Nope"`, `invalid arguments for tool "SetKind"`, "unknown kind spoon", `tool "Explode" failed`}
	if len(results) != len(want) {
		t.Fatalf("tool results %q", results)
	}
	for i, w := range want {
		if !strings.Contains(results[i], w) {
			t.Errorf("tool result %d = %q, want it to mention %q", i, results[i], w)
		}
	}
}

func TestModelFailureLeavesMemoryAsItWas(t *testing.T) {
	h := newHarness(t, "",
		llmtest.Reply{Text: "First answer."},
		llmtest.Reply{Status: 500, ErrorMessage: "the model is down"},
		llmtest.Reply{Text: "Second answer."},
	)
	h.chat(t, "one", "message: First answer.")
	err := h.session.Chat(context.Background(), "two")
	if !errors.Is(err, chat.ErrServerError) {
		t.Fatalf("model failure: %v, want ServerError", err)
	}
	h.expect(t)
	h.chat(t, "three", "message: Second answer.")
	// The failed turn left nothing: system, one, First answer, three.
	last := h.srv.Requests()
	if got := roles(last[len(last)-1].Messages); got != "shah" {
		t.Fatalf("roles after a failed turn %q, want shah", got)
	}
}

func TestStreamingRoute(t *testing.T) {
	h := newHarness(t, "story",
		llmtest.Reply{Chunks: []string{"Once ", "upon ", "a blade."}},
	)
	h.chat(t, "tell me", "stream: Once ", "stream: upon ", "stream: a blade.")
	if !h.srv.Requests()[0].Stream {
		t.Fatal("the model was not asked to stream")
	}
}

func TestStructuredOutputWithRetry(t *testing.T) {
	h := newHarness(t, "appraise",
		llmtest.Reply{Text: "a fine axe, I think"},
		llmtest.Reply{Text: "```json\n{\"name\":\"Grim\",\"kind\":\"axe\",\"damage\":40}\n```"},
	)
	h.chat(t, "a big axe", "weapon: Grim axe 40")
	reqs := h.srv.Requests()
	if len(reqs) != 2 || !reqs[0].JSONMode {
		t.Fatalf("%d requests (JSON mode %v), want a JSON request and one retry", len(reqs), len(reqs) > 0 && reqs[0].JSONMode)
	}
}

// TestUserKeyNamesTheText checks a route whose text parameter is not called
// userMessage: with user=question, the route hands the user's text to
// question, and the model gets it as the user message.
func TestUserKeyNamesTheText(t *testing.T) {
	h := newHarness(t, "ask", llmtest.Reply{Text: "Iron and carbon."})
	h.chat(t, "what is steel?", "message: Iron and carbon.")
	msgs := h.srv.Requests()[0].Messages
	if got := roles(msgs); got != "sh" {
		t.Fatalf("roles %q, want a system and a human message", got)
	}
	if got := msgs[1].Parts[0].(llms.TextContent).Text; got != "what is steel?" {
		t.Fatalf("user message %q, want the user's text", got)
	}
}
