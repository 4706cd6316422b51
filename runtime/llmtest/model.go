package llmtest

import (
	"context"
	"fmt"

	"github.com/tmc/langchaingo/llms"
)

// Model is an in-process llms.Model that answers from a [Script].
//
// It behaves like a well-behaved provider: llms.WithStreamingFunc receives
// the content's text chunks only (never tool-call fragments or empty
// chunks), llms.WithStreamingReasoningFunc receives reasoning chunks as
// (chunk, nil) and then each text chunk as (nil, chunk); tool calls come in
// ContentChoice.ToolCalls with Type "function" (the first also in FuncCall,
// as the OpenAI provider does); usage is in GenerationInfo under the same
// keys, with the same int values, as langchaingo's OpenAI provider sets
// ("PromptTokens", "CompletionTokens", "TotalTokens", …).
//
// Like the OpenAI provider it rejects a tool message that does not hold
// exactly one llms.ToolCallResponse, and (see [Options.NoHistoryValidation]) a
// conversation the OpenAI API would reject.
//
// A Model is safe for concurrent use.
type Model struct {
	cfg config
	eng engine
}

var _ llms.Model = (*Model)(nil)

// NewModel returns a Model answering from script.
func NewModel(script Script, opts *Options) *Model {
	cfg := newConfig(opts)
	return &Model{cfg: cfg, eng: engine{script: script, cache: newPromptCache(cfg.cache, CacheRulesOpenAI)}}
}

