package llmtest_test

import (
	"context"
	"fmt"
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
// the package then fails without a failed test, and its log says why.
func TestMain(m *testing.M) {
	before := runtime.NumGoroutine()
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

// settleGoroutines waits until at most n goroutines run, or fails with the
// stacks of all goroutines.
func settleGoroutines(n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		if runtime.NumGoroutine() <= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("goroutines outlived them: %d running %v after the tests, %d before; the stacks of all goroutines:\n%s",
				runtime.NumGoroutine(), within, n, allStacks())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// allStacks returns the stacks of all goroutines, whole.
func allStacks() []byte {
	for size := 1 << 20; ; size *= 2 {
		buf := make([]byte, size)
		if n := runtime.Stack(buf, true); n < size {
			return buf[:n]
		}
	}
}

// human returns a user message.
func human(text string) llms.MessageContent {
	return llms.TextParts(llms.ChatMessageTypeHuman, text)
}

// newServer starts a server closed at the end of the test, and the real
// OpenAI client pointed at it.
func newServer(t *testing.T, script llmtest.Script, opts ...llmtest.Option) (*llmtest.Server, *openai.LLM) {
	t.Helper()
	srv := llmtest.NewServer(script, opts...)
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
