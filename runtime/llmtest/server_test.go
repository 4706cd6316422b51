package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

func TestServerText(t *testing.T) {
	const text = "Hello there, brave new world."
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			srv, llm := newServer(t, llmtest.Sequence(llmtest.Reply{Text: text}), nil)
			var rec recorder
			var opts []llms.CallOption
			if streamed {
				opts = append(opts, llms.WithStreamingFunc(rec.fn))
			}
			resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("Hi!")}, opts...)
			c := choice0(t, resp, err)
			if c.Content != text || c.StopReason != "stop" {
				t.Fatalf("got content %q, stop %q", c.Content, c.StopReason)
			}
			req := srv.Requests()[0]
			wantInfo := map[string]int{
				"PromptTokens":     req.PromptTokens,
				"CompletionTokens": llmtest.EstimateTextTokens(text),
				"TotalTokens":      req.PromptTokens + llmtest.EstimateTextTokens(text),
			}
			for k, v := range wantInfo {
				if c.GenerationInfo[k] != v {
					t.Errorf("GenerationInfo[%q] = %#v, want %d", k, c.GenerationInfo[k], v)
				}
			}
			if req.PromptTokens != llmtest.EstimatePromptTokens([]llms.MessageContent{human("Hi!")}, nil) {
				t.Errorf("PromptTokens = %d", req.PromptTokens)
			}
			if req.Stream != streamed {
				t.Errorf("Stream = %v, want %v", req.Stream, streamed)
			}
			if !streamed {
				return
			}
			// The client also passes the empty role and finish chunks on.
			want := []string{"", "Hello ", "there, ", "brave ", "new ", "world.", ""}
			if got := rec.got(); !reflect.DeepEqual(got, want) {
				t.Errorf("chunks = %q, want %q", got, want)
			}
			if strings.Join(rec.got(), "") != c.Content {
				t.Errorf("joined chunks differ from content")
			}
		})
	}
}

func TestServerExplicitChunksAndUsage(t *testing.T) {
	_, llm := newServer(t, llmtest.Sequence(llmtest.Reply{
		Chunks:     []string{"Ex", "cal", "ibur"},
		StopReason: "length",
		Usage:      llmtest.Usage{PromptTokens: 100, CompletionTokens: 7, CacheReadTokens: 60},
	}), nil)
	var rec recorder
	resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("name?")}, llms.WithStreamingFunc(rec.fn))
	c := choice0(t, resp, err)
	if got, want := nonEmpty(rec.got()), []string{"Ex", "cal", "ibur"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("chunks = %q, want %q", got, want)
	}
	if c.Content != "Excalibur" || c.StopReason != "length" {
		t.Fatalf("content %q stop %q", c.Content, c.StopReason)
	}
	if c.GenerationInfo["PromptTokens"] != 100 || c.GenerationInfo["CompletionTokens"] != 7 || c.GenerationInfo["TotalTokens"] != 107 ||
		c.GenerationInfo["PromptCachedTokens"] != 60 {
		t.Fatalf("usage = %v", c.GenerationInfo)
	}
}

func TestServerReasoning(t *testing.T) {
	_, llm := newServer(t, llmtest.Sequence(
		llmtest.Reply{Reasoning: "Think hard.", Text: "42"},
		llmtest.Reply{Reasoning: "Think again.", Text: "43"},
	), nil)
	var reasoning, content []string
	resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("?")},
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, c []byte) error {
			if len(r) > 0 {
				reasoning = append(reasoning, string(r))
			}
			if len(c) > 0 {
				content = append(content, string(c))
			}
			return nil
		}))
	c := choice0(t, resp, err)
	if c.ReasoningContent != "Think hard." || c.Content != "42" {
		t.Fatalf("reasoning %q content %q", c.ReasoningContent, c.Content)
	}
	if !reflect.DeepEqual(reasoning, []string{"Think ", "hard."}) || !reflect.DeepEqual(content, []string{"42"}) {
		t.Fatalf("reasoning chunks %q, content chunks %q", reasoning, content)
	}
	if c.GenerationInfo["ReasoningTokens"] != llmtest.EstimateTextTokens("Think hard.") {
		t.Fatalf("ReasoningTokens = %v", c.GenerationInfo["ReasoningTokens"])
	}
	resp, err = llm.GenerateContent(context.Background(), []llms.MessageContent{human("?")})
	if c := choice0(t, resp, err); c.ReasoningContent != "Think again." || c.Content != "43" {
		t.Fatalf("non-streamed: reasoning %q content %q", c.ReasoningContent, c.Content)
	}
}

