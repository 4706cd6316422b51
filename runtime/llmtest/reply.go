package llmtest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Reply is one scripted answer of the model.
//
// The zero Reply is an empty text answer with StopReason "stop". A Reply is
// resolved by the [Model] or server that plays it: empty tool-call IDs
// become call_1, call_2, … (toolu_01, … on an [AnthropicServer], call00001,
// … on a [MistralServer]; numbered per Model or server across all its
// calls, so IDs never repeat within one conversation), an empty StopReason
// becomes "tool_calls" or "stop", and zero usage counts are estimated with
// [EstimateTextTokens] and [EstimatePromptTokens].
type Reply struct {
	// Text is the answer's content. When Chunks is set too, Text must equal
	// the concatenation of Chunks (or be empty).
	Text string
	// Chunks are the stream chunks of the content, in order. When empty, a
	// streamed Text is split into word-sized chunks (each ends after a run
	// of white space). Chunks never affect a non-streamed answer except that
	// their concatenation is its content when Text is empty.
	Chunks []string
	// ToolCalls are the tools the model asks to call, in order.
	ToolCalls []ToolCall
	// Reasoning is the model's reasoning ("thinking") text. It is returned
	// in ContentChoice.ReasoningContent and, when streaming, delivered
	// before the content: in-process through llms.WithStreamingReasoningFunc,
	// over the OpenAI wire as reasoning_content deltas. The other wires send
	// it as their provider does, and only when the request asks for it
	// ([Request.Thinking]): an Anthropic thinking block, Gemini thought
	// parts, Ollama's message.thinking; Mistral never sends it.
	Reasoning string
	// StopReason is the finish reason; by default "tool_calls" when there
	// are tool calls and "stop" otherwise.
	StopReason string
	// Usage is the token usage reported for this call. Each zero field is
	// estimated: PromptTokens from the request ([Request.PromptTokens]),
	// CompletionTokens from Text, Reasoning and the tool calls' names and
	// arguments.
	Usage Usage

	// Err makes the call fail. In-process, GenerateContent returns Err
	// itself; over HTTP the server answers 500 with its wire's error body
	// whose message is Err.Error(). When the request streams and the reply
	// also has Text or Chunks, the chunks are streamed first and then the
	// stream fails: in-process GenerateContent returns Err after the
	// streaming callbacks ran; over HTTP the server aborts the connection
	// after the last chunk, so the client sees a read error (an
	// [OllamaServer] sends an {"error"} line instead, as Ollama does).
	Err error
	// Status, when 400–599, makes the call fail with that HTTP status and
	// the wire's error body carrying ErrorMessage (default: Err's text, else the
	// status text). In-process the call returns a [*StatusError]. Status
	// takes precedence over Err and is reported before anything is streamed.
	Status int
	// ErrorMessage is the error message sent with Status.
	ErrorMessage string
	// RetryAfter, with Status, is the wait the server asks for before a
	// retry: over HTTP the headers Retry-After (whole seconds, rounded up)
	// and retry-after-ms (milliseconds, as OpenAI sends it); in-process
	// the [StatusError]'s RetryAfter.
	RetryAfter time.Duration
	// Disconnect makes the call fail with a transport error: over HTTP
	// the server drops the connection without answering (after the
	// Delay); in-process GenerateContent returns an error matching
	// [ErrDisconnected]. It takes precedence over Status and Err.
	Disconnect bool

	// Delay is how long to wait before answering (also before failing).
	// The wait ends early, with the context's error, when the caller's
	// context or the HTTP request is cancelled.
	Delay time.Duration
	// ChunkDelay is how long to wait before each streamed chunk after the
	// first; it lets tests cancel in the middle of a stream.
	ChunkDelay time.Duration
}

// ToolCall is a scripted tool call.
type ToolCall struct {
	// ID is the tool call id; when empty it is generated (call_1, call_2, …).
	ID string
	// Name is the name of the tool to call; it must not be empty.
	Name string
	// Arguments is the raw JSON text of the arguments; "{}" when empty.
	// It is passed on verbatim, so invalid JSON can be scripted to test
	// how a tool loop handles bad arguments; on the wires whose calls carry
	// a JSON object (Anthropic, Gemini, Ollama), arguments that are not
	// one are sent as {"invalid_arguments": Arguments}.
	Arguments string
}

// Usage is the token usage of one model call.
type Usage struct {
	// PromptTokens is the size of the prompt.
	PromptTokens int
	// CompletionTokens is the size of the answer.
	CompletionTokens int
	// CacheReadTokens is the part of PromptTokens read from a prompt
	// cache, and CacheWriteTokens the part written to it. When the script
	// leaves both 0, a Model or server with a simulated prompt cache
	// ([Options.PromptCache]) fills them in; without one they stay 0. Servers whose
	// wire reports cache use send them (Anthropic: cache_read_input_tokens
	// and cache_creation_input_tokens, input_tokens being the rest of
	// PromptTokens; Gemini: cachedContentTokenCount; OpenAI:
	// prompt_tokens_details.cached_tokens, and the in-process Model's
	// GenerationInfo["PromptCachedTokens"]).
	CacheReadTokens  int
	CacheWriteTokens int
}

