package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

func TestModelText(t *testing.T) {
	const text = "Hello there, brave new world."
	m := llmtest.NewModel(llmtest.Sequence(llmtest.Reply{Text: text}, llmtest.Reply{Text: text}), nil)
	resp, err := m.GenerateContent(context.Background(), []llms.MessageContent{human("Hi!")})
	c := choice0(t, resp, err)
	if c.Content != text || c.StopReason != "stop" || len(c.ToolCalls) != 0 || c.FuncCall != nil {
		t.Fatalf("choice %+v", c)
	}
	var rec recorder
	resp, err = m.GenerateContent(context.Background(), []llms.MessageContent{human("Hi!")}, llms.WithStreamingFunc(rec.fn))
	c = choice0(t, resp, err)
	// Unlike the OpenAI client, the Model sends no empty chunks.
	if got, want := rec.got(), []string{"Hello ", "there, ", "brave ", "new ", "world."}; !reflect.DeepEqual(got, want) {
		t.Fatalf("chunks = %q, want %q", got, want)
	}
	if c.Content != text {
		t.Fatalf("content %q", c.Content)
	}
	if reqs := m.Requests(); reqs[0].Stream || !reqs[1].Stream || reqs[1].Body != nil {
		t.Fatalf("Stream flags %v %v", reqs[0].Stream, reqs[1].Stream)
	}
}

func TestModelStreamingNeverSendsToolFragments(t *testing.T) {
	m := llmtest.NewModel(llmtest.Sequence(
		llmtest.Reply{Chunks: []string{"Let me ", "", "check."}, ToolCalls: []llmtest.ToolCall{
			{Name: "weather", Arguments: `{"city":"Paris"}`},
			{Name: "time", Arguments: `{"tz":"UTC"}`},
		}},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather"}, {ID: "mine", Name: "time"}}},
	), nil)
	var rec recorder
	opts := []llms.CallOption{llms.WithTools([]llms.Tool{weatherTool, timeTool}), llms.WithStreamingFunc(rec.fn)}
	resp, err := m.GenerateContent(context.Background(), []llms.MessageContent{human("?")}, opts...)
	c := choice0(t, resp, err)
	if got := rec.got(); !reflect.DeepEqual(got, []string{"Let me ", "check."}) {
		t.Fatalf("chunks = %q", got)
	}
	if c.Content != "Let me check." || c.StopReason != "tool_calls" {
		t.Fatalf("content %q stop %q", c.Content, c.StopReason)
	}
	assertCalls(t, c, "call_1 weather {\"city\":\"Paris\"}", "call_2 time {\"tz\":\"UTC\"}")
	if c.FuncCall != c.ToolCalls[0].FunctionCall {
		t.Errorf("FuncCall is not the first tool call")
	}

	// Ids continue across calls; explicit ids are kept; empty arguments are {}.
	resp, err = m.GenerateContent(context.Background(), []llms.MessageContent{human("?")}, opts...)
	assertCalls(t, choice0(t, resp, err), "call_3 weather {}", "mine time {}")
	if got := rec.got(); len(got) != 2 {
		t.Fatalf("a tool-only reply streamed %q", got[2:])
	}
}

// assertCalls checks the tool calls of c, each given as "id name arguments".
func assertCalls(t *testing.T, c *llms.ContentChoice, want ...string) {
	t.Helper()
	var got []string
	for _, tc := range c.ToolCalls {
		if tc.Type != "function" {
			t.Errorf("tool call type %q", tc.Type)
		}
		got = append(got, fmt.Sprintf("%s %s %s", tc.ID, tc.FunctionCall.Name, tc.FunctionCall.Arguments))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tool calls = %q, want %q", got, want)
	}
}