func TestServerToolCalls(t *testing.T) {
	two := []llmtest.ToolCall{
		{Name: "weather", Arguments: `{"city":"Paris"}`},
		{ID: "explicit-id", Name: "time", Arguments: `{"tz":"Europe/Paris","format":"24h – ünïcode"}`},
	}
	for _, n := range []int{1, 2} {
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("calls=%d/streamed=%v", n, streamed), func(t *testing.T) {
				srv, llm := newServer(t, llmtest.Sequence(llmtest.Reply{ToolCalls: two[:n]}), nil)
				var rec recorder
				opts := []llms.CallOption{llms.WithTools([]llms.Tool{weatherTool, timeTool})}
				if streamed {
					opts = append(opts, llms.WithStreamingFunc(rec.fn))
				}
				resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("Weather in Paris?")}, opts...)
				c := choice0(t, resp, err)
				if c.StopReason != "tool_calls" || c.Content != "" {
					t.Fatalf("stop %q content %q", c.StopReason, c.Content)
				}
				wantIDs := []string{"call_1", "explicit-id"}
				if len(c.ToolCalls) != n {
					t.Fatalf("got %d tool calls, want %d: %+v", len(c.ToolCalls), n, c.ToolCalls)
				}
				for i, tc := range c.ToolCalls {
					if tc.ID != wantIDs[i] || tc.Type != "function" || tc.FunctionCall.Name != two[i].Name ||
						tc.FunctionCall.Arguments != two[i].Arguments {
						t.Errorf("tool call %d = %+v %+v", i, tc, tc.FunctionCall)
					}
				}
				if c.FuncCall == nil || c.FuncCall.Name != "weather" {
					t.Errorf("FuncCall = %+v", c.FuncCall)
				}
				wantCompletion := 0
				for _, tc := range two[:n] {
					wantCompletion += llmtest.EstimateTextTokens(tc.Name) + llmtest.EstimateTextTokens(tc.Arguments)
				}
				if c.GenerationInfo["CompletionTokens"] != wantCompletion {
					t.Errorf("CompletionTokens = %v, want %d", c.GenerationInfo["CompletionTokens"], wantCompletion)
				}
				if got := srv.Requests()[0].ToolNames(); !reflect.DeepEqual(got, []string{"weather", "time"}) {
					t.Errorf("offered tools = %q", got)
				}
			})
		}
	}
}

// TestClientStreamingCallbackWithToolCalls pins what langchaingo v0.1.14's
// OpenAI client hands to llms.WithStreamingFunc when the model streams text
// and tool calls: empty chunks (the role delta and the finish delta), the
// text chunks, and for every tool-call delta the JSON encoding of the
// client's own ToolCall slice — the first delta of a call with id, type and
// name, the later ones with empty "type" and "name", and no index. The
// usage chunk (choices: []) reaches no callback. A tool loop that streams
// text to users must drop these JSON chunks; they cannot be told apart from
// text that happens to be JSON, so the runtime should stream with the
// in-process knowledge of the reply, or filter chunks that parse as a JSON
// array of tool-call objects.
func TestClientStreamingCallbackWithToolCalls(t *testing.T) {
	_, llm := newServer(t, llmtest.Sequence(llmtest.Reply{
		Text: "Let me check.",
		ToolCalls: []llmtest.ToolCall{
			{Name: "weather", Arguments: `{"city":"Paris"}`},
			{Name: "time", Arguments: `{"tz":"UTC"}`},
		},
	}), nil)
	var rec recorder
	resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("?")},
		llms.WithTools([]llms.Tool{weatherTool, timeTool}), llms.WithStreamingFunc(rec.fn))
	c := choice0(t, resp, err)
	want := []string{
		``,
		`Let `,
		`me `,
		`check.`,
		`[{"id":"call_1","type":"function","function":{"name":"weather","arguments":""}}]`,
		`[{"type":"","function":{"name":"","arguments":"{\"city\":"}}]`,
		`[{"type":"","function":{"name":"","arguments":"\"Paris\"}"}}]`,
		`[{"id":"call_2","type":"function","function":{"name":"time","arguments":""}}]`,
		`[{"type":"","function":{"name":"","arguments":"{\"tz\":\"U"}}]`,
		`[{"type":"","function":{"name":"","arguments":"TC\"}"}}]`,
		``,
	}
	if got := rec.got(); !reflect.DeepEqual(got, want) {
		t.Fatalf("streamed chunks:\n got %q\nwant %q", got, want)
	}
	// Content holds only the text; the tool calls are assembled correctly.
	if c.Content != "Let me check." || len(c.ToolCalls) != 2 || c.ToolCalls[1].FunctionCall.Arguments != `{"tz":"UTC"}` {
		t.Fatalf("content %q, tool calls %+v", c.Content, c.ToolCalls)
	}
}

