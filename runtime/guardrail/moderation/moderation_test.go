package moderation_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/guardrail"
	"github.com/chatscopes/chatgen/runtime/guardrail/moderation"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

func openAIModerator(t *testing.T, opts moderation.OpenAIOptions) (*moderation.OpenAI, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Sequence(), nil)
	t.Cleanup(srv.Close)
	opts.BaseURL = srv.URL
	opts.HTTPClient = srv.HTTPClient()
	return moderation.NewOpenAI(&opts), srv
}

func TestOpenAIModerator(t *testing.T) {
	m, srv := openAIModerator(t, moderation.OpenAIOptions{APIKey: "k"})
	ctx := context.Background()
	v, err := m.Moderate(ctx, "Which sword is best against trolls?")
	if err != nil || v.Flagged || len(v.Categories) != 0 || v.Scores["violence"] == 0 {
		t.Fatalf("safe text: %+v %v", v, err)
	}
	v, err = m.Moderate(ctx, "I will KILL the smith and steal his hammer")
	if err != nil || !v.Flagged || strings.Join(v.Categories, ",") != "illicit,violence" || v.Scores["violence"] < 0.5 {
		t.Fatalf("harmful text: %+v %v", v, err)
	}
	if srv.ModerationCalls() != 2 || srv.Calls() != 0 {
		t.Fatalf("%d moderation calls, %d chat calls", srv.ModerationCalls(), srv.Calls())
	}
}

func TestOpenAIModeratorErrors(t *testing.T) {
	ctx := context.Background()
	m, _ := openAIModerator(t, moderation.OpenAIOptions{})
	_, err := m.Moderate(ctx, "hi")
	var ae *moderation.APIError
	if !errors.As(err, &ae) || ae.Status != 401 || ae.Code != "invalid_api_key" {
		t.Fatalf("no key: %v", err)
	}
	m, _ = openAIModerator(t, moderation.OpenAIOptions{APIKey: "k", Model: "gpt-4o"})
	if _, err := m.Moderate(ctx, "hi"); !errors.As(err, &ae) || ae.Status != 404 || ae.Code != "model_not_found" {
		t.Fatalf("wrong model: %v", err)
	}
	m, _ = openAIModerator(t, moderation.OpenAIOptions{APIKey: "k", Model: "text-moderation-stable"})
	if v, err := m.Moderate(ctx, "murder"); err != nil || !v.Flagged {
		t.Fatalf("text model: %+v %v", v, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := m.Moderate(cctx, "hi"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// service returns an AI service with the moderation guardrail on its
// input and output, and the server of its model.
func service(t *testing.T, mod moderation.Moderator, replies ...llmtest.Reply) (*ai.Service, *llmtest.Server, *memory.Manager) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Sequence(replies...), nil)
	t.Cleanup(srv.Close)
	model, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	g := moderation.New(mod, &moderation.Options{Message: "Let's keep it friendly."})
	mem := memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(20, nil)})
	svc := ai.NewService("example.com/app.Smith", &ai.Config{Model: model, Memory: mem,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Guardrails: &guardrail.Set{Input: []guardrail.InputGuardrail{g}, Output: []guardrail.OutputGuardrail{g}}})
	return svc, srv, mem
}

var ask = &ai.Method{Name: "Ask", Kind: chat.KindChat}

func TestModerationGuardrailWithOpenAI(t *testing.T) {
	m, modSrv := openAIModerator(t, moderation.OpenAIOptions{APIKey: "k"})
	svc, srv, _ := service(t, m, llmtest.Reply{Text: "Take the long sword."}, llmtest.Reply{Text: "Then kill him."})
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer chat.End(ctx)

	_, err = svc.Chat(ctx, &ai.Request{Method: ask, User: "how do I poison the king?"})
	var ge *guardrail.Error
	if !errors.As(err, &ge) || ge.Stage != guardrail.StageInput || ge.Message != "Let's keep it friendly." || !errors.Is(err, moderation.ErrFlagged) {
		t.Fatalf("flagged input: %v", err)
	}
	if strings.Contains(err.Error(), "poison the king") || !strings.Contains(err.Error(), "illicit/violent") {
		t.Fatalf("the error should name the categories, not the text: %v", err)
	}
	if srv.Calls() != 0 {
		t.Fatal("the model saw a flagged message")
	}
	if r, err := svc.Chat(ctx, &ai.Request{Method: ask, User: "which sword?"}); err != nil || r.Content != "Take the long sword." {
		t.Fatalf("safe turn: %+v %v", r, err)
	}
	_, err = svc.Chat(ctx, &ai.Request{Method: ask, User: "and the smith?"})
	if !errors.As(err, &ge) || ge.Stage != guardrail.StageOutput || !errors.Is(err, moderation.ErrFlagged) {
		t.Fatalf("flagged answer: %v", err)
	}
	if n := modSrv.ModerationCalls(); n != 5 {
		t.Fatalf("%d moderation calls, want 5 (1 + 2 + 2)", n)
	}
}