// StatusError is the error the in-process [Model] returns for a [Reply]
// with a Status, and for a request the OpenAI API would reject with 400.
// Its text has the same shape as the error of langchaingo's OpenAI client
// for the same status.
type StatusError struct {
	// StatusCode is the HTTP status, e.g. 429.
	StatusCode int
	// Message is the error message the API would send.
	Message string
	// RetryAfter is the Reply's RetryAfter: the wait the server asked
	// for, zero when it did not.
	RetryAfter time.Duration
}

// Error implements error.
func (e *StatusError) Error() string {
	return fmt.Sprintf("llmtest: API returned unexpected status code: %d: %s", e.StatusCode, e.Message)
}

// resolved is a Reply ready to be played: defaults filled in and checked.
type resolved struct {
	Reply
	content         string
	chunks          []string
	reasoningChunks []string
	totalTokens     int
	reasoningTokens int
}

// failing reports whether the reply ends in a status error.
func (r *resolved) failing() bool { return r.Status != 0 }

// statusMessage is the error message sent with r.Status.
func (r *resolved) statusMessage() string {
	switch {
	case r.ErrorMessage != "":
		return r.ErrorMessage
	case r.Err != nil:
		return r.Err.Error()
	default:
		return http.StatusText(r.Status)
	}
}

// resolve checks reply and fills in its defaults. nextID numbers tool calls
// without an ID.
func resolve(req *Request, reply Reply, nextID func() string) (*resolved, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("llmtest: reply to request %d: %s", req.Index, fmt.Sprintf(format, args...))
	}
	if reply.Status != 0 && (reply.Status < 400 || reply.Status > 599) {
		return nil, bad("Status %d is not an error status (want 400–599, or 0)", reply.Status)
	}
	if reply.Delay < 0 || reply.ChunkDelay < 0 || reply.RetryAfter < 0 {
		return nil, bad("negative Delay, ChunkDelay or RetryAfter")
	}
	r := &resolved{Reply: reply}
	r.ToolCalls = make([]ToolCall, len(reply.ToolCalls))
	copy(r.ToolCalls, reply.ToolCalls)
	r.Chunks = append([]string(nil), reply.Chunks...)

	joined := strings.Join(r.Chunks, "")
	switch {
	case len(r.Chunks) == 0:
		r.content = r.Text
		r.chunks = splitWords(r.Text)
	case r.Text == "" || r.Text == joined:
		r.content = joined
		r.chunks = r.Chunks
	default:
		return nil, bad("Text %q does not equal the concatenation of Chunks %q", r.Text, joined)
	}
	r.reasoningChunks = splitWords(r.Reasoning)

	for i := range r.ToolCalls {
		tc := &r.ToolCalls[i]
		if tc.Name == "" {
			return nil, bad("tool call %d has no Name", i)
		}
		if tc.ID == "" {
			tc.ID = nextID()
		}
		if tc.Arguments == "" {
			tc.Arguments = "{}"
		}
	}
	if r.StopReason == "" {
		r.StopReason = "stop"
		if len(r.ToolCalls) > 0 {
			r.StopReason = "tool_calls"
		}
	}
	if r.Usage.PromptTokens == 0 {
		r.Usage.PromptTokens = req.PromptTokens
	}
	r.reasoningTokens = EstimateTextTokens(r.Reasoning)
	if r.Usage.CompletionTokens == 0 {
		n := EstimateTextTokens(r.content) + r.reasoningTokens
		for _, tc := range r.ToolCalls {
			n += EstimateTextTokens(tc.Name) + EstimateTextTokens(tc.Arguments)
		}
		r.Usage.CompletionTokens = n
	}
	r.totalTokens = r.Usage.PromptTokens + r.Usage.CompletionTokens
	return r, nil
}

// splitWords splits s into word-sized chunks, each ending after a run of
// white space; the chunks concatenate to s. An empty s has no chunks.
func splitWords(s string) []string {
	var chunks []string
	start := 0
	inSpace := false
	for i, c := range s {
		space := c == ' ' || c == '\n' || c == '\t' || c == '\r'
		if inSpace && !space {
			chunks = append(chunks, s[start:i])
			start = i
		}
		inSpace = space
	}
	if start < len(s) {
		chunks = append(chunks, s[start:])
	}
	return chunks
}

// argumentFragmentSize is the most bytes of tool-call arguments the server
// sends in one streamed delta.
const argumentFragmentSize = 8

// splitFragments splits s into pieces of at most argumentFragmentSize bytes,
// never inside a UTF-8 sequence. It never returns an empty piece: the
// OpenAI client would take an empty argument delta for a new tool call.
func splitFragments(s string) []string {
	var out []string
	for len(s) > 0 {
		n := min(argumentFragmentSize, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

// ErrDisconnected is the error of an in-process call whose [Reply] has
// Disconnect set: the connection was lost before an answer. It wraps
// io.ErrUnexpectedEOF, as a connection dropped mid-exchange does.
var ErrDisconnected = fmt.Errorf("llmtest: connection lost: %w", io.ErrUnexpectedEOF)

// errServerClosed ends a wait when the server shuts down.
var errServerClosed = errors.New("llmtest: server closed")