// conversation is a multi-turn conversation: an assistant message with two
// tool calls, then one tool message per result (the second without a name).
func conversation() []llms.MessageContent {
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You are terse."),
		human("Weather and time in Paris?"),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.ToolCall{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}},
			llms.ToolCall{ID: "call_2", Type: "function", FunctionCall: &llms.FunctionCall{Name: "time", Arguments: `{"tz":"Europe/Paris"}`}},
		}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "call_1", Name: "weather", Content: "sunny"},
		}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "call_2", Content: "12:00"},
		}},
	}
}

func TestServerRecordsMultiTurnToolResults(t *testing.T) {
	srv, llm := newServer(t, llmtest.Rules(
		llmtest.When(llmtest.AfterToolResult("time"), llmtest.Reply{Text: "Sunny, noon."}),
	), nil)
	resp, err := llm.GenerateContent(context.Background(), conversation())
	if c := choice0(t, resp, err); c.Content != "Sunny, noon." {
		t.Fatalf("content %q", c.Content)
	}
	got := srv.Requests()[0].Messages
	want := conversation()
	// The wire has no name on tool messages: the server takes it from the
	// assistant's tool call with the same id.
	want[4].Parts[0] = llms.ToolCallResponse{ToolCallID: "call_2", Name: "time", Content: "12:00"}
	if !reflect.DeepEqual(got, want) {
		gotJSON, _ := json.Marshal(got)
		wantJSON, _ := json.Marshal(want)
		t.Fatalf("recorded messages:\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

// TestClientRejectsTwoResultsInOneToolMessage pins the pitfall: the OpenAI
// provider needs one tool message per tool result.
func TestClientRejectsTwoResultsInOneToolMessage(t *testing.T) {
	srv, llm := newServer(t, llmtest.Sequence(llmtest.Reply{Text: "unused"}), nil)
	msgs := conversation()[:4]
	msgs[3].Parts = append(msgs[3].Parts, llms.ToolCallResponse{ToolCallID: "call_2", Name: "time", Content: "12:00"})
	_, err := llm.GenerateContent(context.Background(), msgs)
	mustContain(t, err, "expected exactly one part for role tool, got 2")
	if srv.Calls() != 0 {
		t.Fatalf("the request reached the server")
	}
}

func TestServerHistoryValidation(t *testing.T) {
	dangling := conversation()[:4] // call_2 has no result
	_, llm := newServer(t, llmtest.Sequence(llmtest.Reply{Text: "ok"}), nil)
	_, err := llm.GenerateContent(context.Background(), dangling)
	mustContain(t, err, "status code: 400", "did not have response messages: call_2")

	orphan := append(conversation()[:2], conversation()[3])
	_, err = llm.GenerateContent(context.Background(), orphan)
	mustContain(t, err, "status code: 400", "must be a response to a preceding message with 'tool_calls'")

	srv, lenient := newServer(t, llmtest.Sequence(llmtest.Reply{Text: "ok"}), &llmtest.Options{NoHistoryValidation: true})
	resp, err := lenient.GenerateContent(context.Background(), dangling)
	if c := choice0(t, resp, err); c.Content != "ok" || srv.Calls() != 1 {
		t.Fatalf("lenient server: %q, %d calls", c.Content, srv.Calls())
	}
}

func TestServerErrorStatuses(t *testing.T) {
	srv, llm := newServer(t, llmtest.Sequence(
		llmtest.Reply{Err: errors.New("model crashed")},
		llmtest.Reply{Status: 429, ErrorMessage: "Rate limit reached"},
		llmtest.Reply{Status: 400},
		llmtest.Reply{Status: 503, Err: errors.New("overloaded")},
		llmtest.Reply{Text: "recovered"},
	), nil)
	msgs := []llms.MessageContent{human("hi")}
	for _, want := range []string{
		"API returned unexpected status code: 500: model crashed",
		"API returned unexpected status code: 429: Rate limit reached",
		"API returned unexpected status code: 400: Bad Request",
		"API returned unexpected status code: 503: overloaded",
	} {
		_, err := llm.GenerateContent(context.Background(), msgs, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
		mustContain(t, err, want)
	}
	resp, err := llm.GenerateContent(context.Background(), msgs)
	if c := choice0(t, resp, err); c.Content != "recovered" {
		t.Fatalf("content %q", c.Content)
	}
	if srv.Calls() != 5 {
		t.Fatalf("Calls = %d", srv.Calls())
	}
}

func TestServerScriptExhausted(t *testing.T) {
	_, llm := newServer(t, llmtest.Sequence(llmtest.Reply{Text: "only"}), nil)
	if _, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("1")}); err != nil {
		t.Fatal(err)
	}
	_, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("2")})
	mustContain(t, err, "status code: 500", "llmtest: script exhausted after 1 replies")
}