func TestModerationFailsClosed(t *testing.T) {
	m, _ := openAIModerator(t, moderation.OpenAIOptions{}) // no key: 401
	svc, srv, _ := service(t, m, llmtest.Reply{Text: "never"})
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer chat.End(ctx)
	_, err = svc.Chat(ctx, &ai.Request{Method: ask, User: "hello"})
	var ge *guardrail.Error
	var ae *moderation.APIError
	if !errors.As(err, &ge) || ge.Outcome != guardrail.OutcomeFatal || !errors.As(err, &ae) || srv.Calls() != 0 {
		t.Fatalf("err %v", err)
	}
}

func TestClassifier(t *testing.T) {
	judge := llmtest.NewServer(llmtest.Sequence(
		llmtest.Reply{Text: "safe"},
		llmtest.Reply{Text: "Unsafe: Violence, made-up, violence"},
		llmtest.Reply{Text: "I think this text is fine."},
		llmtest.Reply{Text: "\"SAFE\"."},
	), nil)
	t.Cleanup(judge.Close)
	model, err := judge.Client()
	if err != nil {
		t.Fatal(err)
	}
	c := moderation.NewClassifier(model, &moderation.ClassifierOptions{Instructions: "Fighting monsters in the game is fine.", CallOptions: []llms.CallOption{llms.WithTemperature(0)}})
	ctx := context.Background()
	if v, err := c.Moderate(ctx, "Which sword?"); err != nil || v.Flagged {
		t.Fatalf("safe: %+v %v", v, err)
	}
	req := judge.Requests()[0]
	if len(req.Messages) != 2 || req.Messages[1].Parts[0] != (llms.TextContent{Text: "Which sword?"}) {
		t.Fatalf("the classifier sent %+v", req.Messages)
	}
	sys := req.Messages[0].Parts[0].(llms.TextContent).Text
	for _, want := range []string{"harassment, hate, illicit, self-harm, sexual, violence", "Fighting monsters in the game is fine.", `"unsafe: "`} {
		if !strings.Contains(sys, want) {
			t.Fatalf("the system message lacks %q: %s", want, sys)
		}
	}
	if v, err := c.Moderate(ctx, "x"); err != nil || !v.Flagged || strings.Join(v.Categories, ",") != "violence" {
		t.Fatalf("unsafe: %+v %v", v, err)
	}
	if _, err := c.Moderate(ctx, "x"); !errors.Is(err, moderation.ErrVerdict) {
		t.Fatalf("no verdict: %v", err)
	}
	if v, err := c.Moderate(ctx, "x"); err != nil || v.Flagged {
		t.Fatalf("quoted safe: %+v %v", v, err)
	}
}

func TestClassifierGuardrail(t *testing.T) {
	judge := llmtest.NewServer(llmtest.Sequence(llmtest.Reply{Text: "unsafe: harassment"}), nil)
	t.Cleanup(judge.Close)
	model, err := judge.Client()
	if err != nil {
		t.Fatal(err)
	}
	svc, srv, _ := service(t, moderation.NewClassifier(model, nil))
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer chat.End(ctx)
	_, err = svc.Chat(ctx, &ai.Request{Method: ask, User: "you idiot"})
	if !errors.Is(err, moderation.ErrFlagged) || !errors.Is(err, guardrail.ErrGuardrailFailed) || srv.Calls() != 0 {
		t.Fatalf("err %v", err)
	}
}