func TestModelReasoning(t *testing.T) {
	m := llmtest.NewModel(llmtest.Sequence(llmtest.Reply{Reasoning: "Think hard.", Text: "4 2"}), nil)
	var calls []string
	resp, err := m.GenerateContent(context.Background(), []llms.MessageContent{human("?")},
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, c []byte) error {
			calls = append(calls, fmt.Sprintf("%q/%q", r, c))
			return nil
		}))
	c := choice0(t, resp, err)
	want := []string{`"Think "/""`, `"hard."/""`, `""/"4 "`, `""/"2"`}
	if !reflect.DeepEqual(calls, want) {
		t.Fatalf("reasoning func calls = %q, want %q", calls, want)
	}
	if c.ReasoningContent != "Think hard." || c.GenerationInfo["ThinkingContent"] != "Think hard." ||
		c.GenerationInfo["ReasoningTokens"] != llmtest.EstimateTextTokens("Think hard.") {
		t.Fatalf("choice %+v", c)
	}
}

// TestModelUsageMatchesOpenAIClient checks that the Model's GenerationInfo
// has exactly the keys and value types of the real OpenAI client's, and the
// same token counts for the same request and reply.
func TestModelUsageMatchesOpenAIClient(t *testing.T) {
	reply := llmtest.Reply{Text: "It is sunny.", Reasoning: "Look outside.", ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}},
		Usage: llmtest.Usage{CacheReadTokens: 12}}
	_, llm := newServer(t, llmtest.Sequence(reply, reply), nil)
	m := llmtest.NewModel(llmtest.Sequence(reply, reply), nil)
	msgs := conversation()
	for _, streamed := range []bool{false, true} {
		opts := []llms.CallOption{llms.WithTools([]llms.Tool{weatherTool, timeTool})}
		if streamed {
			opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
		}
		resp, err := llm.GenerateContent(context.Background(), msgs, opts...)
		real := choice0(t, resp, err).GenerationInfo
		resp, err = m.GenerateContent(context.Background(), msgs, opts...)
		fake := choice0(t, resp, err).GenerationInfo
		if !reflect.DeepEqual(typesOf(real), typesOf(fake)) {
			t.Fatalf("streamed=%v: key types differ:\nopenai  %v\nllmtest %v", streamed, typesOf(real), typesOf(fake))
		}
		for _, k := range []string{"PromptTokens", "CompletionTokens", "TotalTokens", "ReasoningTokens", "PromptCachedTokens"} {
			if real[k] != fake[k] || real[k] == 0 {
				t.Errorf("streamed=%v: %s = %v over HTTP, %v in-process", streamed, k, real[k], fake[k])
			}
		}
	}
}

// typesOf lists the keys of info with the types of their values.
func typesOf(info map[string]any) []string {
	var out []string
	for k, v := range info {
		out = append(out, fmt.Sprintf("%s:%T", k, v))
	}
	sort.Strings(out)
	return out
}

func TestModelErrors(t *testing.T) {
	boom := errors.New("model crashed")
	m := llmtest.NewModel(llmtest.Sequence(
		llmtest.Reply{Err: boom},
		llmtest.Reply{Status: 429, ErrorMessage: "Rate limit reached"},
		llmtest.Reply{Status: 500, Err: boom},
		llmtest.Reply{Text: "Excalibur", Err: boom},
		llmtest.Reply{Text: "a", Chunks: []string{"b"}},
		llmtest.Reply{Status: 200},
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Arguments: "{}"}}},
	), nil)
	ctx := context.Background()
	msgs := []llms.MessageContent{human("hi")}

	if _, err := m.GenerateContent(ctx, msgs); err != boom {
		t.Errorf("Err: got %v, want the scripted error itself", err)
	}
	_, err := m.GenerateContent(ctx, msgs)
	var se *llmtest.StatusError
	if !errors.As(err, &se) || se.StatusCode != 429 || se.Message != "Rate limit reached" {
		t.Errorf("Status: got %v", err)
	}
	mustContain(t, err, "API returned unexpected status code: 429: Rate limit reached")
	_, err = m.GenerateContent(ctx, msgs)
	mustContain(t, err, "status code: 500: model crashed")

	// A streamed reply with Err streams its chunks, then fails.
	var rec recorder
	if _, err := m.GenerateContent(ctx, msgs, llms.WithStreamingFunc(rec.fn)); err != boom {
		t.Errorf("streamed Err: got %v", err)
	}
	if got := rec.got(); !reflect.DeepEqual(got, []string{"Excalibur"}) {
		t.Errorf("chunks before the failure: %q", got)
	}

	for _, want := range []string{
		"llmtest: reply to request 4: Text \"a\" does not equal the concatenation of Chunks \"b\"",
		"llmtest: reply to request 5: Status 200 is not an error status",
		"llmtest: reply to request 6: tool call 0 has no Name",
		"llmtest: script exhausted after 7 replies",
	} {
		_, err := m.GenerateContent(ctx, msgs)
		mustContain(t, err, want)
	}
	_, err = m.GenerateContent(ctx, msgs)
	if !errors.Is(err, llmtest.ErrScriptExhausted) {
		t.Errorf("exhausted: %v does not match ErrScriptExhausted", err)
	}

	// A failing streaming func stops the stream.
	stop := errors.New("client gone")
	m = llmtest.NewModel(llmtest.Sequence(llmtest.Reply{Text: "one two"}), nil)
	_, err = m.GenerateContent(ctx, msgs, llms.WithStreamingFunc(func(context.Context, []byte) error { return stop }))
	if !errors.Is(err, stop) {
		t.Errorf("streaming func error: %v", err)
	}
}