// TestServerDelayPastDeadline also pins that the client reports a deadline
// as a plain error that does not match context.DeadlineExceeded.
func TestServerDelayPastDeadline(t *testing.T) {
	_, llm := newServer(t, llmtest.Sequence(
		llmtest.Reply{Text: "late", Delay: 10 * time.Second},
		llmtest.Reply{Text: "late", Delay: 10 * time.Second},
		llmtest.Reply{Text: "on time"},
	), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := llm.GenerateContent(ctx, []llms.MessageContent{human("hi")})
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("returned after %v", d)
	}
	mustContain(t, err, "request timeout: API call exceeded deadline")
	if errors.Is(err, context.DeadlineExceeded) {
		t.Log("the client now wraps the context error; update the package doc")
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = llm.GenerateContent(ctx, []llms.MessageContent{human("hi")})
	mustContain(t, err, "request cancelled")
	resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("again")})
	if c := choice0(t, resp, err); c.Content != "on time" {
		t.Fatalf("content %q", c.Content)
	}
}

func TestServerStreamFailsMidway(t *testing.T) {
	boom := errors.New("connection reset")
	_, llm := newServer(t, llmtest.Sequence(llmtest.Reply{Text: "one two three", Err: boom}), nil)
	var rec recorder
	resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("hi")}, llms.WithStreamingFunc(rec.fn))
	mustContain(t, err, "error reading streaming response")
	if resp != nil {
		t.Fatalf("got a response: %+v", resp.Choices[0])
	}
	if got := nonEmpty(rec.got()); !reflect.DeepEqual(got, []string{"one ", "two ", "three"}) {
		t.Fatalf("chunks before the failure = %q", got)
	}
}

// TestClientCancelMidStream pins a pitfall of the client: cancelling the
// context while a stream is being read usually returns the truncated
// response with a nil error (the reader goroutine drops the read error when
// the context is done); sometimes it returns "error reading streaming
// response: context canceled". Callers must check ctx.Err() themselves.
func TestClientCancelMidStream(t *testing.T) {
	const text = "one two three four five"
	_, llm := newServer(t, llmtest.ScriptFunc(func(*llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: text, ChunkDelay: 20 * time.Millisecond}, nil
	}), nil)
	outcomes := map[string]int{}
	for range 10 {
		ctx, cancel := context.WithCancel(context.Background())
		resp, err := llm.GenerateContent(ctx, []llms.MessageContent{human("count")},
			llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
				if string(chunk) == "one " {
					cancel()
				}
				return nil
			}))
		cancel()
		switch {
		case err == nil && strings.HasPrefix(text, resp.Choices[0].Content) && resp.Choices[0].Content != text:
			outcomes["truncated, nil error"]++
		case err != nil && errors.Is(err, context.Canceled):
			outcomes["context canceled error"]++
		default:
			t.Fatalf("unexpected outcome: resp %v, err %v", resp, err)
		}
	}
	t.Logf("outcomes of cancelling mid-stream: %v", outcomes)
}

