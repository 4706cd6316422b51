package ws

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// locateScript calls the client tool locate for "where" and tells what
// the tool said after a call; it echoes everything else.
var locateScript = llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
	if res := req.LastToolResults(); len(res) > 0 && req.Messages[len(req.Messages)-1].Role == llms.ChatMessageTypeTool {
		return llmtest.Reply{Text: "tool said: " + res[len(res)-1].Content}, nil
	}
	if text := req.LastUserText(); text != "where" {
		return llmtest.Reply{Text: "re: " + text}, nil
	}
	return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "locate", Arguments: `{"precision":"city"}`}}}, nil
})

// startClientToolNode starts a node named name whose default route is an
// AI service with the client tool locate, over a strict OpenAI server;
// store (nil: none) keeps the conversations and the chat memories.
func startClientToolNode(t *testing.T, store *chat.InMemoryConversationStore, name string) *testServer {
	t.Helper()
	llm := llmtest.NewServer(locateScript, nil)
	t.Cleanup(llm.Close)
	model, err := llm.Client()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ai.Config{Model: model, Logger: quietLogger(), ClientToolResultLimit: 1 << 10}
	opts := &chat.RouterOptions{Node: name, Logger: quietLogger()}
	if store != nil {
		cfg.Memory = memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(store), Policy: memory.Window(20, nil)})
		opts.Store = store
	}
	svc := ai.NewService("example.com/app.Guide", cfg)
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse.", Tools: []ai.Tool{{
		Name: "locate", Description: "the user's location", Client: true, Timeout: time.Hour,
		Parameters: json.RawMessage(`{"type":"object","properties":{"precision":{"type":"string"}}}`),
	}}}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "guide", Default: true, Handle: func(ctx context.Context) error {
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	r, err := chat.NewRouter(opts, p)
	if err != nil {
		t.Fatal(err)
	}
	return startServerFor(t, r, nil, nil)
}

// clientCalls records ClientTool events.
type clientCalls struct {
	mu    sync.Mutex
	calls []protocol.ClientToolCall
}

func (c *clientCalls) handle(ev chat.Event) {
	var call protocol.ClientToolCall
	if err := ev.Decode(&call); err != nil {
		panic(err)
	}
	c.mu.Lock()
	c.calls = append(c.calls, call)
	c.mu.Unlock()
}

func (c *clientCalls) last(t *testing.T) protocol.ClientToolCall {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) == 0 {
		t.Fatal("no ClientTool event")
	}
	return c.calls[len(c.calls)-1]
}

// The Go websocket client answers a client tool on its own, and bad
// answers sent over the wire fail with BadRequest, the call still pending.
func TestClientToolOverTheWire(t *testing.T) {
	leaktest.Check(t)
	ts := startClientToolNode(t, nil, "")
	c := dialTest(t, ts)
	var rec recorder
	done := make(chan error, 1)
	s, err := rec.builder(c).OnClientTool("locate", func(_ context.Context, args json.RawMessage) (any, error) {
		return map[string]any{"city": "Lyon", "args": args}, nil
	}).OnClientToolAnswered(func(_ protocol.ClientToolCall, err error) { done <- err }).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(context.Background(), "where"); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("the answer: %v", err)
	}
	if got := rec.take(); got != `message tool said: {"args":{"precision":"city"},"city":"Lyon"}` {
		t.Fatalf("after the client's answer: %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// By hand, with bad answers first.
	var calls clientCalls
	s, err = rec.builder(c).On(protocol.EventClientTool, calls.handle).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := rec.builder(c).On(protocol.EventClientTool, calls.handle).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Chat(context.Background(), "where"); err != nil {
		t.Fatal(err)
	}
	foreign := calls.last(t)
	if err := s.Chat(context.Background(), "where"); err != nil {
		t.Fatal(err)
	}
	call := calls.last(t)
	if call.Deadline == nil || call.ID == foreign.ID {
		t.Fatalf("calls %+v and %+v", call, foreign)
	}
	rec.take()
	for _, bad := range []map[string]any{
		{"clientTool": foreign.ID, "result": 1},                             // another conversation's
		{"clientTool": "x" + call.ID, "result": 1},                          // a wrong id
		{"clientTool": strings.Replace(call.ID, ".", ".9", 1), "result": 1}, // a forged deadline
		{"clientTool": call.ID, "result": strings.Repeat("x", 2<<10)},       // too large
		{"clientTool": call.ID, "result": 1, "error": "no"},                 // both
	} {
		if err := s.Send(context.Background(), bad); !errors.Is(err, chat.ErrBadRequest) {
			t.Fatalf("%v: %v, want BadRequest", bad, err)
		}
	}
	if err := s.Send(context.Background(), map[string]any{"clientTool": call.ID, "result": []any{"a", 1.5}}); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got != `message tool said: ["a",1.5]` {
		t.Fatalf("after the bad answers: %q", got)
	}
}

// A turn paused on a client tool survives a node move: the client answers
// on the node it reconnected to; and a cancel there stops the next pause.
func TestClientToolMovesToAnotherNode(t *testing.T) {
	leaktest.Check(t)
	store := chat.NewInMemoryConversationStore(nil)
	a, b := startClientToolNode(t, store, "a"), startClientToolNode(t, store, "b")
	proxy := startProxy(t, a)
	states := newStateLog()
	c := dialReconnecting(t, proxy.url(), states)
	var rec recorder
	var calls clientCalls
	s, err := rec.builder(c).On(protocol.EventClientTool, calls.handle).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(context.Background(), "where"); err != nil {
		t.Fatal(err)
	}
	call := calls.last(t)

	proxy.switchTo(b)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	states.await(t, StateConnected)
	rec.take()
	if err := s.Send(context.Background(), map[string]any{"clientTool": call.ID, "result": map[string]any{"city": "Lyon"}}); err != nil {
		t.Fatalf("the answer on node b: %v", err)
	}
	if got := rec.take(); got != `message tool said: {"city":"Lyon"}` {
		t.Fatalf("on node b: %q", got)
	}

	// Paused again, then stopped: the request fails as cancelled, and
	// the conversation goes on.
	if err := s.Chat(context.Background(), "where"); err != nil {
		t.Fatal(err)
	}
	call = calls.last(t)
	if err := s.Send(context.Background(), map[string]any{"cancel": call.ID}); !errors.Is(err, chat.ErrCancelled) {
		t.Fatalf("the cancel: %v", err)
	}
	if err := s.Chat(context.Background(), "hello"); err != nil {
		t.Fatal(err)
	}
	if got := rec.take(); got != "message re: hello" {
		t.Fatalf("after the cancel: %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitNoConversations(t, b.router)
}
