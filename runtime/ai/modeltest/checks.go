package modeltest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// timeout bounds each check: generous, for a loaded machine.
const timeout = 30 * time.Second

func checkContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// converse asks each text in one session of a and returns the answers.
func converse(t *testing.T, a *app, texts ...string) ([]string, error) {
	ctx := checkContext(t)
	s, err := a.session(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, text := range texts {
		ans, err := a.ask(ctx, s, text)
		if err != nil {
			return out, err
		}
		out = append(out, ans)
	}
	return out, nil
}

// wantAnswers reports answers that are not want.
func wantAnswers(got []string, err error, want ...string) error {
	if err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("answers %q, want %q", got, want)
	}
	return nil
}

// lastContains reports an error unless the last request of a has the
// lines of want (see describe), in order.
func (a *app) lastContains(want ...string) error {
	req, err := a.lastRequest()
	if err != nil {
		return err
	}
	return contains("the last request", describe(req.Messages), want...)
}

func checkText(t *testing.T, c Client) error {
	a := mustApp(t, c, weatherScript(""), appOptions{})
	got, err := converse(t, a, "hello")
	return wantAnswers(got, err, "You said: hello")
}

func checkUsage(t *testing.T, c Client) error {
	model, _ := c.New(t, llmtest.Sequence(llmtest.Reply{Text: "Hi.", Usage: llmtest.Usage{PromptTokens: 21, CompletionTokens: 7}}))
	svc := ai.NewService("example.com/modeltest.Assistant", &ai.Config{Model: model, Client: c.Client, Options: c.options(), Logger: quiet()})
	r, err := svc.Chat(checkContext(t), &ai.Request{Method: &ai.Method{Name: "Ask", System: "You are terse."}, MemoryID: "usage", User: "hello"})
	if err != nil {
		return err
	}
	if want := (ai.Usage{PromptTokens: 21, CompletionTokens: 7, TotalTokens: 28}); r.Usage != want {
		return fmt.Errorf("usage %+v, want %+v", r.Usage, want)
	}
	return nil
}

// stream runs one streamed turn on svc and returns the chunks.
func stream(ctx context.Context, svc *ai.Service, m *ai.Method, user string) ([]string, error) {
	var chunks []string
	for chunk, err := range svc.Stream(ctx, &ai.Request{Method: m, MemoryID: "stream", User: user}) {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, chunk)
	}
	return chunks, nil
}

func checkStream(t *testing.T, c Client) error {
	model, rec := c.New(t, llmtest.Sequence(
		llmtest.Reply{Chunks: []string{"The ", "forge ", "is hot."}},
		llmtest.Reply{Text: "Yes."},
	))
	svc := ai.NewService("example.com/modeltest.Assistant", &ai.Config{Model: model, Client: c.Client, Options: c.options(), Logger: quiet()})
	m := &ai.Method{Name: "Ask", System: "You are terse."}
	ctx := checkContext(t)
	chunks, err := stream(ctx, svc, m, "hello")
	if err != nil {
		return err
	}
	if got := strings.Join(chunks, ""); got != "The forge is hot." || len(chunks) < 2 {
		return fmt.Errorf("streamed %q, want \"The forge is hot.\" in several chunks", chunks)
	}
	if _, err := stream(ctx, svc, m, "sure?"); err != nil {
		return err
	}
	reqs := rec.Requests()
	if len(reqs) != 2 {
		return fmt.Errorf("%d requests, want 2", len(reqs))
	}
	if !reqs[0].Stream {
		return errors.New("the first request did not ask for a stream")
	}
	return contains("the second request", describe(reqs[1].Messages), "human: hello", "ai: The forge is hot.", "human: sure?")
}

func checkCutStream(t *testing.T, c Client) error {
	model, rec := c.New(t, llmtest.Sequence(
		llmtest.Reply{Chunks: []string{"The ", "forge ", "is"}, Err: errors.New("the connection was cut")},
		llmtest.Reply{Text: "Again."},
	))
	svc := ai.NewService("example.com/modeltest.Assistant", &ai.Config{Model: model, Client: c.Client, Options: c.options(), Logger: quiet()})
	m := &ai.Method{Name: "Ask", System: "You are terse."}
	ctx := checkContext(t)
	chunks, err := stream(ctx, svc, m, "hello")
	if err == nil {
		return fmt.Errorf("a cut stream (%q) ended the turn without an error", chunks)
	}
	if _, err := stream(ctx, svc, m, "again"); err != nil {
		return fmt.Errorf("the turn after a cut stream: %w", err)
	}
	reqs := rec.Requests()
	for _, line := range describe(reqs[len(reqs)-1].Messages) {
		if strings.Contains(line, "forge") {
			return fmt.Errorf("the cut answer was remembered: %q", line)
		}
	}
	return nil
}