func TestServerCloseDuringDelay(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(llmtest.Reply{Text: "late", Delay: 10 * time.Second}), nil)
	llm, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("hi")})
		errc <- err
	}()
	for srv.Calls() == 0 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	srv.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v", d)
	}
	mustContain(t, <-errc, "status code: 503", "server closed")
	srv.Close() // a second Close is harmless
}

func TestServerRecordsRequest(t *testing.T) {
	srv, llm := newServer(t, llmtest.Sequence(llmtest.Reply{Text: `{"ok":true}`}, llmtest.Reply{Text: "plain"}), nil)
	ctx := context.Background()
	_, err := llm.GenerateContent(ctx, []llms.MessageContent{human("json please")},
		llms.WithJSONMode(), llms.WithTools([]llms.Tool{weatherTool}), llms.WithToolChoice("required"),
		llms.WithMaxTokens(99), llms.WithModel("gpt-test"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = llm.GenerateContent(ctx, []llms.MessageContent{human("stream please")},
		llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Index != 0 || reqs[1].Index != 1 {
		t.Fatalf("requests = %+v", reqs)
	}
	r := reqs[0]
	if !r.JSONMode || r.Stream || r.ToolChoice != "required" || r.MaxTokens != 99 || r.Model != "gpt-test" {
		t.Errorf("first request: JSONMode %v Stream %v ToolChoice %v MaxTokens %d Model %q",
			r.JSONMode, r.Stream, r.ToolChoice, r.MaxTokens, r.Model)
	}
	if len(r.Tools) != 1 || r.Tools[0].Type != "function" || r.Tools[0].Function.Name != "weather" ||
		r.Tools[0].Function.Description != "Current weather of a city." ||
		!reflect.DeepEqual(r.Tools[0].Function.Parameters, weatherTool.Function.Parameters) {
		t.Errorf("tools = %+v", r.Tools[0].Function)
	}
	if !strings.Contains(string(r.Body), `"max_completion_tokens":99`) {
		t.Errorf("body = %s", r.Body)
	}
	r = reqs[1]
	if r.JSONMode || !r.Stream || r.Tools != nil || r.Model != llmtest.DefaultModelName {
		t.Errorf("second request: %+v", r)
	}
	if !strings.Contains(string(r.Body), `"stream_options":{"include_usage":true}`) {
		t.Errorf("body = %s", r.Body)
	}
	// Requests returns copies.
	reqs[0].Messages[0].Parts[0] = llms.TextContent{Text: "changed"}
	if srv.Requests()[0].LastUserText() != "json please" {
		t.Errorf("Requests shares its messages")
	}
}

func TestPromptTokensGrowAndAgree(t *testing.T) {
	srv, llm := newServer(t, llmtest.ScriptFunc(func(*llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: "ok"}, nil
	}), nil)
	model := llmtest.NewModel(llmtest.ScriptFunc(func(*llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: "ok"}, nil
	}), nil)
	ctx := context.Background()
	full := conversation()
	prev := 0
	for _, n := range []int{2, 5} {
		for _, m := range []llms.Model{llm, model} {
			if _, err := m.GenerateContent(ctx, full[:n], llms.WithTools([]llms.Tool{weatherTool, timeTool})); err != nil {
				t.Fatal(err)
			}
		}
		viaHTTP := srv.Requests()[len(srv.Requests())-1].PromptTokens
		inProcess := model.Requests()[len(model.Requests())-1].PromptTokens
		if viaHTTP != inProcess {
			t.Errorf("%d messages: PromptTokens %d over HTTP, %d in-process", n, viaHTTP, inProcess)
		}
		if viaHTTP <= prev {
			t.Errorf("%d messages: PromptTokens %d, not more than %d", n, viaHTTP, prev)
		}
		prev = viaHTTP
	}
	withoutTools := llmtest.EstimatePromptTokens(full, nil)
	if prev <= withoutTools {
		t.Errorf("tool definitions are not counted: %d <= %d", prev, withoutTools)
	}
}

func TestServerConcurrent(t *testing.T) {
	srv, llm := newServer(t, llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: "echo: " + req.LastUserText(), ToolCalls: []llmtest.ToolCall{{Name: "weather"}}}, nil
	}), nil)
	const n = 16
	var wg sync.WaitGroup
	ids := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			var opts []llms.CallOption
			if i%2 == 0 {
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human(fmt.Sprint(i))}, opts...)
			if err != nil {
				t.Error(err)
				return
			}
			if c := resp.Choices[0]; c.Content != fmt.Sprintf("echo: %d", i) || len(c.ToolCalls) != 1 {
				t.Errorf("request %d: %q %+v", i, c.Content, c.ToolCalls)
			} else {
				ids <- c.ToolCalls[0].ID
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("tool call id %s given twice", id)
		}
		seen[id] = true
	}
	if srv.Calls() != n {
		t.Fatalf("Calls = %d", srv.Calls())
	}
	for i, r := range srv.Requests() {
		if r.Index != i {
			t.Fatalf("request %d has Index %d", i, r.Index)
		}
	}
}

