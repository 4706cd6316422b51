package ai_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// summaryScript plays both the assistant and, for requests whose system
// message is memory.DefaultSummaryInstructions, the summarizer: its summary
// keeps the previous summary and every user line of the transcript.
func summaryScript() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if len(req.Messages) > 0 && textOf(req.Messages[0]) == memory.DefaultSummaryInstructions {
			prompt := req.LastUserText()
			prev, rest, ok := strings.Cut(strings.TrimPrefix(prompt, "Current summary:\n"), "\nMessages to fold into it, oldest first:\n")
			if !ok {
				return llmtest.Reply{}, fmt.Errorf("not a summary prompt: %q", prompt)
			}
			var keep []string
			if p := strings.TrimSpace(prev); p != "(none yet)" {
				keep = append(keep, p)
			}
			for line := range strings.Lines(rest) {
				if strings.HasPrefix(line, "User: ") {
					keep = append(keep, strings.TrimSpace(line))
				}
			}
			return llmtest.Reply{Text: strings.Join(keep, "\n")}, nil
		}
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == llms.ChatMessageTypeTool:
			return llmtest.Reply{Text: "It is sunny there."}, nil
		case strings.HasPrefix(req.LastUserText(), "weather in "):
			city := strings.TrimPrefix(req.LastUserText(), "weather in ")
			return calls(call("weather", `{"city":"`+city+`"}`)), nil
		default:
			return llmtest.Reply{Text: "Noted: " + req.LastUserText()}, nil
		}
	})
}

