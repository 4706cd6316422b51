package llmtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/googleai"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
)

// newGemini starts a GeminiServer closed at the end of the test and
// langchaingo's real googleai client pointed at it.
func newGemini(t *testing.T, script llmtest.Script, opts *llmtest.Options) (*llmtest.GeminiServer, *googleai.GoogleAI) {
	t.Helper()
	srv := llmtest.NewGeminiServer(script, named(opts, "gemini-2.5-flash"))
	t.Cleanup(srv.Close)
	llm, err := llmclient.GoogleAI(context.Background(), srv)
	if err != nil {
		t.Fatalf("llmclient.GoogleAI: %v", err)
	}
	t.Cleanup(func() { _ = llm.Close() })
	return srv, llm
}

// system returns a system message.
func system(text string) llms.MessageContent { return llms.TextParts(llms.ChatMessageTypeSystem, text) }

func TestGeminiText(t *testing.T) {
	const text = "Hello there, brave new world."
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			srv, llm := newGemini(t, llmtest.Sequence(llmtest.Reply{Text: text}), nil)
			var rec recorder
			var opts []llms.CallOption
			if streamed {
				opts = append(opts, llms.WithStreamingFunc(rec.fn))
			}
			msgs := []llms.MessageContent{system("Be brief."), human("Hi!")}
			resp, err := llm.GenerateContent(context.Background(), msgs, opts...)
			c := choice0(t, resp, err)
			if c.Content != text || c.StopReason != "FinishReasonStop" {
				t.Fatalf("content %q, stop %q", c.Content, c.StopReason)
			}
			// The SDK always calls streamGenerateContent (genai/client.go
			// generateContent), and keeps the usage of the stream's first
			// response (joinResponses), which is the prompt's only, as the
			// API sends it: no output tokens are reported (ai.Transport
			// reads the last response's).
			req := srv.Requests()[0]
			if !reflect.DeepEqual(req.Messages, msgs) || !req.Stream || req.MaxTokens != 2048 || req.Model != "gemini-2.5-flash" {
				t.Errorf("recorded %+v", req)
			}
			completion := int32(0)
			if streamed {
				if got, want := rec.got(), []string{"Hello ", "there, ", "brave ", "new ", "world."}; !reflect.DeepEqual(got, want) {
					t.Errorf("chunks %q, want %q", got, want)
				}
			}
			want := map[string]any{"PromptTokens": int32(req.PromptTokens), "CompletionTokens": completion,
				"TotalTokens": int32(req.PromptTokens) + completion}
			for k, v := range want {
				if c.GenerationInfo[k] != v {
					t.Errorf("GenerationInfo[%q] = %v (%T), want %v", k, c.GenerationInfo[k], c.GenerationInfo[k], v)
				}
			}
		})
	}
}

// TestGeminiThoughtsUndercount pins that langchaingo's googleai client
// reads candidatesTokenCount as the completion, which leaves out the
// tokens of a thinking model's thoughts (thoughtsTokenCount).
func TestGeminiThoughtsUndercount(t *testing.T) {
	_, llm := newGemini(t, llmtest.Sequence(llmtest.Reply{Reasoning: "The user greets me, I greet back.", Text: "Hello!"}), nil)
	resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{system("x"), human("Hi")})
	c := choice0(t, resp, err)
	if c.Content != "Hello!" || c.GenerationInfo["CompletionTokens"] != int32(llmtest.EstimateTextTokens("Hello!")) {
		t.Fatalf("content %q, info %v", c.Content, c.GenerationInfo)
	}
}

func TestGeminiToolLoop(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			srv, llm := newGemini(t, llmtest.Sequence(
				llmtest.Reply{Text: "Let me check.", ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}},
				llmtest.Reply{Text: "Sunny."},
			), nil)
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{weatherTool})}
			if streamed {
				var rec recorder
				opts = append(opts, llms.WithStreamingFunc(rec.fn))
			}
			msgs := []llms.MessageContent{system("x"), human("Weather in Paris?")}
			resp, err := llm.GenerateContent(context.Background(), msgs, opts...)
			c := choice0(t, resp, err)
			// Gemini's calls have no ids.
			if got := callSummary(c.ToolCalls); c.Content != "Let me check." || !reflect.DeepEqual(got, []string{` weather {"city":"Paris"}`}) {
				t.Fatalf("content %q calls %q", c.Content, got)
			}
			// Text and call in one AI message pass: Gemini keeps every part.
			call := c.ToolCalls[0]
			call.Type = "function" // the client leaves it empty, the server records it
			msgs = append(msgs, aiMsg(textPart(c.Content), call), toolResultMsg("", "weather", "sunny"))
			resp, err = llm.GenerateContent(context.Background(), msgs, opts...)
			if c := choice0(t, resp, err); c.Content != "Sunny." {
				t.Fatalf("answer %q", c.Content)
			}
			req := srv.Requests()[1]
			if !reflect.DeepEqual(req.Messages, msgs) {
				t.Errorf("recorded %#v\nwant %#v", req.Messages, msgs)
			}
			want := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []any{"city"}}
			if !reflect.DeepEqual(req.Tools[0].Function.Parameters, want) {
				t.Errorf("parameters %#v", req.Tools[0].Function.Parameters)
			}
		})
	}
}

