// Package llmtest provides scripted language models for tests and for
// offline demos: [Model], an in-process llms.Model, and [Server], an
// OpenAI-compatible HTTP server for langchaingo's real OpenAI client. Both
// answer from a [Script] of [Reply] values and record every [Request] they
// receive, so tests can script tool calls, streaming, usage, errors and
// delays, and then check exactly what the model was asked.
//
// Scripts: [Sequence] plays replies in order; [Rules] answers with the
// first matching [Rule] (see [When], [LastUserContains], [AfterToolResult]),
// which suits an offline demo; [ScriptFunc] is anything else.
//
// Using the real OpenAI client against a Server:
//
//	srv := llmtest.NewServer(llmtest.Sequence(
//		llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}},
//		llmtest.Reply{Text: "It is sunny in Paris."},
//	))
//	defer srv.Close()
//	llm, err := srv.Client() // or openai.New(openai.WithBaseURL(srv.URL), openai.WithToken("test"))
//	...
//	resp, err := llm.GenerateContent(ctx, msgs, llms.WithTools(tools))
//	// resp.Choices[0].ToolCalls[0]: ID "call_1", name "weather"
//	srv.Requests()[0].Tools // what the model was offered
//
// The in-process Model is used the same way: llmtest.NewModel(script).
//
// Token counts are estimated, never counted with a real tokenizer, so they
// are deterministic and comparable: one token per 4 bytes of what a provider
// bills (see [EstimatePromptTokens], [EstimateBilledTokens] and
// [EstimateTextTokens]), the rule of runtime/memory's default estimator.
//
// Quirks of langchaingo v0.1.14's OpenAI client, pinned by this package's
// tests: its streaming callback also receives empty chunks and JSON-encoded
// tool-call deltas (the Model never sends those); it cannot send two tool
// results in one tool message; and a deadline or cancellation comes back as
// a plain error ("request timeout: API call exceeded deadline", "request
// cancelled") that does not match context.DeadlineExceeded with errors.Is.
package llmtest
