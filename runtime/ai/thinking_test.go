package ai_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// thinkingSession connects to a router whose route "ask" answers with the
// fixture's service (streamed when stream is set) and records the events
// it sends.
func thinkingSession(t *testing.T, f *fixture, stream bool) (chat.Session, func() []string) {
	t.Helper()
	e := newRouteEnv(t, f, chatimpl.RouteSpec{Name: "ask", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		if stream {
			return chat.Response(ctx).StreamWithErrors(f.svc.Stream(ctx, f.req(req.UserMessage())))
		}
		r, err := f.svc.Chat(ctx, f.req(req.UserMessage()))
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	var mu sync.Mutex
	var evs []string
	s, err := e.client.Builder().OnDefault(func(ev chat.Event) {
		mu.Lock()
		evs = append(evs, ev.Type+":"+ev.Text())
		mu.Unlock()
	}).Connect(context.Background(), "ask")
	if err != nil {
		t.Fatal(err)
	}
	return s, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := evs
		evs = nil
		return out
	}
}

// TestForwardThinking: with ForwardThinking, the reasoning the OpenAI
// server streams as reasoning_content reaches the client as Thinking
// events as it comes, before the answer, through langchaingo's real
// client, whether the answer is streamed or not; it is never remembered.
func TestForwardThinking(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "Chat", true: "Stream"}[stream], func(t *testing.T) {
			f := newServerFixture(t, llmtest.Sequence(
				llmtest.Reply{Reasoning: "The user wants a sum.", ToolCalls: []llmtest.ToolCall{{Name: "add", Arguments: `{"a":2,"b":3}`}}},
				llmtest.Reply{Reasoning: "Five it is.", Text: "It is 5."},
			), &ai.Config{ForwardThinking: true})
			s, events := thinkingSession(t, f, stream)
			if err := s.Chat(context.Background(), "2+3?"); err != nil {
				t.Fatal(err)
			}
			answer := []string{"Message:It is 5."}
			if stream {
				answer = []string{"Stream:It ", "Stream:is ", "Stream:5."}
			}
			want := append([]string{"Thinking:The ", "Thinking:user ", "Thinking:wants ", "Thinking:a ", "Thinking:sum.",
				"Thinking:Five ", "Thinking:it ", "Thinking:is."}, answer...)
			wantStrings(t, "events", events(), want...)
			if !f.requests()[0].Stream {
				t.Fatal("the model call did not stream: the reasoning could not come as it is made")
			}
			ctx := context.Background()
			id := s.ScopeID() + "#" + svcName + ".Ask"
			for _, m := range f.memory(ctx, id) {
				if strings.Contains(m, "sum") || strings.Contains(m, "Five") {
					t.Fatalf("reasoning remembered: %q", f.memory(ctx, id))
				}
			}
		})
	}
}

// TestThinkingNotForwarded: without ForwardThinking, reasoning stays on
// the server, and a Chat call does not stream.
func TestThinkingNotForwarded(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(llmtest.Reply{Reasoning: "Secret plan.", Text: "Hi."}), &ai.Config{})
	s, events := thinkingSession(t, f, false)
	if err := s.Chat(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "events", events(), "Message:Hi.")
	if f.requests()[0].Stream {
		t.Fatal("the call streamed")
	}
}

// TestThinkingOfAProviderThatDoesNotStream: reasoning that comes only in
// the answer (ContentChoice.ReasoningContent) is forwarded whole.
func TestThinkingOfAProviderThatDoesNotStream(t *testing.T) {
	whole := func(ai.ModelHandler) ai.ModelHandler {
		return func(context.Context, *ai.ModelCall) (*llms.ContentResponse, error) {
			return &llms.ContentResponse{Choices: []*llms.ContentChoice{{
				Content: "Hi.", ReasoningContent: "Greet back.", StopReason: "stop",
			}}}, nil
		}
	}
	f := newServerFixture(t, llmtest.Sequence(), &ai.Config{ForwardThinking: true, ModelHooks: []ai.ModelHook{whole}})
	s, events := thinkingSession(t, f, false)
	if err := s.Chat(context.Background(), "hi"); err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "events", events(), "Thinking:Greet back.", "Message:Hi.")
}
