package llmtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
)

// claude is a model name for which langchaingo's anthropic client sends
// thinking options.
const claude = "claude-sonnet-4-5"

// newAnthropic starts an AnthropicServer closed at the end of the test and
// langchaingo's real anthropic client pointed at it.
func newAnthropic(t *testing.T, script llmtest.Script, opts *llmtest.Options) (*llmtest.AnthropicServer, *anthropic.LLM) {
	t.Helper()
	srv := llmtest.NewAnthropicServer(script, named(opts, claude))
	t.Cleanup(srv.Close)
	llm, err := llmclient.Anthropic(srv)
	if err != nil {
		t.Fatalf("llmclient.Anthropic: %v", err)
	}
	return srv, llm
}

// choicesText joins the content of all choices (the anthropic client
// returns a choice per content block).
func choicesText(resp *llms.ContentResponse) string {
	var b strings.Builder
	for _, c := range resp.Choices {
		b.WriteString(c.Content)
	}
	return b.String()
}

// choicesToolCalls collects the tool calls of all choices.
func choicesToolCalls(resp *llms.ContentResponse) []llms.ToolCall {
	var out []llms.ToolCall
	for _, c := range resp.Choices {
		out = append(out, c.ToolCalls...)
	}
	return out
}

// callSummary renders tool calls as "id name args" lines.
func callSummary(calls []llms.ToolCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, fmt.Sprintf("%s %s %s", c.ID, c.FunctionCall.Name, c.FunctionCall.Arguments))
	}
	return out
}

func TestAnthropicText(t *testing.T) {
	const text = "Hello there, brave new world."
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			srv, llm := newAnthropic(t, llmtest.Sequence(llmtest.Reply{
				Text:  text,
				Usage: llmtest.Usage{CacheReadTokens: 3, CacheWriteTokens: 2},
			}), nil)
			var rec recorder
			opts := []llms.CallOption{}
			if streamed {
				opts = append(opts, llms.WithStreamingFunc(rec.fn))
			}
			msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."), human("Hi!")}
			resp, err := llm.GenerateContent(context.Background(), msgs, opts...)
			c := choice0(t, resp, err)
			if c.Content != text || c.StopReason != "end_turn" {
				t.Fatalf("content %q, stop %q", c.Content, c.StopReason)
			}
			req := srv.Requests()[0]
			if req.Stream != streamed || req.MaxTokens != 2048 || req.Model != claude {
				t.Errorf("Stream %v MaxTokens %d Model %q", req.Stream, req.MaxTokens, req.Model)
			}
			if !reflect.DeepEqual(req.Messages, msgs) {
				t.Errorf("recorded messages %#v, want %#v", req.Messages, msgs)
			}
			wantUsage := map[string]any{
				"InputTokens":              req.PromptTokens - 5,
				"OutputTokens":             llmtest.EstimateTextTokens(text),
				"CacheReadInputTokens":     3,
				"CacheCreationInputTokens": 2,
			}
			for k, v := range wantUsage {
				if c.GenerationInfo[k] != v {
					t.Errorf("GenerationInfo[%q] = %v, want %v", k, c.GenerationInfo[k], v)
				}
			}
			if streamed {
				if got, want := rec.got(), []string{"Hello ", "there, ", "brave ", "new ", "world."}; !reflect.DeepEqual(got, want) {
					t.Errorf("chunks %q, want %q", got, want)
				}
			}
		})
	}
}

