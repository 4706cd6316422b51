package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"

	"github.com/chatscopes/chatgen/runtime/agent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/plan"
	"github.com/chatscopes/chatgen/runtime/protocol"
	"github.com/chatscopes/chatgen/runtime/ws"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// fanOut wraps a model with a barrier: each sub-agent's model call waits
// until the other's has started, so the planner's fan-out completes only
// if its two sub-agent calls run at once (run one after the other, the
// first fails after a minute, and the test with it). It wraps the client
// (langchaingo's, or the in-process model), not the script: llmtest
// answers one request at a time.
type fanOut struct {
	llms.Model
	research, policy     sync.Once
	researchIn, policyIn chan struct{}
}

func newFanOut(m llms.Model) *fanOut {
	return &fanOut{Model: m, researchIn: make(chan struct{}), policyIn: make(chan struct{})}
}

// Unwrap lets the AI service see the client inside.
func (f *fanOut) Unwrap() llms.Model { return f.Model }

// GenerateContent waits at the barrier for a sub-agent's call.
func (f *fanOut) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	system := systemText(&llmtest.Request{Messages: msgs})
	var mine *sync.Once
	var in, other chan struct{}
	switch {
	case strings.Contains(system, "researcher sub-agent"):
		mine, in, other = &f.research, f.researchIn, f.policyIn
	case strings.Contains(system, "policy sub-agent"):
		mine, in, other = &f.policy, f.policyIn, f.researchIn
	}
	if mine != nil {
		mine.Do(func() { close(in) })
		select {
		case <-other:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return f.Model.GenerateContent(ctx, msgs, opts...)
}

// Call is langchaingo's single-prompt call, through GenerateContent.
func (f *fanOut) Call(ctx context.Context, prompt string, opts ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, f, prompt, opts...)
}

// seen is what a client session received.
type seen struct {
	mu       sync.Mutex
	messages []string
	agents   []agent.Event
	plans    []plan.Plan
	sub      map[string]int // SubAgent events by agent
	errs     []error
}

func (s *seen) builder(b *chat.SessionBuilder) *chat.SessionBuilder {
	return b.
		OnMessage(func(m string) { s.mu.Lock(); s.messages = append(s.messages, m); s.mu.Unlock() }).
		On(agent.EventAgent, func(ev chat.Event) {
			var a agent.Event
			err := ev.Decode(&a)
			s.mu.Lock()
			defer s.mu.Unlock()
			s.agents, s.errs = append(s.agents, a), append(s.errs, err)
		}).
		On(protocol.EventPlan, func(ev chat.Event) {
			var p plan.Plan
			err := ev.Decode(&p)
			s.mu.Lock()
			defer s.mu.Unlock()
			s.plans, s.errs = append(s.plans, p), append(s.errs, err)
		}).
		On(ai.EventSubAgent, func(ev chat.Event) {
			var a ai.AgentEvent
			err := ev.Decode(&a)
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.sub == nil {
				s.sub = map[string]int{}
			}
			s.sub[a.Agent]++
			s.errs = append(s.errs, err)
		})
}

// requester is a scripted model or server: what it was sent.
type requester interface{ Requests() []llmtest.Request }

