package memory_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

func TestModelSummarizerPrompt(t *testing.T) {
	model := llmtest.NewModel(llmtest.Sequence(llmtest.Reply{Text: "  Ada asked for the weather in Paris: sunny.\n"}), nil)
	s := memory.NewModelSummarizer(model, &memory.ModelSummarizerOptions{
		CallOptions: []llms.CallOption{llms.WithModel("small-model")},
	})
	got, err := s.Summarize(t.Context(), memory.SummaryRequest{
		Previous: "The user is Ada.",
		Messages: []llms.MessageContent{
			human("weather in Paris?"),
			{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
				llms.TextContent{Text: "Let me look."},
				llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}},
			}},
			{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: "c1", Name: "weather", Content: `{"sky":"sunny"}`},
			}},
			ai("Sunny."),
		},
		MaxTokens: 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != "Ada asked for the weather in Paris: sunny." {
		t.Fatalf("summary %q: want the model's answer, trimmed", got)
	}
	reqs := model.Requests()
	if len(reqs) != 1 || reqs[0].Model != "small-model" || len(reqs[0].Tools) != 0 {
		t.Fatalf("requests %+v", reqs)
	}
	msgs := reqs[0].Messages
	if len(msgs) != 2 || msgs[0].Role != llms.ChatMessageTypeSystem || msgs[1].Role != llms.ChatMessageTypeHuman {
		t.Fatalf("messages %s", summary(msgs))
	}
	if text := msgs[0].Parts[0].(llms.TextContent).Text; text != memory.DefaultSummaryInstructions {
		t.Fatalf("system message %q", text)
	}
	want := "Current summary:\nThe user is Ada.\n\n" +
		"Messages to fold into it, oldest first:\n" +
		"User: weather in Paris?\n" +
		"Assistant: Let me look.\n" +
		"Assistant called tool weather with {\"city\":\"Paris\"}\n" +
		"Tool weather returned: {\"sky\":\"sunny\"}\n" +
		"Assistant: Sunny.\n" +
		"\nWrite the updated summary in at most 75 words."
	if text := msgs[1].Parts[0].(llms.TextContent).Text; text != want {
		t.Fatalf("prompt\n%s\nwant\n%s", text, want)
	}
}

func TestModelSummarizerFailures(t *testing.T) {
	errModel := errors.New("model down")
	for name, tc := range map[string]struct {
		reply llmtest.Reply
		want  error
	}{
		"error": {llmtest.Reply{Err: errModel}, errModel},
		"empty": {llmtest.Reply{Text: " "}, memory.ErrEmptySummary},
	} {
		t.Run(name, func(t *testing.T) {
			s := memory.NewModelSummarizer(llmtest.NewModel(llmtest.Sequence(tc.reply), nil), nil)
			_, err := s.Summarize(t.Context(), memory.SummaryRequest{Messages: []llms.MessageContent{human("hi")}})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Summarize = %v, want %v", err, tc.want)
			}
		})
	}
	if _, err := memory.NewModelSummarizer(nil, nil).Summarize(t.Context(), memory.SummaryRequest{}); !errors.Is(err, memory.ErrInvalid) {
		t.Fatalf("nil model: %v", err)
	}
}

// TestCompressingLogsFailures checks that a failing model leaves the
// memory whole and says so in the policy's log.
func TestCompressingLogsFailures(t *testing.T) {
	var logs bytes.Buffer
	model := llmtest.NewModel(llmtest.Sequence(
		llmtest.Reply{Status: 503},
		llmtest.Reply{Text: "The user said 1, the assistant 2."},
	), nil)
	p := memory.Compressing(100, memory.NewModelSummarizer(model, nil), &memory.CompressOptions{
		Tokenizer:     summaryCosts(testTokens, false),
		TriggerTokens: 2,
		KeepTokens:    1,
		Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
	})
	s := memory.NewInMemoryStore()
	m := newMemory(t, p, s)
	add(t, m, human("1"), ai("2"))
	add(t, m, human("3"))
	checkShown(t, m, s, "human:1 ai:2 human:3")
	if !strings.Contains(logs.String(), "compressing failed") || !strings.Contains(logs.String(), "503") {
		t.Fatalf("logs: %s", logs.String())
	}
	add(t, m, ai("4"))
	checkShown(t, m, s, "summary:[The user said 1, the assistant 2.] human:3 ai:4")
}