func TestAnthropicToolLoop(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			srv, llm := newAnthropic(t, llmtest.Sequence(
				llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}},
				llmtest.Reply{Text: "Sunny."},
			), nil)
			var opts []llms.CallOption
			if streamed {
				var rec recorder
				opts = append(opts, llms.WithStreamingFunc(rec.fn))
			}
			opts = append(opts, llms.WithTools([]llms.Tool{weatherTool}))
			msgs := []llms.MessageContent{human("Weather in Paris?")}
			resp, err := llm.GenerateContent(context.Background(), msgs, opts...)
			if err != nil {
				t.Fatal(err)
			}
			calls := choicesToolCalls(resp)
			if got, want := callSummary(calls), []string{`toolu_01 weather {"city":"Paris"}`}; !reflect.DeepEqual(got, want) {
				t.Fatalf("tool calls %q, want %q", got, want)
			}
			if resp.Choices[0].StopReason != "tool_use" {
				t.Errorf("stop %q", resp.Choices[0].StopReason)
			}
			msgs = append(msgs, aiMsg(calls[0]), toolResultMsg(calls[0].ID, "weather", "sunny, 24°C"))
			resp, err = llm.GenerateContent(context.Background(), msgs, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if choicesText(resp) != "Sunny." {
				t.Fatalf("answer %q", choicesText(resp))
			}
			req := srv.Requests()[1]
			if got := req.LastToolResults(); len(got) != 1 || got[0].Name != "weather" || got[0].Content != "sunny, 24°C" || got[0].ToolCallID != "toolu_01" {
				t.Errorf("LastToolResults = %+v", got)
			}
			if !reflect.DeepEqual(req.ToolNames(), []string{"weather"}) {
				t.Errorf("tools %q", req.ToolNames())
			}
			if params, ok := req.Tools[0].Function.Parameters.(map[string]any); !ok || params["type"] != "object" {
				t.Errorf("tool parameters %#v", req.Tools[0].Function.Parameters)
			}
		})
	}
}

// TestAnthropicClientSendsOnlyFirstPart pins a defect of langchaingo
// v0.1.14's anthropic client (llms/anthropic/anthropicllm.go,
// handleAIMessage and handleToolMessage): of an AI or tool message it
// sends Parts[0] only. Claude's usual answer, text before a tool call,
// sent back as one AI message loses the tool_use, and the API refuses the
// tool_result that answers it; so do two tool calls in one AI message. One
// part per message passes, because the API combines consecutive turns.
func TestAnthropicClientSendsOnlyFirstPart(t *testing.T) {
	two := llmtest.Reply{Text: "Let me check.", ToolCalls: []llmtest.ToolCall{
		{Name: "weather", Arguments: `{"city":"Paris"}`},
		{Name: "time", Arguments: `{"tz":"Europe/Paris"}`},
	}}
	srv, llm := newAnthropic(t, llmtest.Rules().WithFallback(two), nil)
	tools := llms.WithTools([]llms.Tool{weatherTool, timeTool})
	ctx := context.Background()
	msgs := []llms.MessageContent{human("Weather and time in Paris?")}
	resp, err := llm.GenerateContent(ctx, msgs, tools)
	if err != nil {
		t.Fatal(err)
	}
	if choicesText(resp) != "Let me check." {
		t.Fatalf("text %q", choicesText(resp))
	}
	calls := choicesToolCalls(resp)
	if got, want := callSummary(calls), []string{`toolu_01 weather {"city":"Paris"}`, `toolu_02 time {"tz":"Europe/Paris"}`}; !reflect.DeepEqual(got, want) {
		t.Fatalf("tool calls %q, want %q", got, want)
	}
	results := []llms.MessageContent{
		toolResultMsg(calls[0].ID, "weather", "sunny"),
		toolResultMsg(calls[1].ID, "time", "12:00"),
	}

	// As the OpenAI client takes it: one AI message with every part.
	whole := append(append(append([]llms.MessageContent{}, msgs...), aiMsg(textPart("Let me check."), calls[0], calls[1])), results...)
	_, err = llm.GenerateContent(ctx, whole, tools)
	mustContain(t, err, "API returned unexpected status code: 400",
		"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01. "+
			"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")

	// Without the text, the second call is lost.
	calls2 := append(append([]llms.MessageContent{}, msgs...), aiMsg(calls[0], calls[1]))
	_, err = llm.GenerateContent(ctx, append(calls2, results...), tools)
	mustContain(t, err, "messages.3.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_02.")

	// A tool message with two results sends the first only.
	both := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{results[0].Parts[0], results[1].Parts[0]}}
	split := append(append([]llms.MessageContent{}, msgs...), aiMsg(textPart("Let me check.")), aiMsg(calls[0]), aiMsg(calls[1]))
	_, err = llm.GenerateContent(ctx, append(split, both), tools)
	mustContain(t, err, "messages.3: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_02. "+
		"Each `tool_use` block must have a corresponding `tool_result` block in the next message.")

	// One part per message passes.
	before := srv.Calls()
	if _, err := llm.GenerateContent(ctx, append(split, results...), tools); err != nil {
		t.Fatalf("one part per message: %v", err)
	}
	req := srv.Requests()[before]
	var got []string
	for _, r := range req.LastToolResults() {
		got = append(got, r.ToolCallID+"="+r.Content)
	}
	if !reflect.DeepEqual(got, []string{"toolu_01=sunny", "toolu_02=12:00"}) {
		t.Errorf("results %q", got)
	}
}

