package llmtest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// TestMain fails the run when goroutines started by the tests (server
// handlers, connections, stream readers) outlive them, and prints them:
// the package then fails without a failed test, and its log says why. The
// goroutines of gRPC are not counted: langchaingo's googleai client holds
// a generative-ai-go genai.Client, whose Close (genai/client.go, v0.15.1)
// leaves its gRPC cache client open, so every googleai client leaks them.
func TestMain(m *testing.M) {
	before := countGoroutines()
	code := m.Run()
	if code == 0 {
		// Generous: the goroutines of closed servers and clients end
		// soon, but a loaded machine may take long to run them.
		if err := settleGoroutines(before, 10*time.Second); err != nil {
			fmt.Fprintln(os.Stderr, "runtime/llmtest: TestMain: the tests passed, but", err)
			code = 1
		}
	}
	os.Exit(code)
}

// goroutineDump returns the stacks of all goroutines.
func goroutineDump() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// countGoroutines counts the goroutines that are not gRPC's.
func countGoroutines() int {
	n := 0
	for _, g := range strings.Split(goroutineDump(), "\n\n") {
		if strings.TrimSpace(g) != "" && !strings.Contains(g, "google.golang.org/grpc") {
			n++
		}
	}
	return n
}

// settleGoroutines waits until at most n goroutines other than gRPC's run,
// or fails with a dump of all goroutines.
func settleGoroutines(n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		got := countGoroutines()
		if got <= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("goroutines outlived them: %d (not counting gRPC's) running %v after the tests, %d before; the stacks of all goroutines:\n%s",
				got, within, n, goroutineDump())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// human returns a user message.
func human(text string) llms.MessageContent {
	return llms.TextParts(llms.ChatMessageTypeHuman, text)
}

// named returns a copy of opts (which may be nil) whose ModelName is name
// unless opts sets one.
func named(opts *llmtest.Options, name string) *llmtest.Options {
	var o llmtest.Options
	if opts != nil {
		o = *opts
	}
	if o.ModelName == "" {
		o.ModelName = name
	}
	return &o
}

// newServer starts a server closed at the end of the test, and the real
// OpenAI client pointed at it.
func newServer(t *testing.T, script llmtest.Script, opts *llmtest.Options) (*llmtest.Server, *openai.LLM) {
	t.Helper()
	srv := llmtest.NewServer(script, opts)
	t.Cleanup(srv.Close)
	llm, err := srv.Client()
	if err != nil {
		t.Fatalf("Client: %v", err)
	}
	return srv, llm
}

// recorder collects streamed chunks.
type recorder struct {
	mu     sync.Mutex
	chunks []string
}

// fn is a streaming func recording every chunk.
func (r *recorder) fn(_ context.Context, chunk []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.chunks = append(r.chunks, string(chunk))
	return nil
}

// got returns the recorded chunks.
func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.chunks...)
}

// nonEmpty returns the non-empty strings of s.
func nonEmpty(s []string) []string {
	var out []string
	for _, c := range s {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}

// mustContain fails the test unless err's text contains every want.
func mustContain(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not contain %q", err, w)
		}
	}
}

// choice0 returns the only choice of resp.
func choice0(t *testing.T, resp *llms.ContentResponse, err error) *llms.ContentChoice {
	t.Helper()
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	if len(resp.Choices) != 1 {
		t.Fatalf("got %d choices, want 1", len(resp.Choices))
	}
	return resp.Choices[0]
}

// weatherTool is a tool definition used by the tests.
var weatherTool = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name:        "weather",
	Description: "Current weather of a city.",
	Parameters: map[string]any{
		"type":       "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required":   []any{"city"},
	},
}}

// timeTool is a second tool definition.
var timeTool = llms.Tool{Type: "function", Function: &llms.FunctionDefinition{
	Name:        "time",
	Description: "Current time in a time zone.",
	Parameters:  map[string]any{"type": "object", "properties": map[string]any{"tz": map[string]any{"type": "string"}}},
}}

// rawPost posts body to url with the given headers (name, value pairs) and
// returns the status and the response body.
func rawPost(t *testing.T, client *http.Client, url, body string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp.StatusCode, string(b)
}

// aiMsg returns an AI message holding the given parts.
func aiMsg(parts ...llms.ContentPart) llms.MessageContent {
	return llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: parts}
}

// toolResultMsg returns a tool message answering the call id.
func toolResultMsg(id, name, content string) llms.MessageContent {
	return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: id, Name: name, Content: content},
	}}
}

// textPart returns a text part.
func textPart(s string) llms.TextContent { return llms.TextContent{Text: s} }
