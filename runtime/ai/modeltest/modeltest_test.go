package modeltest_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/ai/modeltest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

var update = flag.Bool("update", false, "rewrite the matrix of docs/models.md")

// TestClients runs the suite against langchaingo's real clients, each
// against a loopback server that speaks its provider's wire, and checks
// the matrix of docs/models.md against the outcomes (-update rewrites it).
func TestClients(t *testing.T) {
	var table modeltest.Table
	for _, c := range providerClients() {
		t.Run(c.Name, func(t *testing.T) { table.Add(c.Name, modeltest.Run(t, c)) })
	}
	if t.Failed() {
		return
	}
	const doc, begin, end = "../../../docs/models.md", "<!-- BEGIN modeltest matrix -->\n", "<!-- END modeltest matrix -->"
	raw, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q block", doc, begin, end)
	}
	want := text[:i+len(begin)] + table.Markdown() + text[j:]
	if want == text {
		return
	}
	if *update {
		if err := os.WriteFile(doc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the matrix of %s is not what the suite measured; run go test ./runtime/ai/modeltest -run TestClients -update\nwant:\n%s", doc, table.Markdown())
}

// TestInProcess runs the suite against runtime/llmtest's in-process Model.
func TestInProcess(t *testing.T) {
	modeltest.Run(t, modeltest.Client{
		Name:     "llmtest.Model",
		Tools:    true,
		Thinking: true,
		New: func(t *testing.T, script llmtest.Script) (llms.Model, modeltest.Recorder) {
			m := llmtest.NewModel(script, nil)
			return m, m
		},
	})
}

// TestWithoutShaping shows the failures of the issue that the runtime's
// shaping answers: each client driven with ai.ClientOpenAI (the
// conversation sent as langchaingo models it, as before the runtime met
// each client) fails its check with the provider's or the client's error.
func TestWithoutShaping(t *testing.T) {
	clients := map[string]modeltest.Client{}
	for _, c := range providerClients() {
		c.Client = ai.ClientOpenAI
		clients[c.Name] = c
	}
	checks := map[string]modeltest.Check{}
	for _, ch := range modeltest.Checks() {
		checks[ch.Name] = ch
	}
	for _, tc := range []struct{ client, check, want string }{
		{"anthropic", "TextBeforeToolCall", "unexpected `tool_use_id` found in `tool_result` blocks"},
		{"anthropic", "ParallelToolCalls", "unexpected `tool_use_id` found in `tool_result` blocks"},
		{"googleai", "ToolCall", "unsupported type json.RawMessage of Parameters"},
		{"ollama", "Stream", ai.ErrIncompleteStream.Error()},
		{"mistral", "ToolCall", "Tool call id has to be defined."},
		// The client never offers the tools and drops the model's tool
		// calls: the user gets no answer, and nothing says why.
		{"ollama", "ToolCall", "0 answers, want 1"},
	} {
		t.Run(tc.client+"/"+tc.check, func(t *testing.T) {
			err := checks[tc.check].Run(t, clients[tc.client])
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("without shaping: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