func TestServerWithPlainBaseURL(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(llmtest.Reply{Text: "direct"}), &llmtest.Options{ModelName: "demo"})
	defer srv.Close()
	llm, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithToken("test"), openai.WithModel("demo"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("hi")})
	if c := choice0(t, resp, err); c.Content != "direct" {
		t.Fatalf("content %q", c.Content)
	}
	if got := srv.Requests()[0].Model; got != "demo" {
		t.Fatalf("model %q", got)
	}
}

func TestServerReset(t *testing.T) {
	srv, llm := newServer(t, llmtest.Sequence(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather"}}}), nil)
	for range 2 {
		resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("hi")})
		if c := choice0(t, resp, err); c.ToolCalls[0].ID != "call_1" || c.ToolCalls[0].FunctionCall.Arguments != "{}" {
			t.Fatalf("tool call %+v %+v", c.ToolCalls[0], c.ToolCalls[0].FunctionCall)
		}
		if srv.Calls() != 1 {
			t.Fatalf("Calls = %d", srv.Calls())
		}
		srv.Reset()
	}
	if srv.Calls() != 0 || len(srv.Requests()) != 0 {
		t.Fatalf("Reset kept requests")
	}
}

// post sends body to the server's chat endpoint and returns the response.
func post(t *testing.T, srv *llmtest.Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// apiError decodes an OpenAI error body.
func apiError(t *testing.T, body string) (message, typ string) {
	t.Helper()
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not an OpenAI error body (%v): %s", err, body)
	}
	return e.Error.Message, e.Error.Type
}