// TestGeminiTwoCalls checks two calls answered in one turn, and pins that
// two tool messages (as the OpenAI client needs them) are two turns, which
// Gemini refuses.
func TestGeminiTwoCalls(t *testing.T) {
	srv, llm := newGemini(t, llmtest.Rules().WithFallback(llmtest.Reply{ToolCalls: []llmtest.ToolCall{
		{Name: "weather", Arguments: `{"city":"Paris"}`}, {Name: "time", Arguments: `{"tz":"Europe/Paris"}`},
	}}), nil)
	tools := llms.WithTools([]llms.Tool{weatherTool, timeTool})
	msgs := []llms.MessageContent{system("x"), human("Weather and time?")}
	resp, err := llm.GenerateContent(context.Background(), msgs, tools)
	c := choice0(t, resp, err)
	if len(c.ToolCalls) != 2 {
		t.Fatalf("calls %q", callSummary(c.ToolCalls))
	}
	msgs = append(msgs, aiMsg(c.ToolCalls[0], c.ToolCalls[1]))
	r1, r2 := toolResultMsg("", "weather", "sunny"), toolResultMsg("", "time", "12:00")

	_, err = llm.GenerateContent(context.Background(), append(msgs, r1, r2), tools)
	mustContain(t, err, "googleapi: Error 400: Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")

	both := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: append(r1.Parts, r2.Parts...)}
	if _, err := llm.GenerateContent(context.Background(), append(msgs, both), tools); err != nil {
		t.Fatalf("two results in one turn: %v", err)
	}
	if got := srv.Requests()[1].LastToolResults(); len(got) != 2 || got[0].Name != "weather" || got[1].Content != "12:00" {
		t.Errorf("results %+v", got)
	}
}

// TestGeminiClientRefusesRawParameters pins that langchaingo's googleai
// client (llms/googleai/googleai.go, convertTools) takes tool parameters
// only as map[string]any.
func TestGeminiClientRefusesRawParameters(t *testing.T) {
	srv, llm := newGemini(t, llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), nil)
	raw := llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
		Name: "weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`),
	}}
	_, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("Hi")}, llms.WithTools([]llms.Tool{raw}))
	mustContain(t, err, "tool [0]: unsupported type json.RawMessage of Parameters")
	if srv.Calls() != 0 {
		t.Fatalf("calls %d", srv.Calls())
	}
}

