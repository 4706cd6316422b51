package llmtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/ollama"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
)

// newOllama starts an OllamaServer closed at the end of the test and
// langchaingo's real ollama client pointed at it.
func newOllama(t *testing.T, script llmtest.Script, opts ...ollama.Option) (*llmtest.OllamaServer, *ollama.LLM) {
	t.Helper()
	srv := llmtest.NewOllamaServer(script, &llmtest.Options{ModelName: "llama3.2"})
	t.Cleanup(srv.Close)
	llm, err := llmclient.Ollama(srv, opts...)
	if err != nil {
		t.Fatalf("llmclient.Ollama: %v", err)
	}
	return srv, llm
}

func TestOllamaText(t *testing.T) {
	const text = "Hello there, brave new world."
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprintf("streamed=%v", streamed), func(t *testing.T) {
			srv, llm := newOllama(t, llmtest.Sequence(llmtest.Reply{Text: text}))
			var rec recorder
			var opts []llms.CallOption
			if streamed {
				opts = append(opts, llms.WithStreamingFunc(rec.fn))
			}
			msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."), human("Hi!")}
			resp, err := llm.GenerateContent(context.Background(), msgs, append(opts, llms.WithMaxTokens(64))...)
			c := choice0(t, resp, err)
			// The client never reports a finish reason.
			if c.Content != text || c.StopReason != "" {
				t.Fatalf("content %q, stop %q", c.Content, c.StopReason)
			}
			req := srv.Requests()[0]
			// The client leaves "stream" out unless it streams, and Ollama
			// streams by default.
			if !reflect.DeepEqual(req.Messages, msgs) || !req.Stream || req.MaxTokens != 64 || req.Model != "llama3.2" {
				t.Errorf("recorded %+v", req)
			}
			want := map[string]any{
				"PromptTokens": req.PromptTokens, "CompletionTokens": llmtest.EstimateTextTokens(text),
				"TotalTokens": req.PromptTokens + llmtest.EstimateTextTokens(text),
			}
			for k, v := range want {
				if c.GenerationInfo[k] != v {
					t.Errorf("GenerationInfo[%q] = %v, want %v", k, c.GenerationInfo[k], v)
				}
			}
			if streamed {
				// The final object's empty content is passed on too.
				if got, want := rec.got(), []string{"Hello ", "there, ", "brave ", "new ", "world.", ""}; !reflect.DeepEqual(got, want) {
					t.Errorf("chunks %q, want %q", got, want)
				}
			}
		})
	}
}

// TestOllamaClientHasNoTools pins that langchaingo v0.1.14's ollama client
// (llms/ollama/ollamallm.go, GenerateContent) never offers tools, drops
// the tool calls of an answer, and refuses to send tool calls or results.
func TestOllamaClientHasNoTools(t *testing.T) {
	srv, llm := newOllama(t, llmtest.Rules().WithFallback(llmtest.Reply{
		ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}},
	}))
	ctx := context.Background()
	resp, err := llm.GenerateContent(ctx, []llms.MessageContent{human("Weather?")}, llms.WithTools([]llms.Tool{weatherTool}))
	c := choice0(t, resp, err)
	if len(c.ToolCalls) != 0 || c.FuncCall != nil || c.Content != "" {
		t.Fatalf("choice %+v", c)
	}
	if req := srv.Requests()[0]; req.Tools != nil || strings.Contains(string(req.Body), `"tools"`) {
		t.Fatalf("tools were sent: %s", req.Body)
	}
	call := llms.ToolCall{ID: "c1", Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: "{}"}}
	_, err = llm.GenerateContent(ctx, []llms.MessageContent{human("Weather?"), aiMsg(call), toolResultMsg("c1", "weather", "sunny")})
	mustContain(t, err, "only support Text and BinaryContent parts right now")
	if srv.Calls() != 1 {
		t.Fatalf("calls %d", srv.Calls())
	}
}

