package modeltest_test

import (
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai/modeltest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// TestOpenAI runs the suite against langchaingo's OpenAI client and the
// OpenAI-compatible llmtest.Server (which checks the conversation as the
// OpenAI API does).
func TestOpenAI(t *testing.T) {
	modeltest.Run(t, modeltest.Client{
		Name:     "openai",
		Tools:    true,
		Thinking: true,
		New: func(t *testing.T, script llmtest.Script) (llms.Model, modeltest.Recorder) {
			srv := llmtest.NewServer(script, llmtest.WithHistoryValidation(true))
			t.Cleanup(srv.Close)
			llm, err := srv.Client()
			if err != nil {
				t.Fatal(err)
			}
			return llm, srv
		},
	})
}

// TestInProcess runs the suite against runtime/llmtest's in-process Model.
func TestInProcess(t *testing.T) {
	modeltest.Run(t, modeltest.Client{
		Name:     "llmtest.Model",
		Tools:    true,
		Thinking: true,
		New: func(t *testing.T, script llmtest.Script) (llms.Model, modeltest.Recorder) {
			m := llmtest.NewModel(script, llmtest.WithHistoryValidation(true))
			return m, m
		},
	})
}