// walk runs the example's session on model through the websocket client
// against the example's own handler, and checks what the client got and
// what the model was sent.
func walk(t *testing.T, model llms.Model, sent requester) {
	t.Helper()
	ctx := t.Context()
	a, err := newApp(model, quiet())
	if err != nil {
		t.Fatal(err)
	}
	h, chatServer, err := a.handler(quiet())
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); chatServer.Close() })
	client, err := ws.Dial(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+ws.RoutesPath, &ws.DialOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var got seen
	session, err := got.builder(client.Builder()).Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"hello", "I need a refund", "thanks, something else", "plan an office move"} {
		if err := session.Chat(ctx, m); err != nil {
			t.Fatalf("chat %q: %v", m, err)
		}
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	for _, err := range got.errs {
		if err != nil {
			t.Fatalf("decoding an event: %v", err)
		}
	}
	wantAgents := []agent.Event{{Name: "billing", From: "triage"}, {Name: "triage", From: "billing", Back: true}, {Name: "planner", From: "triage"}}
	if len(got.agents) != len(wantAgents) {
		t.Fatalf("Agent events %+v, want %+v", got.agents, wantAgents)
	}
	for i, w := range wantAgents {
		if g := got.agents[i]; g.Name != w.Name || g.From != w.From || g.Back != w.Back {
			t.Errorf("Agent event %d: %+v, want %+v", i, g, w)
		}
	}
	if len(got.messages) != 4 || !strings.Contains(got.messages[1], "refund of 42 EUR") ||
		!strings.Contains(got.messages[3], "12 desks") || !strings.Contains(got.messages[3], "approval") {
		t.Errorf("messages %q", got.messages)
	}
	if len(got.plans) != 4 {
		t.Fatalf("%d Plan events, want 4 (created, two subtasks done, plan done): %+v", len(got.plans), got.plans)
	}
	first, last := got.plans[0], got.plans[3]
	if first.Name != "Office move" || len(first.Subtasks) != 2 || first.Subtasks[0].State != plan.Todo {
		t.Errorf("first plan %+v", first)
	}
	if last.State != plan.Done || last.Subtasks[0].State != plan.Done || last.Subtasks[1].State != plan.Done || last.Revision <= first.Revision {
		t.Errorf("last plan %+v", last)
	}
	if got.sub[toolResearch] == 0 || got.sub[toolPolicy] == 0 {
		t.Errorf("SubAgent events by agent %v, want some of both", got.sub)
	}
	// The planner was offered the sub-agents the //chat:agent directives
	// declare, described by their methods' doc comments.
	offered := map[string]string{}
	for _, req := range sent.Requests() {
		if strings.Contains(systemText(&req), "help desk's planner") {
			for _, tool := range req.Tools {
				if tool.Function != nil {
					offered[tool.Function.Name] = tool.Function.Description
				}
			}
		}
	}
	if !strings.HasPrefix(offered[toolResearch], "Research gives a research task to the researcher sub-agent") ||
		!strings.HasPrefix(offered[toolPolicy], "Check gives a task to the policy sub-agent") ||
		!strings.Contains(offered[toolResearch], "session_id") {
		t.Errorf("the planner was offered %q, want both sub-agents described by their doc comments", offered)
	}
	// The planner was told both sub-agents' answers, in call order.
	var told []string
	for _, req := range sent.Requests() {
		if res := req.LastToolResults(); len(res) == 2 && res[0].Name == toolResearch {
			told = []string{res[0].Content, res[1].Content}
		}
	}
	if len(told) != 2 || !strings.Contains(told[0], "12 desks") || !strings.Contains(told[1], "approval") {
		t.Errorf("the planner was told %q, want both sub-agents' answers", told)
	}
	// Billing was given the last two turns: it saw the customer's hello.
	for _, req := range sent.Requests() {
		if strings.Contains(systemText(&req), "billing specialist") && req.UserTyped() == "I need a refund" {
			if !slices.ContainsFunc(req.Messages, func(m llms.MessageContent) bool {
				return m.Role == llms.ChatMessageTypeHuman && strings.Contains(fmt.Sprint(m.Parts), "hello")
			}) {
				t.Errorf("billing was not given the earlier turn: %+v", req.Messages)
			}
		}
	}
}

// TestSession: the example's session through the websocket client on the
// offline model: hand-off and hand-back, the planner's plan events, and
// its two sub-agents run at once.
func TestSession(t *testing.T) {
	model := llmtest.NewModel(script(), nil)
	walk(t, newFanOut(model), model)
}

// TestSessionOpenAI: the same session through langchaingo's real OpenAI
// client against llmtest's OpenAI server.
func TestSessionOpenAI(t *testing.T) {
	srv := llmtest.NewServer(script(), nil)
	defer srv.Close()
	model, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	walk(t, newFanOut(model), srv)
}

// TestSessionAnthropic: the same session through langchaingo's real
// Anthropic client against llmtest's Anthropic server.
func TestSessionAnthropic(t *testing.T) {
	srv := llmtest.NewAnthropicServer(script(), &llmtest.Options{ModelName: "claude-sonnet-4-5"})
	defer srv.Close()
	model, err := anthropic.New(anthropic.WithToken("k"), anthropic.WithBaseURL(srv.URL), anthropic.WithModel("claude-sonnet-4-5"))
	if err != nil {
		t.Fatal(err)
	}
	walk(t, newFanOut(model), srv)
}

// TestTerminal: the terminal mode prints who answers, the plan and the
// answers.
func TestTerminal(t *testing.T) {
	a, err := newApp(offlineModel(), quiet())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	in := strings.NewReader("I need a refund\nthanks, something else\nplan an office move\n")
	if err := runTerminal(context.Background(), a.router, in, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"── billing answers (from triage) ──", "refund of 42 EUR", `plan "Office move" (done)`, "0. [done] Research the new office", "[research research-1] Research: the new office has 12 desks", "[check_policy check_policy-1] Policy: moves need"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the terminal shows no %q:\n%s", want, out.String())
		}
	}
}