// Call answers a single prompt, through llms.GenerateFromSinglePrompt.
//
// Deprecated: use GenerateContent; Call exists because llms.Model has it.
func (m *Model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// GenerateContent records the request, asks the script for a reply and
// plays it: it waits for Reply.Delay, fails as the reply says, streams the
// reply when a streaming option is set, and returns one choice.
// Cancelling ctx ends any wait at once with ctx.Err().
func (m *Model) GenerateContent(ctx context.Context, messages []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var opts llms.CallOptions
	for _, o := range options {
		o(&opts)
	}
	if err := checkParts(messages); err != nil {
		return nil, err
	}
	if m.cfg.validate {
		if msg := validateHistory(messages); msg != "" {
			return nil, &StatusError{StatusCode: 400, Message: msg}
		}
	}

	req := &Request{
		Model:      opts.Model,
		Messages:   cloneMessages(messages),
		Tools:      append([]llms.Tool(nil), opts.Tools...),
		ToolChoice: opts.ToolChoice,
		Stream:     opts.StreamingFunc != nil || opts.StreamingReasoningFunc != nil,
		JSONMode:   opts.JSONMode,
		MaxTokens:  opts.MaxTokens,
	}
	if req.Model == "" {
		req.Model = m.cfg.name
	}
	for _, f := range opts.Functions {
		req.Tools = append(req.Tools, llms.Tool{Type: "function", Function: &f})
	}
	if len(req.Tools) == 0 {
		req.Tools = nil
	}
	req.PromptTokens = EstimatePromptTokens(req.Messages, req.Tools)

	r, err := m.eng.play(req, nil)
	if err != nil {
		return nil, err
	}
	if err := wait(ctx, r.Delay, nil); err != nil {
		return nil, err
	}
	if r.Disconnect {
		return nil, ErrDisconnected
	}
	if r.failing() {
		return nil, &StatusError{StatusCode: r.Status, Message: r.statusMessage(), RetryAfter: r.RetryAfter}
	}
	if r.Err != nil && !req.Stream {
		return nil, r.Err
	}
	if req.Stream {
		if err := stream(ctx, r, opts); err != nil {
			return nil, err
		}
		if r.Err != nil {
			return nil, r.Err
		}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{choice(r)}}, nil
}

// stream delivers r's reasoning and text chunks to the streaming callbacks.
func stream(ctx context.Context, r *resolved, opts llms.CallOptions) error {
	n := 0
	pause := func() error {
		n++
		if n > 1 {
			return wait(ctx, r.ChunkDelay, nil)
		}
		return ctx.Err()
	}
	if opts.StreamingReasoningFunc != nil {
		for _, c := range r.reasoningChunks {
			if err := pause(); err != nil {
				return err
			}
			if err := opts.StreamingReasoningFunc(ctx, []byte(c), nil); err != nil {
				return fmt.Errorf("llmtest: streaming reasoning func: %w", err)
			}
		}
	}
	for _, c := range r.chunks {
		if c == "" {
			continue
		}
		if err := pause(); err != nil {
			return err
		}
		if opts.StreamingFunc != nil {
			if err := opts.StreamingFunc(ctx, []byte(c)); err != nil {
				return fmt.Errorf("llmtest: streaming func: %w", err)
			}
		}
		if opts.StreamingReasoningFunc != nil {
			if err := opts.StreamingReasoningFunc(ctx, nil, []byte(c)); err != nil {
				return fmt.Errorf("llmtest: streaming reasoning func: %w", err)
			}
		}
	}
	return nil
}

// choice builds the content choice of r, shaped as the OpenAI provider
// shapes it.
func choice(r *resolved) *llms.ContentChoice {
	c := &llms.ContentChoice{
		Content:          r.content,
		ReasoningContent: r.Reasoning,
		StopReason:       r.StopReason,
		GenerationInfo:   generationInfo(r),
	}
	for _, tc := range r.ToolCalls {
		c.ToolCalls = append(c.ToolCalls, llms.ToolCall{
			ID:           tc.ID,
			Type:         "function",
			FunctionCall: &llms.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	if len(c.ToolCalls) > 0 {
		c.FuncCall = c.ToolCalls[0].FunctionCall
	}
	return c
}

// generationInfo returns the GenerationInfo of r with the keys and value
// types of langchaingo's OpenAI provider (llms/openai/openaillm.go).
func generationInfo(r *resolved) map[string]any {
	return map[string]any{
		"CompletionTokens":                   r.Usage.CompletionTokens,
		"PromptTokens":                       r.Usage.PromptTokens,
		"TotalTokens":                        r.totalTokens,
		"ReasoningTokens":                    r.reasoningTokens,
		"PromptAudioTokens":                  0,
		"ThinkingContent":                    r.Reasoning,
		"ThinkingTokens":                     r.reasoningTokens,
		"PromptCachedTokens":                 r.Usage.CacheReadTokens,
		"CompletionAudioTokens":              0,
		"CompletionReasoningTokens":          r.reasoningTokens,
		"CompletionAcceptedPredictionTokens": 0,
		"CompletionRejectedPredictionTokens": 0,
	}
}

// checkParts rejects messages langchaingo's OpenAI provider rejects before
// sending: unknown roles, and tool messages without exactly one
// llms.ToolCallResponse part.
func checkParts(messages []llms.MessageContent) error {
	for i, m := range messages {
		switch m.Role {
		case llms.ChatMessageTypeSystem, llms.ChatMessageTypeAI, llms.ChatMessageTypeHuman,
			llms.ChatMessageTypeGeneric, llms.ChatMessageTypeFunction:
		case llms.ChatMessageTypeTool:
			if len(m.Parts) != 1 {
				return fmt.Errorf("llmtest: messages[%d]: expected exactly one part for role tool, got %d", i, len(m.Parts))
			}
			if _, ok := m.Parts[0].(llms.ToolCallResponse); !ok {
				return fmt.Errorf("llmtest: messages[%d]: expected part of type ToolCallResponse for role tool, got %T", i, m.Parts[0])
			}
		default:
			return fmt.Errorf("llmtest: messages[%d]: role %v not supported", i, m.Role)
		}
	}
	return nil
}

// Requests returns a copy of the requests recorded so far, in call order.
func (m *Model) Requests() []Request { return m.eng.recorded() }

// Calls returns the number of requests recorded so far.
func (m *Model) Calls() int { return m.eng.calls() }

// Reset forgets the recorded requests, restarts generated tool-call ids at
// call_1 and rewinds the script if it has a Reset method (as a
// [SequenceScript] has).
func (m *Model) Reset() { m.eng.reset() }