func TestSummaryText(t *testing.T) {
	for _, tc := range []struct {
		msg  llms.MessageContent
		want bool
	}{
		{llms.TextParts(llms.ChatMessageTypeHuman, memory.SummaryPrefix+"x"), true},
		{llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{&llms.TextContent{Text: memory.SummaryPrefix + "x"}}}, true},
		{llms.TextParts(llms.ChatMessageTypeAI, memory.SummaryPrefix+"x"), false},
		{llms.TextParts(llms.ChatMessageTypeHuman, memory.SummaryPrefix+"x", "y"), false},
		{llms.TextParts(llms.ChatMessageTypeHuman, "x"), false},
	} {
		text, ok := memory.SummaryText(tc.msg)
		if ok != tc.want || ok && text != "x" {
			t.Errorf("SummaryText(%s) = %q, %v", show([]llms.MessageContent{tc.msg}), text, ok)
		}
	}
}

// ExampleCompressing builds the memory of an AI service that summarises
// what its window would forget, with a model (here a scripted one).
func ExampleCompressing() {
	ctx := context.Background()
	model := llmtest.NewModel(llmtest.Sequence(llmtest.Reply{Text: "Ada is building a sword."}), nil)
	policy := memory.Compressing(4000, memory.NewModelSummarizer(model, nil), &memory.CompressOptions{
		TriggerTokens: 30, // tiny, for the example
		KeepTokens:    15,
	})
	memories := memory.NewManager(&memory.ManagerOptions{Policy: policy})
	// &ai.Config{Model: model, Memory: memories} gives it to an AI service.
	mem, _ := memories.Memory(ctx, "scope-1#example.com/app.Smith.Build")
	_ = mem.Add(ctx,
		llms.TextParts(llms.ChatMessageTypeSystem, "You build weapons."),
		llms.TextParts(llms.ChatMessageTypeHuman, "I am Ada. Let us build a sword."),
		llms.TextParts(llms.ChatMessageTypeAI, "A sword it is."))
	_ = mem.Add(ctx,
		llms.TextParts(llms.ChatMessageTypeHuman, "Make it long."),
		llms.TextParts(llms.ChatMessageTypeAI, "Done."))
	msgs, _ := mem.Messages(ctx)
	for _, m := range msgs {
		if text, ok := memory.SummaryText(m); ok {
			fmt.Println("summary:", text)
			continue
		}
		fmt.Printf("%s: %s\n", m.Role, m.Parts[0].(llms.TextContent).Text)
	}
	fmt.Printf("%+v\n", policy.Stats())
	// Output:
	// system: You build weapons.
	// summary: Ada is building a sword.
	// human: Make it long.
	// ai: Done.
	// {Adds:2 Compressions:1 Failures:0 Summarized:2 Dropped:0}
}