// TestOllamaThinking checks think on the wire, and pins that the client
// puts its thinking switch in options, where Ollama ignores it.
func TestOllamaThinking(t *testing.T) {
	srv, llm := newOllama(t, llmtest.Rules().WithFallback(llmtest.Reply{Reasoning: "Greeting.", Text: "Hello!"}),
		ollama.WithModel("deepseek-r1"), ollama.WithPullModel())
	resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("Hi")}, llms.WithThinkingMode(llms.ThinkingModeHigh))
	c := choice0(t, resp, err)
	req := srv.Requests()[0]
	if c.Content != "Hello!" || req.Thinking || !strings.Contains(string(req.Body), `"options":{`) || !strings.Contains(string(req.Body), `"think":true`) {
		t.Fatalf("content %q, Thinking %v, body %s", c.Content, req.Thinking, req.Body)
	}

	status, got := rawPost(t, srv.HTTPClient(), srv.URL+"/api/chat", `{"model":"deepseek-r1","think":true,"messages":[{"role":"user","content":"Hi"}]}`)
	if status != 200 {
		t.Fatalf("%d %s", status, got)
	}
	var thinking, content strings.Builder
	sc := bufio.NewScanner(strings.NewReader(got))
	for sc.Scan() {
		var chunk struct {
			Message struct{ Content, Thinking string }
			Done    bool
		}
		if err := json.Unmarshal(sc.Bytes(), &chunk); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		thinking.WriteString(chunk.Message.Thinking)
		content.WriteString(chunk.Message.Content)
	}
	if thinking.String() != "Greeting." || content.String() != "Hello!" || !srv.Requests()[1].Thinking {
		t.Fatalf("thinking %q content %q", thinking.String(), content.String())
	}
}

func TestOllamaRawToolLoop(t *testing.T) {
	srv := llmtest.NewOllamaServer(llmtest.Sequence(
		llmtest.Reply{Text: "Let me check.", ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}, {Name: "time", Arguments: `{}`}}},
		llmtest.Reply{Text: "Sunny.", StopReason: "length"},
	), nil)
	defer srv.Close()
	tools := `"tools":[{"type":"function","function":{"name":"weather","description":"d","parameters":{"type":"object"}}}]`
	status, got := rawPost(t, srv.HTTPClient(), srv.URL+"/api/chat",
		`{"model":"scripted","stream":false,`+tools+`,"messages":[{"role":"user","content":"Weather?"}]}`)
	want := `{"model":"scripted","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"Let me check.",` +
		`"tool_calls":[{"function":{"index":0,"name":"weather","arguments":{"city":"Paris"}}},{"function":{"index":1,"name":"time","arguments":{}}}]},` +
		`"done":true,"done_reason":"stop"`
	if status != 200 || !strings.HasPrefix(got, want) || !strings.Contains(got, `"prompt_eval_count":`) {
		t.Fatalf("got %d %s\nwant prefix %s", status, got, want)
	}
	status, got = rawPost(t, srv.HTTPClient(), srv.URL+"/api/chat", `{"model":"scripted",`+tools+`,"messages":[`+
		`{"role":"user","content":"Weather?"},`+
		`{"role":"assistant","content":"Let me check.","tool_calls":[{"function":{"name":"weather","arguments":{"city":"Paris"}}}]},`+
		`{"role":"tool","content":"sunny","tool_name":"weather"}]}`)
	if status != 200 || !strings.Contains(got, `"done_reason":"length"`) {
		t.Fatalf("got %d %s", status, got)
	}
	req := srv.Requests()[1]
	wantMsgs := []llms.MessageContent{
		human("Weather?"),
		aiMsg(textPart("Let me check."), llms.ToolCall{Type: "function", FunctionCall: &llms.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}),
		toolResultMsg("", "weather", "sunny"),
	}
	if !reflect.DeepEqual(req.Messages, wantMsgs) || !reflect.DeepEqual(req.ToolNames(), []string{"weather"}) {
		t.Fatalf("recorded %#v", req.Messages)
	}
}

func TestOllamaModels(t *testing.T) {
	srv, llm := newOllama(t, llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), ollama.WithModel("qwen3"))
	_, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("Hi")})
	mustContain(t, err, `model "qwen3" not found, try pulling it first`)

	pulling, err := llmclient.Ollama(srv, ollama.WithModel("qwen3"), ollama.WithPullModel())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pulling.GenerateContent(context.Background(), []llms.MessageContent{human("Hi")}); err != nil {
		t.Fatalf("after a pull: %v", err)
	}
	if _, err := llm.GenerateContent(context.Background(), []llms.MessageContent{human("Hi")}); err != nil {
		t.Fatalf("qwen3 stays installed: %v", err)
	}
	status, got := rawPost(t, srv.HTTPClient(), srv.URL+"/api/chat", `{"messages":[{"role":"user","content":"Hi"}]}`)
	if status != 400 || got != `{"error":"model is required"}`+"\n" {
		t.Fatalf("no model: %d %s", status, got)
	}
	resp, err := srv.HTTPClient().Get(srv.URL + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tags struct{ Models []struct{ Name string } }
	if err := json.NewDecoder(resp.Body).Decode(&tags); err != nil {
		t.Fatal(err)
	}
	if len(tags.Models) != 2 || tags.Models[0].Name != "llama3.2:latest" || tags.Models[1].Name != "qwen3:latest" {
		t.Fatalf("tags %+v", tags)
	}
}