func TestAnthropicThinking(t *testing.T) {
	think := llmtest.Reply{Reasoning: "The user greets me.", Text: "Hello!"}
	srv, llm := newAnthropic(t, llmtest.Rules().WithFallback(think), nil)
	ctx := context.Background()
	thinking := []llms.CallOption{llms.WithThinkingBudget(1024), llms.WithMaxTokens(4096), llms.WithTemperature(1)}

	// Without thinking options the reasoning is not sent.
	resp, err := llm.GenerateContent(ctx, []llms.MessageContent{human("Hi")})
	if err != nil || len(resp.Choices) != 1 || resp.Choices[0].Content != "Hello!" {
		t.Fatalf("without thinking: %v, %+v", err, resp)
	}

	var reasoning, content []string
	resp, err = llm.GenerateContent(ctx, []llms.MessageContent{human("Hi")}, append(thinking,
		llms.WithStreamingFunc(func(_ context.Context, c []byte) error { content = append(content, string(c)); return nil }),
		llms.WithStreamingReasoningFunc(func(_ context.Context, r, _ []byte) error {
			reasoning = append(reasoning, string(r))
			return nil
		}))...)
	if err != nil {
		t.Fatal(err)
	}
	// Streamed, the client drops the signature_delta event: the signature
	// comes back empty.
	if len(resp.Choices) != 2 || resp.Choices[0].GenerationInfo["ThinkingContent"] != "The user greets me." ||
		resp.Choices[0].GenerationInfo["ThinkingSignature"] != "" || resp.Choices[1].Content != "Hello!" {
		t.Fatalf("choices %+v %+v", resp.Choices[0], resp.Choices[1:])
	}
	if strings.Join(reasoning, "") != "The user greets me." || strings.Join(content, "") != "Hello!" {
		t.Errorf("reasoning chunks %q, content chunks %q", reasoning, content)
	}
	resp, err = llm.GenerateContent(ctx, []llms.MessageContent{human("Hi")}, thinking...)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 2 || resp.Choices[0].GenerationInfo["ThinkingContent"] != "The user greets me." ||
		resp.Choices[0].GenerationInfo["ThinkingSignature"] == "" || resp.Choices[1].Content != "Hello!" {
		t.Fatalf("non-streamed choices %+v %+v", resp.Choices[0], resp.Choices[1:])
	}
	if reqs := srv.Requests(); reqs[0].Thinking || !reqs[1].Thinking || !reqs[2].Thinking {
		t.Errorf("Thinking recorded as %v %v %v", reqs[0].Thinking, reqs[1].Thinking, reqs[2].Thinking)
	}

	// The client always sends a temperature (0 unless set), which the API
	// refuses with thinking on.
	_, err = llm.GenerateContent(ctx, []llms.MessageContent{human("Hi")}, thinking[:2]...)
	mustContain(t, err, "400", "`temperature` may only be set to 1 when thinking is enabled.")
}

// TestAnthropicThinkingToolLoop pins that langchaingo's anthropic client
// cannot run a tool loop with thinking on: it cannot send the thinking
// block back, and the API wants the tool-calling turn to start with it.
func TestAnthropicThinkingToolLoop(t *testing.T) {
	_, llm := newAnthropic(t, llmtest.Rules().WithFallback(llmtest.Reply{
		Reasoning: "I need the weather.", ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}},
	}), nil)
	opts := []llms.CallOption{llms.WithThinkingBudget(1024), llms.WithMaxTokens(4096), llms.WithTemperature(1), llms.WithTools([]llms.Tool{weatherTool})}
	msgs := []llms.MessageContent{human("Weather in Paris?")}
	resp, err := llm.GenerateContent(context.Background(), msgs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	calls := choicesToolCalls(resp)
	msgs = append(msgs, aiMsg(calls[0]), toolResultMsg(calls[0].ID, "weather", "sunny"))
	_, err = llm.GenerateContent(context.Background(), msgs, opts...)
	mustContain(t, err, "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`.")
}