func TestModelRejectsWhatOpenAIRejects(t *testing.T) {
	m := llmtest.NewModel(llmtest.Sequence(llmtest.Reply{Text: "ok"}), nil)
	ctx := context.Background()

	two := conversation()[:4]
	two[3].Parts = append(two[3].Parts, llms.ToolCallResponse{ToolCallID: "call_2", Content: "12:00"})
	_, err := m.GenerateContent(ctx, two)
	mustContain(t, err, "expected exactly one part for role tool, got 2")

	_, err = m.GenerateContent(ctx, []llms.MessageContent{{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{llms.TextContent{Text: "x"}}}})
	mustContain(t, err, "expected part of type ToolCallResponse")

	_, err = m.GenerateContent(ctx, []llms.MessageContent{{Role: "robot"}})
	mustContain(t, err, "role robot not supported")

	_, err = m.GenerateContent(ctx, conversation()[:4])
	var se *llmtest.StatusError
	if !errors.As(err, &se) || se.StatusCode != 400 || !strings.Contains(se.Message, "did not have response messages: call_2") {
		t.Errorf("dangling tool call: %v", err)
	}
	_, err = m.GenerateContent(ctx, nil)
	mustContain(t, err, "status code: 400: messages must not be empty")
	dup := append(conversation(), conversation()[4])
	_, err = m.GenerateContent(ctx, dup)
	mustContain(t, err, `tool_call_id "call_2" is answered twice`)
	if m.Calls() != 0 {
		t.Fatalf("rejected requests were recorded")
	}

	resp, err := m.GenerateContent(ctx, conversation())
	if c := choice0(t, resp, err); c.Content != "ok" {
		t.Fatalf("content %q", c.Content)
	}
	lenient := llmtest.NewModel(llmtest.Sequence(llmtest.Reply{Text: "ok"}), &llmtest.Options{NoHistoryValidation: true})
	if _, err := lenient.GenerateContent(ctx, conversation()[:4]); err != nil {
		t.Fatalf("lenient model: %v", err)
	}
}

func TestModelCancellation(t *testing.T) {
	m := llmtest.NewModel(llmtest.Sequence(
		llmtest.Reply{Text: "late", Delay: 10 * time.Second},
		llmtest.Reply{Text: "one two three", ChunkDelay: 10 * time.Second},
	), nil)
	msgs := []llms.MessageContent{human("hi")}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.GenerateContent(ctx, msgs)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("Delay: got %v after %v", err, time.Since(start))
	}

	ctx, cancel = context.WithCancel(context.Background())
	var rec recorder
	_, err = m.GenerateContent(ctx, msgs, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
		cancel()
		return rec.fn(ctx, chunk)
	}))
	if !errors.Is(err, context.Canceled) || !reflect.DeepEqual(rec.got(), []string{"one "}) {
		t.Fatalf("mid-stream: got %v after chunks %q", err, rec.got())
	}

	// A call with a done context is not recorded and consumes no reply.
	if _, err := m.GenerateContent(ctx, msgs); !errors.Is(err, context.Canceled) || m.Calls() != 2 {
		t.Fatalf("done context: %v, %d calls", err, m.Calls())
	}
}

