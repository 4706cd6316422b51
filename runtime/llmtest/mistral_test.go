package llmtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/gage-technologies/mistral-go"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/mistral"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
)

// newMistral starts a MistralServer closed at the end of the test and
// langchaingo's real mistral client pointed at it.
func newMistral(t *testing.T, script llmtest.Script, opts *llmtest.Options) (*llmtest.MistralServer, *mistral.Model) {
	t.Helper()
	srv := llmtest.NewMistralServer(script, opts)
	t.Cleanup(srv.Close)
	llm, err := llmclient.Mistral(srv)
	if err != nil {
		t.Fatalf("llmclient.Mistral: %v", err)
	}
	return srv, llm
}

func TestMistralText(t *testing.T) {
	const text = "Hello there, brave new world."
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			srv, llm := newMistral(t, llmtest.Sequence(llmtest.Reply{Text: text, Reasoning: "never sent"}), nil)
			var rec recorder
			var opts []llms.CallOption
			if streamed {
				opts = append(opts, llms.WithStreamingFunc(rec.fn))
			}
			msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."), human("Hi!")}
			resp, err := llm.GenerateContent(context.Background(), msgs, opts...)
			c := choice0(t, resp, err)
			if c.Content != text || c.StopReason != "stop" || c.ReasoningContent != "" {
				t.Fatalf("content %q, stop %q", c.Content, c.StopReason)
			}
			req := srv.Requests()[0]
			if !reflect.DeepEqual(req.Messages, msgs) || req.Stream != streamed || req.MaxTokens != 4000 {
				t.Errorf("recorded %+v", req)
			}
			// Usage sits under "usage", as the SDK's struct.
			want := sdk.UsageInfo{PromptTokens: req.PromptTokens, CompletionTokens: llmtest.EstimateTextTokens(text),
				TotalTokens: req.PromptTokens + llmtest.EstimateTextTokens(text)}
			if c.GenerationInfo["usage"] != want || c.GenerationInfo["PromptTokens"] != nil {
				t.Errorf("GenerationInfo %v, want usage %v", c.GenerationInfo, want)
			}
			if streamed {
				if got, want := nonEmpty(rec.got()), []string{"Hello ", "there, ", "brave ", "new ", "world."}; !reflect.DeepEqual(got, want) {
					t.Errorf("chunks %q, want %q", got, want)
				}
			}
		})
	}
}

func TestMistralToolCalls(t *testing.T) {
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			srv, llm := newMistral(t, llmtest.Sequence(llmtest.Reply{Text: "Let me check.", ToolCalls: []llmtest.ToolCall{
				{Name: "weather", Arguments: `{"city":"Paris"}`},
				{Name: "time", Arguments: `{"tz":"Europe/Paris"}`},
			}}), nil)
			opts := []llms.CallOption{llms.WithTools([]llms.Tool{weatherTool, timeTool})}
			if streamed {
				var rec recorder
				opts = append(opts, llms.WithStreamingFunc(rec.fn))
			}
			resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("Weather and time?")}, opts...)
			c := choice0(t, resp, err)
			want := []string{`call00001 weather {"city":"Paris"}`, `call00002 time {"tz":"Europe/Paris"}`}
			if got := callSummary(c.ToolCalls); !reflect.DeepEqual(got, want) || c.Content != "Let me check." || c.StopReason != "tool_calls" {
				t.Fatalf("calls %q content %q stop %q", got, c.Content, c.StopReason)
			}
			if got := srv.Requests()[0].ToolNames(); !reflect.DeepEqual(got, []string{"weather", "time"}) {
				t.Errorf("tools %q", got)
			}
		})
	}
}

// TestMistralClientDefects pins how langchaingo v0.1.14's mistral client
// (llms/mistral/mistralmodel.go, convertToMistralChatMessages) fails a
// tool loop against Mistral's rules: its messages carry no tool_call_id,
// and an AI message with text and a tool call goes out as two assistant
// messages.
func TestMistralClientDefects(t *testing.T) {
	srv, llm := newMistral(t, llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), nil)
	ctx := context.Background()
	call := llms.ToolCall{ID: "call00001", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}
	_, err := llm.GenerateContent(ctx, []llms.MessageContent{human("Weather?"), aiMsg(call), toolResultMsg("call00001", "weather", "sunny")})
	mustContain(t, err, `(HTTP Error 400) {"code":null,"message":"Tool call id has to be defined.","object":"error","param":null,"type":"invalid_request_error"}`)

	_, err = llm.GenerateContent(ctx, []llms.MessageContent{human("Weather?"), aiMsg(textPart("Let me check."), call)})
	mustContain(t, err, "Unexpected role 'assistant' after role 'assistant'")
	if srv.Calls() != 0 {
		t.Fatalf("rejected requests recorded: %d", srv.Calls())
	}
}

func TestMistralRejects(t *testing.T) {
	srv := llmtest.NewMistralServer(llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), nil)
	defer srv.Close()
	auth := []string{"Authorization", "Bearer k"}
	call := func(id string) string {
		return `{"role":"assistant","content":"","tool_calls":[{"id":"` + id + `","type":"function","function":{"name":"weather","arguments":"{}"}}]}`
	}
	result := func(id string) string { return `{"role":"tool","content":"sunny","tool_call_id":"` + id + `"}` }
	user := `{"role":"user","content":"Hi"}`
	body := func(msgs ...string) string { return `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}` }
	for _, tc := range []struct {
		name, body string
		header     []string
		status     int
		message    string
	}{
		{"no key", body(user), nil, 401, "Unauthorized"},
		{"bad call id", body(user, call("call_1"), result("call_1")), auth, 400, "Tool call id was call_1 but must be a-z, A-Z, 0-9, with a length of 9."},
		{"no tool_call_id", body(user, call("abcdefghi"), `{"role":"tool","content":"sunny"}`), auth, 400, "Tool call id has to be defined."},
		{"two calls one result", body(user, `{"role":"assistant","content":"","tool_calls":[`+
			`{"id":"abcdefghi","type":"function","function":{"name":"a","arguments":"{}"}},`+
			`{"id":"bcdefghij","type":"function","function":{"name":"b","arguments":"{}"}}]}`, result("abcdefghi")), auth, 400,
			"Not the same number of function calls and responses"},
		{"user after tool", body(user, call("abcdefghi"), result("abcdefghi"), user), auth, 400, "Unexpected role 'user' after role 'tool'"},
		{"tool after user", body(user, result("abcdefghi")), auth, 400, "Unexpected role 'tool' after role 'user'"},
		{"ends with assistant", body(user, `{"role":"assistant","content":"Hello"}`), auth, 400,
			"Expected last role User or Tool (or Assistant with prefix True) for serving but got assistant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, got := rawPost(t, srv.HTTPClient(), srv.URL+"/v1/chat/completions", tc.body, tc.header...)
			var e struct {
				Object, Message, Type string
			}
			if err := json.Unmarshal([]byte(got), &e); err != nil {
				t.Fatalf("answer %s: %v", got, err)
			}
			if status != tc.status || e.Object != "error" || e.Message != tc.message {
				t.Fatalf("got %d %s, want %d %q", status, got, tc.status, tc.message)
			}
		})
	}
	ok := body(user, call("abcdefghi"), result("abcdefghi"), `{"role":"assistant","content":"It is sunny."}`, user)
	if status, got := rawPost(t, srv.HTTPClient(), srv.URL+"/v1/chat/completions", ok, auth...); status != 200 {
		t.Fatalf("a valid tool loop: %d %s", status, got)
	}
	if srv.Calls() != 1 {
		t.Fatalf("calls %d", srv.Calls())
	}
}
