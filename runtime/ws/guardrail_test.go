package ws

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/guardrail"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// A streamed answer goes out as it comes; an output guardrail that then
// rewrites, reprompts or fails it retracts what was streamed (Retract),
// and a page that knows nothing of Retract sees the request fail with
// GuardrailFailed.

// guardedStream returns a server with a route "stream" streaming an AI
// service whose output guardrail acts on the user message: "rewrite",
// "reprompt" (once), "fail" or "fatal"; anything else passes.
func guardedStream(t *testing.T, replies ...llmtest.Reply) (*testServer, *llmtest.Server) {
	t.Helper()
	llm := llmtest.NewServer(llmtest.Sequence(replies...), nil)
	t.Cleanup(llm.Close)
	model, err := llm.Client()
	if err != nil {
		t.Fatal(err)
	}
	g := guardrail.OutputFunc(func(_ context.Context, out *guardrail.Output) guardrail.Result {
		if !out.Streamed {
			return guardrail.Fatal(errors.New("the answer was not streamed"))
		}
		switch out.User {
		case "rewrite":
			return guardrail.Rewrite("A safe answer.")
		case "reprompt":
			if out.Reprompts == 0 {
				return guardrail.Reprompt("Say it politely.")
			}
		case "fail":
			return guardrail.Fail("That answer was withheld.")
		case "fatal":
			return guardrail.Fatal(errors.New("the checker is down"))
		}
		return guardrail.Pass()
	})
	svc := ai.NewService("example.com/app.Smith", &ai.Config{
		Model: model, Logger: quietLogger(),
		Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(50, nil)}),
		Guardrails: &guardrail.Set{Output: []guardrail.OutputGuardrail{g}, Input: []guardrail.InputGuardrail{
			guardrail.InputFunc(func(_ context.Context, in *guardrail.Input) guardrail.Result {
				if in.Text == "forbidden" {
					return guardrail.Fail("Not that topic.")
				}
				return guardrail.Pass()
			}),
		}},
	})
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "stream", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.Response(ctx).StreamWithErrors(svc.Stream(ctx, &ai.Request{Method: method, User: req.UserMessage()}))
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "chat", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: req.UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, p)
	if err != nil {
		t.Fatal(err)
	}
	return startServerFor(t, router, nil, nil), llm
}

// frameLog renders frames as "Type:data", one each.
func frameLog(fs []frame) string {
	var b []string
	for _, f := range fs {
		b = append(b, f.Type+":"+f.text())
	}
	return strings.Join(b, " ")
}

func TestGuardrailRetractOnTheWire(t *testing.T) {
	leaktest.Check(t)
	ts, llm := guardedStream(t,
		llmtest.Reply{Chunks: []string{"rude ", "words"}}, // fail
		llmtest.Reply{Chunks: []string{"bad ", "words"}},  // rewrite
		llmtest.Reply{Chunks: []string{"fine"}},           // pass
		llmtest.Reply{Chunks: []string{"oops"}},           // fatal
	)
	c := dialRaw(t, ts.url, nil)
	scope := c.connect("s", "stream")
	for _, tc := range []struct{ user, want string }{
		{"fail", `Stream:rude  Stream:words Retract:{"reason":"fail"} Error:That answer was withheld. Failed:GuardrailFailed`},
		{"rewrite", `Stream:bad  Stream:words Retract:{"reason":"rewrite"} Stream:A safe answer. Completed:` + scope},
		{"pass", `Stream:fine Completed:` + scope},
		{"fatal", `Stream:oops Retract:{"reason":"fatal"} Failed:GuardrailFailed`},
	} {
		if got := frameLog(c.chat("s", scope, tc.user)); got != tc.want {
			t.Fatalf("%s:\n got %s\nwant %s", tc.user, got, tc.want)
		}
	}
	// An input guardrail's failure, on a route that does not stream: the
	// model is not called.
	calls := llm.Calls()
	chatScope := c.connect("c", "chat")
	if got, want := frameLog(c.chat("c", chatScope, "forbidden")), "Error:Not that topic. Failed:GuardrailFailed"; got != want {
		t.Fatalf("forbidden:\n got %s\nwant %s", got, want)
	}
	if llm.Calls() != calls {
		t.Fatal("the model saw a refused message")
	}
}

func TestGuardrailRetractGoClient(t *testing.T) {
	leaktest.Check(t)
	ts, llm := guardedStream(t,
		llmtest.Reply{Chunks: []string{"rude ", "words"}},  // reprompt: asked again
		llmtest.Reply{Chunks: []string{"kind ", "words"}},  // accepted
		llmtest.Reply{Chunks: []string{"awful ", "words"}}, // fail
		llmtest.Reply{Chunks: []string{"bad"}},             // rewrite
	)
	cl, err := Dial(context.Background(), ts.url, &DialOptions{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var mu sync.Mutex
	var shown strings.Builder
	var told []string
	var reasons []string
	sess, err := cl.Builder().
		OnStream(func(chunk string) { mu.Lock(); shown.WriteString(chunk); mu.Unlock() }).
		OnRetract(func(r protocol.Retraction) {
			mu.Lock()
			shown.Reset()
			reasons = append(reasons, r.Reason)
			mu.Unlock()
		}).
		OnError(func(text string) { mu.Lock(); told = append(told, text); mu.Unlock() }).
		Connect(context.Background(), "stream")
	if err != nil {
		t.Fatal(err)
	}
	display := func() string { mu.Lock(); defer mu.Unlock(); s := shown.String(); shown.Reset(); return s }

	if err := sess.Chat(context.Background(), "reprompt"); err != nil {
		t.Fatal(err)
	}
	if got := display(); got != "kind words" {
		t.Fatalf("after a reprompt the page shows %q", got)
	}
	err = sess.Chat(context.Background(), "fail")
	if !errors.Is(err, guardrail.ErrGuardrailFailed) {
		t.Fatalf("fail: %v", err)
	}
	if got := display(); got != "" {
		t.Fatalf("after a failure the page shows %q", got)
	}
	if err := sess.Chat(context.Background(), "rewrite"); err != nil {
		t.Fatal(err)
	}
	if got := display(); got != "A safe answer." {
		t.Fatalf("after a rewrite the page shows %q", got)
	}
	mu.Lock()
	gotTold, gotReasons := strings.Join(told, "|"), strings.Join(reasons, " ")
	mu.Unlock()
	if gotTold != "That answer was withheld." || gotReasons != "reprompt fail rewrite" {
		t.Fatalf("told %q, retractions %q", gotTold, gotReasons)
	}
	// The memory holds the accepted answers only: the last request sent
	// system, then the reprompt turn (human, ai "kind words"), then the
	// rewrite's human.
	reqs := llm.Requests()
	last := reqs[len(reqs)-1].Messages
	if roles(last) != "shah" || last[2].Parts[0] != (llms.TextContent{Text: "kind words"}) {
		t.Fatalf("the last request sent %q: %+v", roles(last), last)
	}
	if m := reqs[1].Messages; m[len(m)-1].Parts[0] != (llms.TextContent{Text: "Say it politely."}) {
		t.Fatalf("the reprompt sent %+v", m)
	}
}