func TestGeminiRejects(t *testing.T) {
	srv := llmtest.NewGeminiServer(llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), nil)
	defer srv.Close()
	url := srv.URL + "/v1beta/models/gemini-2.5-flash:generateContent"
	key := []string{"x-goog-api-key", "k"}
	user := `{"role":"user","parts":[{"text":"Hi"}]}`
	call := func(n int) string {
		return `{"role":"model","parts":[` + strings.Repeat(`{"functionCall":{"name":"weather","args":{}}},`, n-1) + `{"functionCall":{"name":"weather","args":{}}}]}`
	}
	result := func(n int) string {
		return `{"role":"user","parts":[` + strings.Repeat(`{"functionResponse":{"name":"weather","response":{"response":"sunny"}}},`, n-1) +
			`{"functionResponse":{"name":"weather","response":{"response":"sunny"}}}]}`
	}
	body := func(contents ...string) string { return `{"contents":[` + strings.Join(contents, ",") + `]}` }
	for _, tc := range []struct {
		name, body string
		header     []string
		status     int
		message    string
	}{
		{"no key", body(user), nil, 403, "Method doesn't allow unregistered callers"},
		{"no contents", `{"contents":[]}`, key, 400, "* GenerateContentRequest.contents: contents is not specified"},
		{"bad role", body(`{"role":"assistant","parts":[{"text":"x"}]}`), key, 400, "Please use a valid role: user, model."},
		{"no parts", body(`{"role":"user","parts":[]}`), key, 400, "* GenerateContentRequest.contents[0].parts: contents.parts must not be empty."},
		{"result without call", body(user, `{"role":"model","parts":[{"text":"ok"}]}`, result(1)), key, 400,
			"Please ensure that function response turn comes immediately after a function call turn."},
		{"call first", body(call(1), result(1)), key, 400,
			"Please ensure that function call turn comes immediately after a user turn or after a function response turn."},
		{"fewer results", body(user, call(2), result(1), result(1)), key, 400,
			"Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."},
		{"bad function name", `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"get weather"}]}]}`, key, 400,
			"* GenerateContentRequest.tools[0].function_declarations[0].name: Invalid function name."},
		{"JSON Schema keyword", `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"w","parameters":{"type":"OBJECT",` +
			`"properties":{"city":{"type":"STRING"}},"additionalProperties":false}}]}]}`, key, 400,
			`Invalid JSON payload received. Unknown name "additionalProperties" at 'tools[0].function_declarations[0].parameters': Cannot find field.`},
		{"object without properties", `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"w","parameters":{"type":"OBJECT"}}]}]}`, key, 400,
			"* GenerateContentRequest.tools[0].function_declarations[0].parameters.properties: should be non-empty for OBJECT type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, got := rawPost(t, srv.HTTPClient(), url, tc.body, tc.header...)
			var e struct {
				Error struct {
					Code    int
					Message string
					Status  string
				}
			}
			if err := json.Unmarshal([]byte(got), &e); err != nil {
				t.Fatalf("answer %s: %v", got, err)
			}
			if status != tc.status || e.Error.Code != tc.status || !strings.HasPrefix(e.Error.Message, tc.message) ||
				tc.status == 400 && e.Error.Status != "INVALID_ARGUMENT" {
				t.Fatalf("got %d %s, want %d %q", status, got, tc.status, tc.message)
			}
		})
	}
	if srv.Calls() != 0 {
		t.Fatalf("rejected requests recorded: %d", srv.Calls())
	}
	if status, got := rawPost(t, srv.HTTPClient(), url+"?key=k", body(user, call(2), result(2))); status != 200 {
		t.Fatalf("a valid loop with the key in the query: %d %s", status, got)
	}
	// parametersJsonSchema takes any JSON Schema.
	withSchema := `{"contents":[` + user + `],"tools":[{"functionDeclarations":[{"name":"w","parametersJsonSchema":` +
		`{"type":"object","properties":{"city":{"type":"string"}},"additionalProperties":false}}]}]}`
	if status, got := rawPost(t, srv.HTTPClient(), url, withSchema, key...); status != 200 {
		t.Fatalf("parametersJsonSchema: %d %s", status, got)
	}
	if p := srv.Requests()[1].Tools[0].Function.Parameters.(map[string]any); p["additionalProperties"] != false {
		t.Fatalf("parameters %v", p)
	}
}

// TestGeminiStreamFraming checks both stream framings and the thoughts a
// request with includeThoughts gets.
func TestGeminiStreamFraming(t *testing.T) {
	srv := llmtest.NewGeminiServer(llmtest.Rules().WithFallback(llmtest.Reply{Reasoning: "Hmm.", Text: "Hi you"}), nil)
	defer srv.Close()
	url := srv.URL + "/v1beta/models/g:streamGenerateContent"
	body := `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`
	status, got := rawPost(t, srv.HTTPClient(), url+"?alt=sse", body, "x-goog-api-key", "k")
	events := strings.Split(strings.TrimSuffix(got, "\r\n\r\n"), "\r\n\r\n")
	if status != 200 || len(events) != 3 || !strings.HasPrefix(events[0], `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hmm.","thought":true}]}`) ||
		!strings.Contains(events[2], `"parts":[{"text":"you"}]},"finishReason":"STOP"`) || !strings.Contains(events[2], `"thoughtsTokenCount":1`) {
		t.Fatalf("SSE %d:\n%s", status, got)
	}
	status, got = rawPost(t, srv.HTTPClient(), url+"?%24alt=json%3Benum-encoding%3Dint", body, "x-goog-api-key", "k")
	var arr []map[string]any
	if err := json.Unmarshal([]byte(got), &arr); err != nil || status != 200 || len(arr) != 3 {
		t.Fatalf("JSON array %d %v:\n%s", status, err, got)
	}
	if fr := arr[2]["candidates"].([]any)[0].(map[string]any)["finishReason"]; fr != float64(1) {
		t.Fatalf("finishReason %v", fr)
	}
	// Every response carries usageMetadata, as the API sends it: the
	// prompt's before the last, the whole call's in the last.
	req := srv.Requests()[1]
	prompt := float64(req.PromptTokens)
	out := float64(llmtest.EstimateTextTokens("Hi you"))
	thoughts := float64(llmtest.EstimateTextTokens("Hmm."))
	for i, r := range arr {
		u, _ := r["usageMetadata"].(map[string]any)
		want := map[string]any{"promptTokenCount": prompt, "totalTokenCount": prompt}
		if i == len(arr)-1 {
			want = map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": out, "thoughtsTokenCount": thoughts,
				"totalTokenCount": prompt + out + thoughts}
		}
		if !reflect.DeepEqual(u, want) {
			t.Fatalf("response %d: usageMetadata %v, want %v", i, u, want)
		}
	}
	if !srv.Requests()[0].Thinking {
		t.Fatal("Thinking not recorded")
	}
}