func TestModelRecordsRequest(t *testing.T) {
	m := llmtest.NewModel(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: fmt.Sprintf("#%d %s", req.Index, req.LastUserText())}, nil
	}), &llmtest.Options{ModelName: "demo"})
	ctx := context.Background()
	msgs := []llms.MessageContent{human("json please")}
	_, err := m.GenerateContent(ctx, msgs, llms.WithJSONMode(), llms.WithTools([]llms.Tool{weatherTool}),
		llms.WithToolChoice("auto"), llms.WithMaxTokens(10),
		llms.WithFunctions([]llms.FunctionDefinition{{Name: "legacy"}}))
	if err != nil {
		t.Fatal(err)
	}
	msgs[0].Parts[0] = llms.TextContent{Text: "mutated by the caller"}
	out, err := m.Call(ctx, "second", llms.WithModel("other"))
	if err != nil || out != "#1 second" {
		t.Fatalf("Call: %q %v", out, err)
	}
	reqs := m.Requests()
	r := reqs[0]
	if r.Index != 0 || r.Model != "demo" || !r.JSONMode || r.Stream || r.ToolChoice != "auto" || r.MaxTokens != 10 ||
		!reflect.DeepEqual(r.ToolNames(), []string{"weather", "legacy"}) || r.LastUserText() != "json please" {
		t.Fatalf("first request: %+v", r)
	}
	if r.PromptTokens != llmtest.EstimatePromptTokens(r.Messages, r.Tools) {
		t.Fatalf("PromptTokens %d", r.PromptTokens)
	}
	if r := reqs[1]; r.Index != 1 || r.Model != "other" || r.JSONMode || r.Tools != nil {
		t.Fatalf("second request: %+v", r)
	}
	reqs[0].Messages[0].Parts[0] = llms.TextContent{Text: "changed"}
	if m.Requests()[0].LastUserText() != "json please" {
		t.Fatalf("Requests shares its messages")
	}
	m.Reset()
	if m.Calls() != 0 || len(m.Requests()) != 0 {
		t.Fatalf("Reset kept requests")
	}
}

func TestModelResetRewindsSequence(t *testing.T) {
	m := llmtest.NewModel(llmtest.Sequence(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather"}}}), nil)
	for range 2 {
		resp, err := m.GenerateContent(context.Background(), []llms.MessageContent{human("hi")})
		assertCalls(t, choice0(t, resp, err), "call_1 weather {}")
		m.Reset()
	}
}

func TestModelConcurrent(t *testing.T) {
	seq := make([]llmtest.Reply, 32)
	for i := range seq {
		seq[i] = llmtest.Reply{Text: fmt.Sprint(i), ToolCalls: []llmtest.ToolCall{{Name: "weather"}}}
	}
	m := llmtest.NewModel(llmtest.Sequence(seq...), nil)
	var wg sync.WaitGroup
	for range len(seq) {
		wg.Go(func() {
			resp, err := m.GenerateContent(context.Background(), []llms.MessageContent{human("hi")},
				llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			if err != nil {
				t.Error(err)
				return
			}
			// Reply n carries tool call call_n+1: numbering and sequence agree.
			if c := resp.Choices[0]; c.ToolCalls[0].ID != fmt.Sprintf("call_%d", atoi(t, c.Content)+1) {
				t.Errorf("reply %s has tool call %s", c.Content, c.ToolCalls[0].ID)
			}
		})
	}
	wg.Wait()
	if m.Calls() != len(seq) {
		t.Fatalf("Calls = %d", m.Calls())
	}
}

// atoi parses a decimal number.
func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("atoi(%q): %v", s, err)
	}
	return n
}