func textOf(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// TestCompressingMemory runs an AI service whose memory is compressed by
// the service's own model (langchaingo's OpenAI client against the scripted
// server, which rejects orphan tool messages as OpenAI does), over a
// FileStore, then restarts it: the summary is sent pinned after the system
// message, tool exchanges are never split, and the summary survives.
func TestCompressingMemory(t *testing.T) {
	dir := t.TempDir()
	srv := llmtest.NewServer(summaryScript(), nil)
	t.Cleanup(srv.Close)
	llm, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	box := &toolbox{hooks: map[string]func(context.Context) error{}}
	tools := box.tools()
	logs := &logBuffer{}

	// start returns a service as an application builds it at start-up.
	start := func() (*ai.Service, *memory.CompressingPolicy) {
		store, err := memory.NewFileStore(dir)
		if err != nil {
			t.Fatal(err)
		}
		policy := memory.Compressing(240, memory.NewModelSummarizer(llm, nil), &memory.CompressOptions{
			TriggerTokens: 120, KeepTokens: 60, Logger: logs.logger(),
		})
		svc := ai.NewService(svcName, &ai.Config{
			Model:  llm,
			Memory: memory.NewManager(&memory.ManagerOptions{Store: store, Policy: policy}),
			Logger: logs.logger(),
		})
		return svc, policy
	}
	ask := func(svc *ai.Service, text string) {
		t.Helper()
		req := &ai.Request{
			Method:   &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse.", Tools: tools},
			MemoryID: "conversation-1",
			User:     text,
		}
		if _, err := svc.Chat(t.Context(), req); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
	}

	svc, policy := start()
	turns := []string{"weather in Paris", "my name is Ada", "weather in Oslo", "I like axes"}
	for i := range 12 {
		ask(svc, turns[i%len(turns)])
	}

	var summaries, chats []llmtest.Request
	for _, r := range srv.Requests() {
		if textOf(r.Messages[0]) == memory.DefaultSummaryInstructions {
			summaries = append(summaries, r)
		} else {
			chats = append(chats, r)
		}
	}
	st := policy.Stats()
	if st.Compressions == 0 || int64(len(summaries)) != st.Compressions || st.Failures != 0 || st.Dropped != 0 {
		t.Fatalf("%d summary requests, stats %+v", len(summaries), st)
	}
	if len(summaries) > 12/3 {
		t.Fatalf("%d summaries for 12 turns: compression is not batched", len(summaries))
	}
	last := chats[len(chats)-1].Messages
	summary, ok := memory.SummaryText(last[1])
	if textOf(last[0]) != "You are terse." || !ok {
		t.Fatalf("the last request does not start with the system message and the summary:\n%s",
			strings.Join(describe(last[:2]), "\n"))
	}
	if !strings.Contains(summary, "User: weather in Paris") || !strings.Contains(summary, "User: my name is Ada") {
		t.Fatalf("the summary lost the first turns: %q", summary)
	}

	// Restart: a new store, manager, policy and service over the same files.
	svc2, _ := start()
	n := len(srv.Requests())
	ask(svc2, "what is my name?")
	first := srv.Requests()[n].Messages
	again, ok := memory.SummaryText(first[1])
	if !ok || !strings.HasPrefix(again, summary) {
		t.Fatalf("after a restart the model is sent %q, want the summary %q", again, summary)
	}
}

// TestCompressingMemoryWipes: in a chat scope, a compressing memory over a
// FileStore is summarised, then chat.ClearMemory empties it, summary
// included (the next turn is sent no summary); a nested scope's summarised
// memory is deleted from the store when the scope is popped, and nothing
// is left when the conversation ends.
func TestCompressingMemoryWipes(t *testing.T) {
	srv := llmtest.NewServer(summaryScript(), nil)
	t.Cleanup(srv.Close)
	llm := must[llms.Model](t)(srv.Client())
	store, err := memory.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	policy := memory.Compressing(240, memory.NewModelSummarizer(llm, nil), &memory.CompressOptions{TriggerTokens: 120, KeepTokens: 60})
	svc := ai.NewService(svcName, &ai.Config{Model: llm, Memory: memory.NewManager(&memory.ManagerOptions{Store: store, Policy: policy})})
	ask := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}
	ctx := begin(t)
	chatUntilSummarised := func() string {
		t.Helper()
		start := policy.Stats().Compressions
		for i := 0; policy.Stats().Compressions == start; i++ {
			if i == 20 {
				t.Fatal("no compression in 20 turns")
			}
			if _, err := svc.Chat(ctx, &ai.Request{Method: ask, User: fmt.Sprintf("fact %d: the blade is %d cm long", i, 60+i)}); err != nil {
				t.Fatal(err)
			}
		}
		id := memID(t, ctx)
		stored, err := store.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(stored) < 2 {
			t.Fatalf("memory %s holds %d messages", id, len(stored))
		}
		if _, ok := memory.SummaryText(stored[1]); !ok {
			t.Fatalf("memory %s holds no summary", id)
		}
		return id
	}
	lastSent := func() []llms.MessageContent {
		reqs := srv.Requests()
		return reqs[len(reqs)-1].Messages
	}

	top := chatUntilSummarised()
	if err := chat.ClearMemory(ctx); err != nil {
		t.Fatal(err)
	}
	if stored, err := store.Get(ctx, top); err != nil || len(stored) != 0 {
		t.Fatalf("after ClearMemory the store holds %d messages (%v)", len(stored), err)
	}
	if _, err := svc.Chat(ctx, &ai.Request{Method: ask, User: "what do you remember?"}); err != nil {
		t.Fatal(err)
	}
	if sent := lastSent(); len(sent) != 2 {
		t.Fatalf("after ClearMemory the model was sent %d messages:\n%s", len(sent), strings.Join(describe(sent), "\n"))
	}

	if err := chat.Push(ctx); err != nil {
		t.Fatal(err)
	}
	nested := chatUntilSummarised()
	if err := chat.Pop(ctx); err != nil {
		t.Fatal(err)
	}
	if stored, err := store.Get(ctx, nested); err != nil || len(stored) != 0 {
		t.Fatalf("after Pop the store holds %d messages of the nested memory (%v)", len(stored), err)
	}
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, err := store.IDs(context.Background()); err != nil || len(ids) != 0 {
		t.Fatalf("after End the store holds %q (%v)", ids, err)
	}
}
