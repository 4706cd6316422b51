package ws

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// An AI service behind the websocket, through langchaingo's real OpenAI
// client and llmtest's scripted server: failing models and tools.

type aiRig struct {
	llm     *llmtest.Server
	ts      *testServer
	stuck   chan struct{} // the stuck tool started
	release chan struct{} // lets the stuck tool return
}

func newAIRig(t *testing.T, cfg *ai.Config, replies ...llmtest.Reply) *aiRig {
	t.Helper()
	rig := &aiRig{llm: llmtest.NewServer(llmtest.Sequence(replies...), nil), stuck: make(chan struct{}, 1), release: make(chan struct{})}
	t.Cleanup(rig.llm.Close)
	model, err := rig.llm.Client()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model = model
	cfg.Memory = memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(50, nil)})
	cfg.Logger = quietLogger()
	svc := ai.NewService("example.com/app.Smith", cfg)
	def := func(name string) llms.Tool {
		return llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: name, Parameters: map[string]any{"type": "object"}}}
	}
	tools := []ai.Tool{
		{Definition: def("explode"), Invoke: func(context.Context, string) (any, error) { panic("the forge exploded") }},
		{Definition: def("stuck"), Invoke: func(context.Context, string) (any, error) {
			rig.stuck <- struct{}{}
			<-rig.release // ignores its context
			return "late", nil
		}},
	}
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse.", Tools: tools}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "smith", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: req.UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "streamsmith", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.Response(ctx).StreamWithErrors(svc.Stream(ctx, &ai.Request{Method: method, User: req.UserMessage()}))
	}})
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, p)
	if err != nil {
		t.Fatal(err)
	}
	rig.ts = startServerFor(t, router, nil, nil)
	return rig
}

// roles is the roles of a model request's messages, one letter each.
func roles(msgs []llms.MessageContent) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(string(m.Role)[:1])
	}
	return b.String()
}

// After a panicking tool, a failing model (500), a model call past
// ModelTimeout and a stream cut mid-answer, the conversation keeps working
// and its memory holds whole turns only.
func TestAIFailuresLeaveTheConversationWorking(t *testing.T) {
	leaktest.Check(t)
	rig := newAIRig(t, &ai.Config{ModelTimeout: time.Second}, // bounds the successful calls too
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "explode"}}},
		llmtest.Reply{Text: "The forge failed."},
		llmtest.Reply{Status: 500},
		llmtest.Reply{Text: "too late", Delay: time.Minute},
		llmtest.Reply{Chunks: []string{"half ", "an answer"}, Err: errors.New("cut")},
		llmtest.Reply{Text: "Still here."},
		llmtest.Reply{Text: "Streamed fine."},
	)
	c := dialRaw(t, rig.ts.url, nil)
	scope := c.connect("s", "smith")
	if fs := c.chat("s", scope, "build"); fs[0].text() != "The forge failed." || last(fs).Type != "Completed" {
		t.Fatalf("panicking tool: %v", fs)
	}
	for _, what := range []string{"500", "timeout"} {
		if f := last(c.chat("s", scope, what)); f.Type != "Failed" || f.ScopeID != scope {
			t.Fatalf("%s: got %v", what, f)
		}
	}
	stream := c.connect("st", "streamsmith")
	_ = stream
	// The stream shares no memory with smith (another scope): check smith's.
	fs := c.chat("st", stream, "cut")
	if f := last(fs); f.Type != "Failed" || f.text() != "StreamingFailure" {
		t.Fatalf("cut stream: %v", fs)
	}
	if fs := c.chat("s", scope, "again"); fs[0].text() != "Still here." {
		t.Fatalf("after the failures: %v", fs)
	}
	reqs := rig.llm.Requests()
	// system, human, ai (call), tool, ai, human: the failed turns left nothing.
	if got := roles(reqs[len(reqs)-1].Messages); got != "shatah" {
		t.Fatalf("the turn after the failures sent %q", got)
	}
	if fs := c.chat("st", stream, "again"); fs[0].text() != "Streamed " || last(fs).Type != "Completed" {
		t.Fatalf("stream after the cut: %v", fs)
	}
	reqs = rig.llm.Requests()
	if got := roles(reqs[len(reqs)-1].Messages); got != "sh" {
		t.Fatalf("the stream after the cut sent %q", got)
	}
}

// Shutdown returns when its context ends although an AI tool ignores its
// context and no tool timeout is set.
func TestShutdownWithAStuckAITool(t *testing.T) {
	rig := newAIRig(t, &ai.Config{}, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "stuck"}}}, llmtest.Reply{Text: "done"})
	c := dialRaw(t, rig.ts.url, nil)
	scope := c.connect("s", "smith")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": scope, "data": map[string]any{"userMessage": "go"}})
	recv(t, rig.stuck)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- rig.ts.Shutdown(ctx) }()
	if err := recv(t, done); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v", err)
	}
	if f, err := c.readErr(5 * time.Second); err == nil {
		t.Fatalf("got %v after shutdown", f)
	}
	close(rig.release)
	waitNoConversations(t, rig.ts.router)
}