func TestServerRejectsBadRequests(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(), nil)
	defer srv.Close()
	for _, tc := range []struct{ name, body, want string }{
		{"truncated", `{"messages":[`, "malformed JSON body"},
		{"not JSON", `hello`, "malformed JSON body"},
		{"trailing data", `{"messages":[]} x`, "data after the top-level value"},
		{"wrong type", `{"messages":"hi"}`, "malformed JSON body"},
		{"no messages", `{"model":"scripted"}`, "missing required field 'messages'"},
		{"empty messages", `{"messages":[]}`, "messages must not be empty"},
		{"bad role", `{"messages":[{"role":"robot","content":"hi"}]}`, `unsupported role "robot"`},
		{"bad part", `{"messages":[{"role":"user","content":[{"type":"audio"}]}]}`, `unsupported part type "audio"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, srv, tc.body)
			msg, typ := apiError(t, body)
			if status != http.StatusBadRequest || typ != "invalid_request_error" || !strings.Contains(msg, tc.want) {
				t.Fatalf("got %d %s %q, want 400 containing %q", status, typ, msg, tc.want)
			}
		})
	}
	resp, err := http.Get(srv.URL + "/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET chat: %d", resp.StatusCode)
	}
	resp, err = http.Get(strings.TrimSuffix(srv.URL, "/v1") + "/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if msg, _ := apiError(t, string(b)); resp.StatusCode != http.StatusNotFound || !strings.Contains(msg, "under /v1") {
		t.Errorf("unknown path: %d %s", resp.StatusCode, b)
	}
	if srv.Calls() != 0 {
		t.Errorf("rejected requests were recorded")
	}
}

func TestServerModels(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(), &llmtest.Options{ModelName: "demo"})
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID     string `json:"id"`
			Object string `json:"object"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "demo" || list.Data[0].Object != "model" {
		t.Fatalf("models: %d %+v", resp.StatusCode, list)
	}
}

// sse posts a streaming request and returns the data payloads of the events.
func sse(t *testing.T, srv *llmtest.Server, body string) []string {
	t.Helper()
	resp, err := http.Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	blank := true
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			blank = true
			continue
		}
		if !blank || !strings.HasPrefix(line, "data: ") {
			t.Fatalf("bad SSE framing at %q", line)
		}
		blank = false
		events = append(events, strings.TrimPrefix(line, "data: "))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// TestServerStreamFraming checks the exact wire framing of a streamed
// answer with text and two tool calls.
func TestServerStreamFraming(t *testing.T) {
	script := llmtest.ScriptFunc(func(*llmtest.Request) (llmtest.Reply, error) {
		return llmtest.Reply{Text: "Hi you", ToolCalls: []llmtest.ToolCall{
			{Name: "weather", Arguments: `{"city":"Paris"}`},
			{Name: "time", Arguments: `{}`},
		}}, nil
	})
	srv := llmtest.NewServer(script, nil)
	defer srv.Close()
	const req = `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true`
	events := sse(t, srv, req+`,"stream_options":{"include_usage":true}}`)

	// Strip the envelope, which is the same on every chunk but the last.
	var deltas []string
	for i, e := range events[:len(events)-2] {
		var c struct {
			ID, Object, Model string
			Choices           []json.RawMessage
		}
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatal(err)
		}
		if c.ID != "chatcmpl-llmtest-1" || c.Object != "chat.completion.chunk" || c.Model != "m" || len(c.Choices) != 1 {
			t.Fatalf("chunk %d: %s", i, e)
		}
		deltas = append(deltas, string(c.Choices[0]))
	}
	want := []string{
		`{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}`,
		`{"index":0,"delta":{"content":"Hi "},"finish_reason":null}`,
		`{"index":0,"delta":{"content":"you"},"finish_reason":null}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"weather","arguments":""}}]},"finish_reason":null}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]},"finish_reason":null}`,
		`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"Paris\"}"}}]},"finish_reason":null}`,
		`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"time","arguments":""}}]},"finish_reason":null}`,
		`{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]},"finish_reason":null}`,
		`{"index":0,"delta":{},"finish_reason":"tool_calls"}`,
	}
	if !reflect.DeepEqual(deltas, want) {
		t.Fatalf("choices:\n got %s\nwant %s", strings.Join(deltas, "\n     "), strings.Join(want, "\n     "))
	}
	var usage struct {
		Choices []any `json:"choices"`
		Usage   struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(events[len(events)-2]), &usage); err != nil {
		t.Fatal(err)
	}
	if usage.Choices == nil || len(usage.Choices) != 0 || usage.Usage.TotalTokens == 0 ||
		usage.Usage.TotalTokens != usage.Usage.PromptTokens+usage.Usage.CompletionTokens {
		t.Fatalf("usage chunk: %s", events[len(events)-2])
	}
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("last event %q", events[len(events)-1])
	}

	// Without stream_options.include_usage there is no usage chunk.
	events = sse(t, srv, req+`}`)
	if !strings.Contains(events[len(events)-2], `"finish_reason":"tool_calls"`) || strings.Contains(strings.Join(events, ""), `"usage"`) {
		t.Fatalf("events without usage: %q", events)
	}
}

func TestServerNonStreamedWire(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}},
		llmtest.Reply{Status: 429, ErrorMessage: "slow down"},
	), nil)
	defer srv.Close()
	const req = `{"messages":[{"role":"user","content":"hi"}]}`
	status, body := post(t, srv, req)
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil || status != 200 {
		t.Fatalf("%d %v %s", status, err, body)
	}
	choice := got["choices"].([]any)[0].(map[string]any)
	msg := choice["message"].(map[string]any)
	if content, ok := msg["content"]; !ok || content != nil || choice["finish_reason"] != "tool_calls" {
		t.Errorf("choice: %v", choice)
	}
	tc := msg["tool_calls"].([]any)[0].(map[string]any)
	if tc["id"] != "call_1" || tc["type"] != "function" || tc["function"].(map[string]any)["arguments"] != `{"city":"Paris"}` {
		t.Errorf("tool call: %v", tc)
	}
	if u := got["usage"].(map[string]any); u["prompt_tokens"] == nil || u["completion_tokens"] == nil || u["total_tokens"] == nil {
		t.Errorf("usage: %v", u)
	}
	status, body = post(t, srv, req)
	if msg, typ := apiError(t, body); status != 429 || msg != "slow down" || typ != "requests" {
		t.Errorf("429: %d %s", status, body)
	}
}
