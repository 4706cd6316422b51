// Package llmtest provides scripted language models for tests and for
// offline demos: [Model], an in-process llms.Model, and loopback HTTP
// servers that speak each provider's wire for langchaingo's real clients:
//
//   - [Server]: OpenAI chat completions (POST /v1/chat/completions);
//   - [AnthropicServer]: Anthropic's Messages API (POST /v1/messages);
//   - [GeminiServer]: Gemini's generateContent and streamGenerateContent;
//   - [OllamaServer]: Ollama's native API (POST /api/chat, NDJSON);
//   - [MistralServer]: Mistral's chat completions.
//
// All answer from a [Script] of [Reply] values and record every [Request]
// they receive, so tests can script tool calls, reasoning, streaming,
// usage, errors and delays, and then check exactly what the model was
// asked: the same scripts and the same recorded requests whatever the
// wire, the conversation being converted back to llms.MessageContent form
// (each server's doc says how its wire maps). The servers are strict: they
// check a request as the provider does and refuse what it refuses, with
// the provider's status, error body and error text, before the script
// sees it (rejected requests are not recorded;
// [Options.NoHistoryValidation] turns the conversation rules off). A test
// that passes against them does not fail at the provider for those rules.
// Every server has URL,
// Requests, Calls, Reset, HTTPClient, ModelName and Close, takes the same
// [Options], bounds request bodies to 8 MiB, answers
// deterministically (fixed ids, timestamps and durations), and plays
// [Reply.Status], [Reply.Err], [Reply.Disconnect], [Reply.Delay] and
// [Reply.ChunkDelay] the same way, in the provider's error format.
//
// Package llmclient (runtime/llmtest/llmclient) builds langchaingo's
// anthropic, googleai, ollama and mistral clients pointed at these
// servers. It is separate so that importing llmtest does not link every
// provider's client.
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
// Prompt caches: with [Options.PromptCache] a Model or server simulates its
// provider's prompt cache (OpenAI's and Gemini's automatic prefix caching,
// Anthropic's cache_control breakpoints, a TTL on an injectable clock) and
// reports what each request read from and wrote to it, in the usage of its
// wire and in [Request.Cache], so tests and benchmarks can measure what a
// conversation costs. Without it nothing is cached.
//
// Defects of langchaingo v0.1.14's other clients, pinned by this
// package's tests against the strict servers (what a runtime must work
// around): the anthropic client sends only Parts[0] of an AI or tool
// message, so text before a tool call, or two tool calls, in one AI
// message lose the tool_use and the API refuses the tool_result (one part
// per message passes, consecutive turns being combined); it always sends a
// temperature, which thinking refuses unless it is 1; it cannot send
// thinking blocks back, so a tool loop with thinking is refused; and
// streamed, it drops the thinking signature. The googleai client takes
// tool parameters only as map[string]any; sends each tool message as its
// own turn, so two results in two messages are refused (put them in one
// tool message); has no tool-call ids; and reports the output tokens of
// the first streamed chunk only (its SDK always streams), without thoughts.
// The ollama client never sends tools, drops tool calls from answers,
// cannot send tool calls or results, never reports a finish reason, and
// puts think in options, where Ollama ignores it. The mistral client sends
// tool results without tool_call_id and an AI message's text and tool
// call as two assistant messages, which Mistral refuses, and reports
// usage under GenerationInfo["usage"] as the SDK's struct.
//
// Quirks of langchaingo v0.1.14's OpenAI client, pinned by this package's
// tests: its streaming callback also receives empty chunks and JSON-encoded
// tool-call deltas (the Model never sends those); it cannot send two tool
// results in one tool message; and a deadline or cancellation comes back as
// a plain error ("request timeout: API call exceeded deadline", "request
// cancelled") that does not match context.DeadlineExceeded with errors.Is.
package llmtest