// TestModelSummarizerReusesTheConversation: with ReuseConversation the
// model gets the conversation as the chat model got it, its last user
// message marked with the cache control, then the instructions; the
// simulated cache of the chat model's prompt serves it.
func TestModelSummarizerReusesTheConversation(t *testing.T) {
	model := llmtest.NewModel(llmtest.Rules().WithFallback(llmtest.Reply{Text: "The user is Ada; she likes swords."}), &llmtest.Options{PromptCache: &llmtest.PromptCache{Rules: llmtest.CacheRulesAnthropic}})
	long := strings.Repeat("Be precise and brief. ", 300)
	mark := &llms.CacheControl{Type: "ephemeral"}
	conv := []llms.MessageContent{sys(long), human("I am Ada."), ai("Hello Ada."), human("I like swords."), ai("Noted.")}
	// The chat request, as the AI service sends it to Anthropic.
	chat := append(conv[:3:3], llms.MessageContent{Role: llms.ChatMessageTypeHuman,
		Parts: []llms.ContentPart{llms.CachedContent{ContentPart: llms.TextContent{Text: "I like swords."}, CacheControl: mark}}})
	if _, err := model.GenerateContent(t.Context(), chat); err != nil {
		t.Fatal(err)
	}
	s := memory.NewModelSummarizer(model, &memory.ModelSummarizerOptions{ReuseConversation: true, CacheControl: mark})
	got, err := s.Summarize(t.Context(), memory.SummaryRequest{Messages: conv[1:3], MaxTokens: 100, Conversation: conv})
	if err != nil || got != "The user is Ada; she likes swords." {
		t.Fatalf("summary %q, %v", got, err)
	}
	req := model.Requests()[1]
	if n := len(req.Messages); n != len(conv)+1 || summary(req.Messages[:3]) != summary(conv[:3]) || summary(req.Messages[4:5]) != "ai:Noted." {
		t.Fatalf("prompt %s, want the conversation then the instructions", summary(req.Messages))
	}
	if c, ok := req.Messages[3].Parts[0].(llms.CachedContent); !ok || c.ContentPart != (llms.TextContent{Text: "I like swords."}) {
		t.Fatalf("the last user message of the conversation is not marked: %#v", req.Messages[3].Parts[0])
	}
	want := memory.DefaultSummaryInstructions + "\n\n" + memory.ConversationSummaryPrompt(memory.SummaryRequest{Messages: conv[1:3], MaxTokens: 100})
	if text := req.LastUserText(); text != want || !strings.Contains(text, "the 2 oldest messages") || !strings.Contains(text, "no summary yet") {
		t.Fatalf("instructions %q", text)
	}
	if req.Cache.ReadTokens != model.Requests()[0].PromptTokens {
		t.Fatalf("the summarizer read %d tokens from the cache, want the chat prompt's %d", req.Cache.ReadTokens, model.Requests()[0].PromptTokens)
	}
	if _, ok := conv[3].Parts[0].(llms.TextContent); !ok {
		t.Fatal("the request's conversation was changed")
	}
}

func TestModelSummarizerTranscriptCallOptions(t *testing.T) {
	model := llmtest.NewModel(llmtest.Rules().WithFallback(llmtest.Reply{Text: "Ada."}), nil)
	s := memory.NewModelSummarizer(model, &memory.ModelSummarizerOptions{
		ReuseConversation:     true,
		CallOptions:           []llms.CallOption{llms.WithModel("big-model"), llms.WithTemperature(0.5)},
		TranscriptCallOptions: []llms.CallOption{llms.WithModel("small-model")},
	})
	conv := []llms.MessageContent{sys("s"), human("I am Ada."), ai("Hello Ada."), human("Hi.")}
	for _, req := range []memory.SummaryRequest{
		{Messages: conv[1:3], Conversation: conv}, // reuses the conversation: the service's model
		{Messages: conv[1:3]},                     // a transcript: the cheaper one
	} {
		if _, err := s.Summarize(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	reqs := model.Requests()
	if len(reqs) != 2 || reqs[0].Model != "big-model" || reqs[1].Model != "small-model" {
		t.Fatalf("models %q, %q: want big-model for the conversation, small-model for the transcript", reqs[0].Model, reqs[1].Model)
	}
	if reqs[1].Messages[0].Role != llms.ChatMessageTypeSystem || !strings.Contains(reqs[1].LastUserText(), "Messages to fold into it") {
		t.Fatalf("the second request is not a transcript: %s", summary(reqs[1].Messages))
	}
}