// TestAnthropicRejects checks each rule the server enforces, with the
// API's error body and text, on requests the client cannot produce.
func TestAnthropicRejects(t *testing.T) {
	srv := llmtest.NewAnthropicServer(llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), nil)
	defer srv.Close()
	headers := []string{"x-api-key", "k", "anthropic-version", llmtest.AnthropicVersion}
	user := func(content string) string { return `{"role":"user","content":` + content + `}` }
	asst := func(content string) string { return `{"role":"assistant","content":` + content + `}` }
	body := func(msgs ...string) string {
		return `{"model":"m","max_tokens":100,"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	use := func(id string) string {
		return `{"type":"tool_use","id":"` + id + `","name":"weather","input":{"city":"Paris"}}`
	}
	result := func(id string) string { return `{"type":"tool_result","tool_use_id":"` + id + `","content":"sunny"}` }
	ok := body(user(`"Hi"`))
	for _, tc := range []struct {
		name    string
		body    string
		headers []string
		status  int
		typ     string
		message string
	}{
		{"no key", ok, []string{"anthropic-version", llmtest.AnthropicVersion}, 401, "authentication_error", "x-api-key header is required"},
		{"no version", ok, []string{"x-api-key", "k"}, 400, "invalid_request_error", "anthropic-version: header is required"},
		{"no max_tokens", `{"model":"m","messages":[` + user(`"Hi"`) + `]}`, headers, 400, "invalid_request_error", "max_tokens: Field required"},
		{"no messages", `{"model":"m","max_tokens":1,"messages":[]}`, headers, 400, "invalid_request_error", "messages: at least one message is required"},
		{"system role", body(`{"role":"system","content":"x"}`), headers, 400, "invalid_request_error", "messages.0.role: Input should be 'user' or 'assistant'"},
		{"assistant first", body(asst(`"Hi"`), user(`"Hi"`)), headers, 400, "invalid_request_error", `messages: first message must use the "user" role`},
		{"empty text block", body(user(`[{"type":"text","text":""}]`)), headers, 400, "invalid_request_error", "messages: text content blocks must be non-empty"},
		{"empty content", body(user(`""`), asst(`"a"`), user(`"b"`)), headers, 400, "invalid_request_error",
			"messages.0: all messages must have non-empty content except for the optional final assistant message"},
		{"result without use", body(user(`"Hi"`), asst(`"Let me see."`), user(`[`+result("toolu_x")+`]`)), headers, 400, "invalid_request_error",
			"messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"use without result", body(user(`"Hi"`), asst(`[`+use("toolu_a")+`,`+use("toolu_b")+`]`), user(`[`+result("toolu_a")+`]`)), headers, 400, "invalid_request_error",
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"use at the end", body(user(`"Hi"`), asst(`[`+use("toolu_a")+`]`)), headers, 400, "invalid_request_error",
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a."},
		{"five breakpoints", body(user(`[` + strings.Repeat(`{"type":"text","text":"x","cache_control":{"type":"ephemeral"}},`, 4) +
			`{"type":"text","text":"y","cache_control":{"type":"ephemeral","ttl":"1h"}}]`)), headers, 400, "invalid_request_error",
			"A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"breakpoint type", body(user(`[{"type":"text","text":"x","cache_control":{"type":"persistent"}}]`)), headers, 400, "invalid_request_error",
			"messages.0.content.0.text.cache_control.type: Input should be 'ephemeral'"},
		{"breakpoint ttl", body(user(`[{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"2h"}}]`)), headers, 400, "invalid_request_error",
			"messages.0.content.0.text.cache_control.ephemeral.ttl: Input should be '5m' or '1h'"},
		{"result two turns later", body(user(`"Hi"`), asst(`[`+use("toolu_a")+`]`), user(`[`+result("toolu_a")+`]`), asst(`"ok"`), user(`[`+result("toolu_a")+`]`)), headers, 400, "invalid_request_error",
			"messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_a."},
		{"input not an object", body(user(`"Hi"`), asst(`[{"type":"tool_use","id":"t","name":"w","input":"x"}]`), user(`[`+result("t")+`]`)), headers, 400, "invalid_request_error",
			"messages.1.content.0.tool_use.input: Input should be a valid dictionary"},
		{"bad tool name", `{"model":"m","max_tokens":1,"messages":[` + user(`"Hi"`) + `],"tools":[{"name":"get weather","input_schema":{"type":"object"}}]}`, headers, 400, "invalid_request_error",
			"tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"},
		{"schema not an object", `{"model":"m","max_tokens":1,"messages":[` + user(`"Hi"`) + `],"tools":[{"name":"w","input_schema":{"type":"string"}}]}`, headers, 400, "invalid_request_error",
			"tools.0.custom.input_schema.type: Input should be 'object'"},
		{"small thinking budget", `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":1000},"messages":[` + user(`"Hi"`) + `]}`, headers, 400, "invalid_request_error",
			"thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"},
		{"max_tokens under budget", `{"model":"m","max_tokens":1024,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[` + user(`"Hi"`) + `]}`, headers, 400, "invalid_request_error",
			"`max_tokens` must be greater than `thinking.budget_tokens`."},
		{"thinking with forced tool use", `{"model":"m","max_tokens":5000,"thinking":{"type":"enabled","budget_tokens":1024},"tool_choice":{"type":"any"},"messages":[` + user(`"Hi"`) + `]}`, headers, 400, "invalid_request_error",
			"Thinking may not be enabled when tool_choice forces tool use."},
		{"malformed", `{"model":`, headers, 400, "invalid_request_error", "malformed JSON body"},
		{"unknown field", `{"model":"m","max_tokens":1,"messages":[` + user(`"Hi"`) + `],"reasoning_effort":"high"}`, headers, 400, "invalid_request_error",
			"reasoning_effort: Extra inputs are not permitted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, got := rawPost(t, srv.HTTPClient(), srv.URL+"/messages", tc.body, tc.headers...)
			var e struct {
				Type  string `json:"type"`
				Error struct {
					Type    string `json:"type"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(got), &e); err != nil {
				t.Fatalf("answer %s: %v", got, err)
			}
			if status != tc.status || e.Type != "error" || e.Error.Type != tc.typ || !strings.Contains(e.Error.Message, tc.message) {
				t.Fatalf("got %d %s, want %d %s %q", status, got, tc.status, tc.typ, tc.message)
			}
		})
	}
	if srv.Calls() != 0 {
		t.Fatalf("rejected requests were recorded: %d", srv.Calls())
	}

	// Consecutive turns of one role are combined, not refused; content may
	// be blocks with cache_control, and the system prompt text blocks.
	combined := `{"model":"m","max_tokens":100,"system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"messages":[` +
		strings.Join([]string{user(`"Hi"`), user(`[{"type":"text","text":"there","cache_control":{"type":"ephemeral"}}]`),
			asst(`"Let me see."`), asst(`[` + use("toolu_a") + `]`), user(`[` + result("toolu_a") + `]`), user(`"thanks"`)}, ",") + `]}`
	if status, got := rawPost(t, srv.HTTPClient(), srv.URL+"/messages", combined, headers...); status != 200 {
		t.Fatalf("combined turns: %d %s", status, got)
	}
	req := srv.Requests()[0]
	want := []llms.MessageContent{
		{Role: llms.ChatMessageTypeSystem, Parts: []llms.ContentPart{llms.CachedContent{ContentPart: textPart("Be brief."), CacheControl: &llms.CacheControl{Type: "ephemeral"}}}},
		human("Hi"),
		{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{llms.CachedContent{ContentPart: textPart("there"), CacheControl: &llms.CacheControl{Type: "ephemeral"}}}},
		aiMsg(textPart("Let me see.")),
		aiMsg(llms.ToolCall{ID: "toolu_a", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}),
		toolResultMsg("toolu_a", "weather", "sunny"),
		human("thanks"),
	}
	if !reflect.DeepEqual(req.Messages, want) {
		t.Fatalf("recorded %#v\nwant %#v", req.Messages, want)
	}

	// Without history validation the conversation rules are not checked.
	lax := llmtest.NewAnthropicServer(llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), &llmtest.Options{NoHistoryValidation: true})
	defer lax.Close()
	if status, got := rawPost(t, lax.HTTPClient(), lax.URL+"/messages", body(asst(`"Hi"`), user(`[`+result("x")+`]`)), headers...); status != 200 {
		t.Fatalf("without validation: %d %s", status, got)
	}
}