func checkMemoryReplay(t *testing.T, c Client) error {
	a := mustApp(t, c, weatherScript(""), appOptions{})
	got, err := converse(t, a, "hello", "again")
	if err := wantAnswers(got, err, "You said: hello", "You said: again"); err != nil {
		return err
	}
	return a.lastContains("system: You are terse.", "human: hello", "ai: You said: hello", "human: again")
}

func checkToolCall(t *testing.T, c Client) error {
	a := mustApp(t, c, weatherScript("", "Paris"), appOptions{tools: true})
	got, err := converse(t, a, "weather in Paris")
	if err := wantAnswers(got, err, "So: sunny in Paris."); err != nil {
		return err
	}
	if calls := a.calls(); !slices.Equal(calls, []string{"weather Paris"}) {
		return fmt.Errorf("tool calls %q", calls)
	}
	req, err := a.lastRequest()
	if err != nil {
		return err
	}
	if names := req.ToolNames(); !slices.Equal(names, []string{"weather", "drop", "look"}) {
		return fmt.Errorf("tools offered %q", names)
	}
	return a.lastContains("human: weather in Paris", `call weather {"city":"Paris"}`, "result sunny in Paris")
}

func checkToolWithoutParameters(t *testing.T, c Client) error {
	script := llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 {
			return llmtest.Reply{Text: "I see " + res[0].Content + "."}, nil
		}
		return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "look"}}}, nil
	})
	a := mustApp(t, c, script, appOptions{tools: true})
	got, err := converse(t, a, "look around")
	if err := wantAnswers(got, err, "I see an anvil."); err != nil {
		return err
	}
	return a.lastContains("human: look around", "call look {}", "result an anvil")
}

func checkTextBeforeToolCall(t *testing.T, c Client) error {
	a := mustApp(t, c, weatherScript("Let me look.", "Paris"), appOptions{tools: true})
	got, err := converse(t, a, "weather in Paris")
	if err := wantAnswers(got, err, "So: sunny in Paris."); err != nil {
		return err
	}
	return a.lastContains("human: weather in Paris", "ai: Let me look.", `call weather {"city":"Paris"}`, "result sunny in Paris")
}

func checkParallelToolCalls(t *testing.T, c Client) error {
	a := mustApp(t, c, weatherScript("", "Paris", "Rome"), appOptions{tools: true})
	got, err := converse(t, a, "weather in Paris and Rome")
	if err := wantAnswers(got, err, "So: sunny in Paris; sunny in Rome."); err != nil {
		return err
	}
	if calls := a.calls(); !slices.Equal(calls, []string{"weather Paris", "weather Rome"}) {
		return fmt.Errorf("tool calls %q", calls)
	}
	return a.lastContains(`call weather {"city":"Paris"}`, `call weather {"city":"Rome"}`, "result sunny in Paris", "result sunny in Rome")
}

func checkStreamWithTools(t *testing.T, c Client) error {
	a := mustApp(t, c, weatherScript("Looking.", "Paris"), appOptions{tools: true, stream: true})
	got, err := converse(t, a, "weather in Paris")
	if err := wantAnswers(got, err, "Looking.So: sunny in Paris."); err != nil {
		return err
	}
	reqs := a.rec.Requests()
	if len(reqs) == 0 || !reqs[0].Stream {
		return errors.New("the model was not asked to stream")
	}
	return a.lastContains("ai: Looking.", `call weather {"city":"Paris"}`, "result sunny in Paris")
}

func checkToolMemoryReplay(t *testing.T, c Client) error {
	a := mustApp(t, c, weatherScript("", "Paris"), appOptions{tools: true})
	got, err := converse(t, a, "weather in Paris", "thanks")
	if err := wantAnswers(got, err, "So: sunny in Paris.", "You said: thanks"); err != nil {
		return err
	}
	return a.lastContains("human: weather in Paris", `call weather {"city":"Paris"}`, "result sunny in Paris",
		"ai: So: sunny in Paris.", "human: thanks")
}

// dropScript calls drop for "drop <item>" and answers with what the tool
// said after a tool result.
func dropScript() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 {
			return llmtest.Reply{Text: "So: " + res[len(res)-1].Content + "."}, nil
		}
		if item, ok := strings.CutPrefix(req.LastUserText(), "drop "); ok {
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "drop", Arguments: `{"item":"` + item + `"}`}}}, nil
		}
		return llmtest.Reply{Text: "You said: " + req.LastUserText()}, nil
	})
}

