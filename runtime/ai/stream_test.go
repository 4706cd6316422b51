package ai_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// collect ranges over a stream and returns its chunks and final error.
func collect(seq func(yield func(string, error) bool)) ([]string, error) {
	var chunks []string
	for chunk, err := range seq {
		if err != nil {
			return chunks, err
		}
		chunks = append(chunks, chunk)
	}
	return chunks, nil
}

func TestStreamWithToolCall(t *testing.T) {
	leaktest.Check(t)
	f := newServerFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: "Let me check. ", ToolCalls: []llmtest.ToolCall{call("weather", `{"city":"Paris"}`), call("add", `{"a":20,"b":22}`)}},
		llmtest.Reply{Text: "It is sunny in Paris."},
	), &ai.Config{})
	ctx := begin(t)
	chunks, err := collect(f.svc.Stream(ctx, f.req("Weather in Paris?")))
	if err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "chunks", chunks, "Let ", "me ", "check. ", "It ", "is ", "sunny ", "in ", "Paris.")
	wantStrings(t, "tools run", f.box.called(), "weather Paris", "add 20 22")
	reqs := f.requests()
	if len(reqs) != 2 || !reqs[0].Stream || !reqs[1].Stream {
		t.Fatalf("requests %+v", reqs)
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)),
		"system: You are terse.",
		"human: Weather in Paris?",
		`ai: Let me check.  | call weather {"city":"Paris"} | call add {"a":20,"b":22}`,
		`tool: result weather {"city":"Paris","sky":"sunny"}`,
		"tool: result add 42",
		"ai: It is sunny in Paris.")
}

func TestStreamInProcess(t *testing.T) {
	f := newModelFixture(t, llmtest.Sequence(
		calls(call("note", `{"text":"x"}`)),
		llmtest.Reply{Chunks: []string{"Noted", ", ", "boss."}},
	), &ai.Config{})
	ctx := begin(t)
	chunks, err := collect(f.svc.Stream(ctx, f.req("Note x.")))
	if err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "chunks", chunks, "Noted", ", ", "boss.")
	if got := f.memory(ctx, memID(t, ctx)); len(got) != 5 || got[4] != "ai: Noted, boss." {
		t.Fatalf("memory %q", got)
	}
}

func TestStreamModelFailure(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: "one two three", Err: errors.New("connection reset")},
		llmtest.Reply{Text: "Fine."},
	), &ai.Config{})
	ctx := begin(t)
	chunks, err := collect(f.svc.Stream(ctx, f.req("hi")))
	if err == nil || !strings.Contains(err.Error(), svcName) {
		t.Fatalf("chunks %q, err %v", chunks, err)
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)))
	// The next turn works, with an empty history.
	chunks, err = collect(f.svc.Stream(ctx, f.req("hi")))
	if err != nil || strings.Join(chunks, "") != "Fine." {
		t.Fatalf("chunks %q, err %v", chunks, err)
	}
	wantStrings(t, "next request", describe(f.requests()[1].Messages), "system: You are terse.", "human: hi")
}

// slowReply streams 100 chunks "word ", one every 100 ms: slowWhole in
// all. A stream that is aborted ends long before; one that goes on after
// the abort takes at least half of it, however loaded the machine.
func slowReply() llmtest.Reply {
	return llmtest.Reply{Text: strings.Repeat("word ", 100), ChunkDelay: 100 * time.Millisecond}
}

// slowWhole is how long slowReply streams.
const slowWhole = 10 * time.Second

func TestStreamCancelledMidStream(t *testing.T) {
	leaktest.Check(t)
	f := newServerFixture(t, llmtest.Sequence(llmtest.Reply{Text: "Hi."}, slowReply()), &ai.Config{})
	ctx := begin(t)
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("one")))
	before := f.memory(ctx, memID(t, ctx))

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	var chunks []string
	var final error
	for chunk, err := range f.svc.Stream(cctx, f.req("two")) {
		if err != nil {
			final = err
			continue
		}
		chunks = append(chunks, chunk)
		if len(chunks) == 2 {
			cancel()
		}
	}
	if !errors.Is(final, context.Canceled) {
		t.Fatalf("final error %v after %q", final, chunks)
	}
	if len(chunks) > 20 || time.Since(start) > slowWhole/2 {
		t.Fatalf("the stream went on after the cancel: %d chunks in %v", len(chunks), time.Since(start))
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)), before...)
}

func TestStreamBreak(t *testing.T) {
	leaktest.Check(t)
	for _, server := range []bool{true, false} {
		var f *fixture
		if server {
			f = newServerFixture(t, llmtest.Sequence(slowReply(), llmtest.Reply{Text: "Next."}), &ai.Config{})
		} else {
			f = newModelFixture(t, llmtest.Sequence(slowReply(), llmtest.Reply{Text: "Next."}), &ai.Config{})
		}
		ctx := begin(t)
		start := time.Now()
		n := 0
		for chunk, err := range f.svc.Stream(ctx, f.req("hi")) {
			if err != nil || chunk != "word " {
				t.Fatalf("chunk %q, err %v", chunk, err)
			}
			n++
			if n == 2 {
				break
			}
		}
		if d := time.Since(start); d > slowWhole/2 {
			t.Fatalf("server=%v: the model call was not aborted: %v", server, d)
		}
		wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)))
		// The memory id is free again.
		chunks, err := collect(f.svc.Stream(ctx, f.req("again")))
		if err != nil || strings.Join(chunks, "") != "Next." {
			t.Fatalf("server=%v: chunks %q, err %v", server, chunks, err)
		}
	}
}

func TestStreamTooManyCalls(t *testing.T) {
	f := newModelFixture(t, llmtest.ScriptFunc(func(*llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: "again ", ToolCalls: []llmtest.ToolCall{call("note", `{}`)}}, nil
	}), &ai.Config{MaxModelCalls: 2})
	ctx := begin(t)
	chunks, err := collect(f.svc.Stream(ctx, f.req("hi")))
	if !errors.Is(err, ai.ErrTooManyModelCalls) || len(chunks) != 2 {
		t.Fatalf("chunks %q, err %v", chunks, err)
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)))
}

// nonStreaming is a model that ignores llms.WithStreamingFunc, as several
// langchaingo providers do (cohere, huggingface, some Bedrock models).
type nonStreaming struct{ answer string }

func (m nonStreaming) GenerateContent(context.Context, []llms.MessageContent, ...llms.CallOption) (*llms.ContentResponse, error) {
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: m.answer, StopReason: "stop"}}}, nil
}

func (m nonStreaming) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

func TestStreamFromAProviderThatDoesNotStream(t *testing.T) {
	f := newFixture(t, nonStreaming{answer: "The whole answer."}, &ai.Config{})
	ctx := begin(t)
	chunks, err := collect(f.svc.Stream(ctx, f.req("Hi.")))
	if err != nil {
		t.Fatal(err)
	}
	wantStrings(t, "chunks", chunks, "The whole answer.")
}
