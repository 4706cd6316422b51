package ai

import (
	"context"
	"encoding/json"
	"math"
	"reflect"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// Reply is the outcome of one turn.
type Reply struct {
	// Content is the text of the model's last reply (for [OutputJSON]: the
	// JSON text, without a code fence). When the turn ended on immediate
	// tools it is that reply's text, often empty.
	Content string
	// Executions are the tool calls run during the turn, in order.
	Executions []ToolExecution
	// Usage sums the token usage of every model call of the turn, with
	// the extraction calls of a generic long-term memory
	// ([Config.LongTerm]) after it (which ModelCalls does not count).
	Usage Usage
	// FinishReason is the last model call's finish reason, as the provider
	// reports it ("stop", "tool_calls", "end_turn", …).
	FinishReason string
	// Immediate reports that the turn ended on immediate tools, with no
	// model call after them.
	Immediate bool
	// ModelCalls is the number of model calls of the turn.
	ModelCalls int
	// Sources are the passages the turn's retrievals gave the model (see
	// [Knowledge]), in the order they were retrieved.
	Sources []Source
}

// ToolExecution is one tool call the model made and its outcome.
type ToolExecution struct {
	// ID is the tool call's id, Name the tool's name and Arguments the raw
	// JSON arguments, as the model sent them.
	ID, Name, Arguments string
	// Result is the tool's Go result; nil when the call failed.
	Result any
	// Text is what the model was told: the result as text (a string as it
	// is, nil as "done", anything else as JSON) or "error: …".
	Text string
	// Err is why the call failed: an error wrapping [ErrUnknownTool], an
	// *[ArgumentsError], a *chat.PanicError, [ErrConfirmationDenied] for a
	// call the user did not confirm, or the tool's own error.
	Err error
	// Immediate reports that the tool is immediate.
	Immediate bool
	// Sent reports that Result reached the client as an event when the
	// tool returned ([Tool.Event]); [Result.Send] skips it.
	Sent bool
}

// Usage counts tokens.
//
// PromptTokens counts the whole prompt, its cached part included, with
// every client (Anthropic reports the uncached rest as input_tokens; the
// runtime adds the cache figures back). CacheReadTokens is the part of
// PromptTokens the provider read from its prompt cache, and
// CacheWriteTokens the part it wrote to it (only Anthropic reports
// writes); both are 0 with a client or provider that reports no caching.
// The uncached part is PromptTokens - CacheReadTokens - CacheWriteTokens.
type Usage struct {
	PromptTokens, CompletionTokens, TotalTokens int
	CacheReadTokens, CacheWriteTokens           int
}

// add adds v to u.
func (u *Usage) add(v Usage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.TotalTokens += v.TotalTokens
	u.CacheReadTokens += v.CacheReadTokens
	u.CacheWriteTokens += v.CacheWriteTokens
}

// count converts a token count of any integer (or float, or JSON number)
// type.
func count(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int32:
		return int(n), true
	case int64:
		return int(n), true
	case uint:
		return int(n), true
	case uint32:
		return int(n), true
	case uint64:
		return int(n), true
	case float64:
		if math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, false
		}
		return int(n), true
	case float32:
		return int(n), true
	case json.Number:
		i, err := n.Int64()
		return int(i), err == nil
	}
	return 0, false
}

// Result is what AI service methods returning ai.Result[T] get: the
// answer with what the turn did (the tool executions with their Go
// results, the token usage, the finish reason).
type Result[T any] struct {
	// Content is the answer: the text for Result[string], else the decoded
	// JSON. It is the zero value when the turn ended on immediate tools.
	Content T
	// Executions are the tool calls of the turn with their Go results.
	Executions []ToolExecution
	// Usage sums the token usage of the turn.
	Usage Usage
	// FinishReason is the last model call's finish reason.
	FinishReason string
}

// NewResult returns the Result of a turn whose answer is content. A nil r
// gives a Result with the content only.
func NewResult[T any](content T, r *Reply) Result[T] {
	res := Result[T]{Content: content}
	if r != nil {
		res.Executions = r.Executions
		res.Usage = r.Usage
		res.FinishReason = r.FinishReason
	}
	return res
}

// Result returns the Result of the turn whose answer is the reply's text,
// as AI service methods returning ai.Result[string] give it.
func (r *Reply) Result() Result[string] { return NewResult(r.Content, r) }

// Send sends the result as the events of a route returning it: the
// content, with chat.SendValue, when it is not the zero value; otherwise
// one event per tool execution whose Result is not nil and was not Sent
// already, in order (the immediate-tools pattern). It stops at the first
// error.
func (r Result[T]) Send(ctx context.Context) error {
	return r.SendText(ctx, nil)
}

// SendText is [Result.Send] with text sending the text values — a string
// Content and the string results of tools — in place of chat.SendValue;
// the other values go through chat.SendValue. Routes marked
// //chat:markdown pass markdown.Message, so that their text answers reach
// the client rendered. A nil text is chat.SendValue.
func (r Result[T]) SendText(ctx context.Context, text func(context.Context, string) error) error {
	if !reflect.ValueOf(&r.Content).Elem().IsZero() {
		if text != nil {
			if s, ok := any(r.Content).(string); ok {
				return text(ctx, s)
			}
		}
		return chat.SendValue(ctx, r.Content)
	}
	for i := range r.Executions {
		v := r.Executions[i].Result
		if v == nil || r.Executions[i].Sent {
			continue
		}
		var err error
		if s, ok := v.(string); ok && text != nil {
			err = text(ctx, s)
		} else {
			err = chat.SendValue(ctx, v)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