// pause asks a to drop item in s and returns the confirmation the turn
// paused on.
func (a *app) pause(ctx context.Context, s chat.Session, item string) (ai.Confirmation, error) {
	if err := s.Chat(ctx, "drop "+item); err != nil {
		return ai.Confirmation{}, a.requestError("drop "+item, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.asks) != 1 {
		return ai.Confirmation{}, fmt.Errorf("%d confirmations asked, want 1", len(a.asks))
	}
	if len(a.ran) != 0 {
		return ai.Confirmation{}, fmt.Errorf("the tool ran before it was confirmed: %q", a.ran)
	}
	return a.asks[0], nil
}

// approve answers confirmation c in s and returns the answer.
func (a *app) approve(ctx context.Context, s chat.Session, c ai.Confirmation) (string, error) {
	a.mu.Lock()
	n := len(a.answers)
	a.mu.Unlock()
	if err := s.Send(ctx, map[string]any{ai.KeyConfirm: c.ID, "approve": true}); err != nil {
		return "", a.requestError("approving", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.answers) != n+1 {
		return "", fmt.Errorf("%d answers to the approval, want 1", len(a.answers)-n)
	}
	return a.answers[n], nil
}

func checkConfirmResume(t *testing.T, c Client) error {
	a := mustApp(t, c, dropScript(), appOptions{tools: true, confirm: true})
	ctx := checkContext(t)
	s, err := a.session(ctx)
	if err != nil {
		return err
	}
	conf, err := a.pause(ctx, s, "sword")
	if err != nil {
		return err
	}
	ans, err := a.approve(ctx, s, conf)
	if err != nil {
		return err
	}
	if ans != "So: dropped sword." {
		return fmt.Errorf("after approving: %q", ans)
	}
	return a.lastContains("human: drop sword", `call drop {"item":"sword"}`, "result dropped sword")
}

func checkDurableResume(t *testing.T, c Client) error {
	store := chat.NewInMemoryConversationStore(nil)
	a := mustApp(t, c, dropScript(), appOptions{tools: true, confirm: true, store: store})
	ctx := checkContext(t)
	s, err := a.session(ctx)
	if err != nil {
		return err
	}
	if _, err := a.ask(ctx, s, "hello"); err != nil {
		return err
	}
	conf, err := a.pause(ctx, s, "sword")
	if err != nil {
		return err
	}
	id, token := s.ConversationID(), s.ResumeToken()
	if err := a.client.Detach(); err != nil {
		return fmt.Errorf("detaching: %w", err)
	}
	// A restart: a new service, model and server over the same store.
	b := mustApp(t, c, dropScript(), appOptions{tools: true, confirm: true, store: store})
	s2, err := b.builder().Resume(ctx, id, token)
	if err != nil {
		return fmt.Errorf("resuming: %w", err)
	}
	ans, err := b.approve(ctx, s2, conf)
	if err != nil {
		return err
	}
	if ans != "So: dropped sword." {
		return fmt.Errorf("after the restart and approving: %q", ans)
	}
	if calls := b.calls(); !slices.Equal(calls, []string{"drop sword"}) {
		return fmt.Errorf("tool calls after the restart %q", calls)
	}
	return b.lastContains("human: hello", "ai: You said: hello", "human: drop sword", `call drop {"item":"sword"}`, "result dropped sword")
}

func checkThinking(t *testing.T, c Client) error {
	script := llmtest.Sequence(
		llmtest.Reply{Reasoning: "The user greets me.", Text: "Hello."},
		llmtest.Reply{Text: "Again."},
	)
	a := mustApp(t, c, script, appOptions{thinking: true})
	got, err := converse(t, a, "hi", "hi again")
	if err := wantAnswers(got, err, "Hello.", "Again."); err != nil {
		return err
	}
	a.mu.Lock()
	thought := strings.Join(a.thinking, "")
	a.mu.Unlock()
	if thought != "The user greets me." {
		return fmt.Errorf("thinking forwarded %q", thought)
	}
	for _, line := range describe(a.rec.Requests()[1].Messages) {
		if strings.Contains(line, "greets") {
			return fmt.Errorf("the reasoning was remembered: %q", line)
		}
	}
	return nil
}

func checkThinkingWithTools(t *testing.T, c Client) error {
	script := llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 {
			return llmtest.Reply{Reasoning: "Now I know.", Text: "So: " + res[0].Content + "."}, nil
		}
		return llmtest.Reply{Reasoning: "I need the weather.", ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}}, nil
	})
	a := mustApp(t, c, script, appOptions{tools: true, thinking: true})
	got, err := converse(t, a, "weather in Paris")
	if err := wantAnswers(got, err, "So: sunny in Paris."); err != nil {
		return err
	}
	a.mu.Lock()
	thought := strings.Join(a.thinking, "")
	a.mu.Unlock()
	if thought != "I need the weather.Now I know." {
		return fmt.Errorf("thinking forwarded %q", thought)
	}
	return nil
}

func checkToolsRefused(t *testing.T, c Client) {
	_, err := newApp(t, c, weatherScript(""), appOptions{tools: true})
	if !errors.Is(err, ai.ErrToolsUnsupported) {
		t.Fatalf("chat.NewRouter of a service with tools on %s: %v, want ai.ErrToolsUnsupported", c.Name, err)
	}
	if !strings.Contains(err.Error(), "llms/openai") {
		t.Errorf("the error gives no advice: %v", err)
	}
}
