package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// SummaryPrefix starts the text of the summary message of a [Compressing]
// memory. The summary message is a human message with one text part,
// SummaryPrefix followed by the summary; it is what the memory stores
// (right after the system message, so it survives a restart with any
// store) and what the model is sent, where the prefix tells the model what
// the message is.
const SummaryPrefix = "[Summary of the earlier conversation, which replaces its older messages]\n"

// SummaryText reports whether msg is the summary message of a
// [Compressing] memory and returns the summary without [SummaryPrefix].
// User interfaces that show a memory's messages can use it to render the
// summary apart; tokenizers, to count it apart.
//
// Only the first message after the system message is taken as a summary
// when a memory loads its list, so an ordinary message that happens to
// start with SummaryPrefix is a summary only there: a user message typed
// with the prefix, as the first message of a memory without a summary,
// is taken for the summary after a restart. The model is sent the same
// messages and nothing is lost, but the Summarizer gets that text as the
// summary to update; applications that must rule it out strip the prefix
// from user input.
func SummaryText(msg llms.MessageContent) (string, bool) {
	if msg.Role != llms.ChatMessageTypeHuman || len(msg.Parts) != 1 {
		return "", false
	}
	t, ok := derefPart(msg.Parts[0]).(llms.TextContent)
	if !ok {
		return "", false
	}
	return strings.CutPrefix(t.Text, SummaryPrefix)
}

// summaryMessage returns the summary message of text.
func summaryMessage(text string) llms.MessageContent {
	return llms.TextParts(llms.ChatMessageTypeHuman, SummaryPrefix+text)
}

// A Summarizer writes the summary of a [Compressing] memory. It must honour
// ctx (the memory gives each call a deadline) and be safe for concurrent
// use: one Summarizer serves every memory of a policy.
type Summarizer interface {
	// Summarize returns the new summary: req.Previous updated with what
	// req.Messages add. An error, or a panic, leaves the memory as it was
	// before the messages were to be summarised (see [Compressing]).
	Summarize(ctx context.Context, req SummaryRequest) (string, error)
}

// A SummaryRequest is what a [Summarizer] folds into a summary.
type SummaryRequest struct {
	// Previous is the current summary; "" when there is none yet.
	Previous string
	// Messages are the oldest messages of the memory, oldest first, that
	// the new summary replaces: whole turns (a user message and every
	// message up to the next one), so never an AI message calling tools
	// without the tool results that follow it; never the system message,
	// and never the newest turn (the current one).
	Messages []llms.MessageContent
	// MaxTokens is the size the summary should keep within, counted by
	// the memory's tokenizer ([CompressOptions.SummaryTokens]).
	MaxTokens int
	// Conversation is the whole conversation when the compression starts,
	// oldest first: the system message, the summary message (when there is
	// one), the messages the memory holds, and the messages of the Add in
	// progress (the turn being added). Messages are its oldest messages
	// after the summary. Most of it is the prompt the chat model was just
	// sent: a summarizer that sends it first, as the chat did, is served
	// by the provider's prompt cache (see
	// [ModelSummarizerOptions.ReuseConversation]). It is filled in only
	// for a [ConversationSummarizer] that wants it (it costs a copy of the
	// memory); nil otherwise.
	Conversation []llms.MessageContent
	// Append asks for a segment instead of the whole new summary: the
	// memory appends the text returned to Previous
	// ([CompressOptions.AppendSummaries]), so it should hold only what
	// Messages add, without repeating Previous (which is there for
	// context). MaxTokens is then the segment's budget.
	Append bool
}

// A ConversationSummarizer is a [Summarizer] that may read
// [SummaryRequest.Conversation]: a [Compressing] memory fills it in when
// WantsConversation returns true.
type ConversationSummarizer interface {
	Summarizer
	// WantsConversation reports whether Summarize reads the conversation.
	WantsConversation() bool
}

// SummarizerFunc adapts a function to a [Summarizer].
type SummarizerFunc func(ctx context.Context, req SummaryRequest) (string, error)

// Summarize returns f(ctx, req).
func (f SummarizerFunc) Summarize(ctx context.Context, req SummaryRequest) (string, error) {
	return f(ctx, req)
}

// ErrEmptySummary is returned by [ModelSummarizer.Summarize] when the model
// answers with no text.
var ErrEmptySummary = errors.New("memory: the model wrote an empty summary")

// DefaultSummaryInstructions is the system message of a [ModelSummarizer]
// with no Instructions of its own.
const DefaultSummaryInstructions = "You keep the running summary of a conversation between a user and an assistant. " +
	"You are given the current summary and the oldest messages of the conversation, which are about to be " +
	"replaced by the summary. Write the new summary: the current one updated with what those messages add. " +
	"Keep every fact the conversation may need later (names, numbers, dates, choices, preferences, promises, " +
	"open questions, what tools were used for and what they returned) and drop small talk and repetition. " +
	"Answer with the summary only, in plain text, without a preamble."

// ModelSummarizer is a [Summarizer] that asks a language model: the AI
// service's own model, or a cheaper one. Create one with
// [NewModelSummarizer].
//
// The model gets a system message (the instructions) and one user message
// holding the current summary, the messages to fold in as a transcript
// ("User: …", "Assistant: …", "Assistant called tool f with {…}",
// "Tool f returned: …"), and the size to keep within. Tool calls are sent
// as text, not as tool messages, so any model can summarise them and no
// tool definitions are needed.
//
// With [ModelSummarizerOptions.ReuseConversation], it sends instead the
// conversation as the chat model was sent it ([SummaryRequest.Conversation])
// followed by one user message with the instructions
// ([ConversationSummaryPrompt]), so that the provider's prompt cache
// serves all of it but the instructions.
type ModelSummarizer struct {
	model        llms.Model
	instructions string
	options      []llms.CallOption
	transcript   []llms.CallOption // options then TranscriptCallOptions
	reuse        bool
	cache        *llms.CacheControl
}

// ModelSummarizerOptions configures a [ModelSummarizer].
type ModelSummarizerOptions struct {
	// Instructions is the system message; "" means
	// [DefaultSummaryInstructions].
	Instructions string
	// CallOptions are passed to every model call, for example
	// llms.WithModel to pick a small model, or llms.WithTemperature.
	CallOptions []llms.CallOption
	// ReuseConversation sends the conversation as the chat model was sent
	// it, then the instructions as the last user message, instead of a
	// transcript under the instructions as the system message. The chat
	// model's prompt is then a prefix of the summarizer's, and a provider
	// that caches prompts (OpenAI and Gemini automatically, Anthropic at
	// its breakpoints: see CacheControl) bills it at its cached price: use
	// it with the AI service's own model. With tools, pass the same tool
	// definitions in CallOptions, or the prefix differs (providers read
	// the tools first).
	ReuseConversation bool
	// CacheControl, with ReuseConversation, marks the last part of the
	// conversation's last user message with it (llms.CachedContent; with
	// langchaingo's anthropic client, anthropic.EphemeralCache()): the
	// breakpoint the AI service's Anthropic requests carry there, so that
	// Anthropic reads the conversation from its cache. Nil marks nothing
	// (what any other client wants).
	CacheControl *llms.CacheControl
	// TranscriptCallOptions are passed after CallOptions to the calls
	// that send a transcript, not the conversation: all of them without
	// ReuseConversation, else those of a request without a conversation
	// (a [Compressing] memory's fold before a request the cache has
	// expired for). No cache serves those, so a cheaper model may write
	// them (llms.WithModel("claude-haiku-4-5") beside a Sonnet service):
	// set [CompressOptions.SummarizerCosts] to its prices.
	TranscriptCallOptions []llms.CallOption
}

var _ ConversationSummarizer = (*ModelSummarizer)(nil)

// WantsConversation implements [ConversationSummarizer]: it reports
// whether the summarizer was made with ReuseConversation.
func (s *ModelSummarizer) WantsConversation() bool { return s.reuse }

// NewModelSummarizer returns a ModelSummarizer asking model. opts may be
// nil.
func NewModelSummarizer(model llms.Model, opts *ModelSummarizerOptions) *ModelSummarizer {
	s := &ModelSummarizer{model: model, instructions: DefaultSummaryInstructions}
	if opts != nil {
		if opts.Instructions != "" {
			s.instructions = opts.Instructions
		}
		s.options = append([]llms.CallOption(nil), opts.CallOptions...)
		s.reuse, s.cache = opts.ReuseConversation, opts.CacheControl
		if len(opts.TranscriptCallOptions) > 0 {
			s.transcript = append(slices.Clone(s.options), opts.TranscriptCallOptions...)
		}
	}
	return s
}

// Summarize implements [Summarizer]: one model call. It fails with the
// model's error, or with [ErrEmptySummary] when the answer has no text.
func (s *ModelSummarizer) Summarize(ctx context.Context, req SummaryRequest) (string, error) {
	if s.model == nil {
		return "", fmt.Errorf("%w: ModelSummarizer without a model", ErrInvalid)
	}
	prompt := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, s.instructions),
		llms.TextParts(llms.ChatMessageTypeHuman, SummaryPrompt(req)),
	}
	options := s.options
	if s.reuse && len(req.Conversation) > 0 {
		prompt = s.conversationPrompt(req)
	} else if s.transcript != nil {
		options = s.transcript
	}
	resp, err := s.model.GenerateContent(ctx, prompt, options...)
	if err != nil {
		return "", fmt.Errorf("memory: summarizing: %w", err)
	}
	if resp == nil || len(resp.Choices) == 0 || resp.Choices[0] == nil {
		return "", ErrEmptySummary
	}
	if report, ok := ctx.Value(summaryUsageKey{}).(func(map[string]any)); ok && report != nil {
		report(resp.Choices[0].GenerationInfo)
	}
	text := strings.TrimSpace(resp.Choices[0].Content)
	if text == "" {
		return "", ErrEmptySummary
	}
	return text, nil
}

// conversationPrompt returns the prompt of req with ReuseConversation: the
// conversation, its last user message marked with the cache control, then
// the instructions.
func (s *ModelSummarizer) conversationPrompt(req SummaryRequest) []llms.MessageContent {
	prompt := make([]llms.MessageContent, 0, len(req.Conversation)+1)
	prompt = append(prompt, req.Conversation...)
	if s.cache != nil {
		for i := len(prompt) - 1; i >= 0; i-- {
			m := prompt[i]
			if m.Role != llms.ChatMessageTypeHuman || len(m.Parts) == 0 {
				continue
			}
			last := m.Parts[len(m.Parts)-1]
			if t, ok := last.(llms.TextContent); ok && t.Text != "" {
				parts := slices.Clone(m.Parts)
				parts[len(parts)-1] = llms.CachedContent{ContentPart: last, CacheControl: s.cache}
				prompt[i].Parts = parts
			}
			break
		}
	}
	return append(prompt, llms.TextParts(llms.ChatMessageTypeHuman, s.instructions+"\n\n"+ConversationSummaryPrompt(req)))
}

// summaryUsageKey is the context key of WithSummaryUsage.
type summaryUsageKey struct{}

// WithSummaryUsage returns a copy of ctx carrying report: a
// [ModelSummarizer] called with it, or with a context derived from it (a
// [Compressing] memory's Add and Messages pass theirs to the Summarizer),
// calls report with the GenerationInfo of each answer it gets, where
// langchaingo's clients put the call's token usage. An AI service passes
// one to its memory, so that the turn's usage counts the summarizer's
// calls too. report is called on the goroutine that called Summarize.
func WithSummaryUsage(ctx context.Context, report func(info map[string]any)) context.Context {
	return context.WithValue(ctx, summaryUsageKey{}, report)
}

// A SummarizingMemory is a [Memory] whose Add or Messages may call a
// [Summarizer] (a [Compressing] memory). Memories of an application that
// call a ModelSummarizer implement it, to have their summarizer's usage
// counted in the AI service's turns.
type SummarizingMemory interface {
	Memory
	// MaySummarize reports whether Add or Messages may call a
	// Summarizer.
	MaySummarize() bool
}

// MaySummarize reports whether m's Add or Messages may call a
// [Summarizer]: m is a [SummarizingMemory] that says so. Only then is a
// [WithSummaryUsage] context worth making (it allocates).
func MaySummarize(m Memory) bool {
	s, ok := m.(SummarizingMemory)
	return ok && s.MaySummarize()
}

// ConversationSummaryPrompt returns the request a [ModelSummarizer] with
// ReuseConversation sends after the conversation, under its instructions:
// which messages to fold into the summary, and the size to keep within.
func ConversationSummaryPrompt(req SummaryRequest) string {
	var b strings.Builder
	b.WriteString("The messages above are the conversation so far. ")
	if req.Previous == "" {
		b.WriteString("It has no summary yet: the current summary is empty. ")
	} else {
		b.WriteString("Its first user message is the current summary. ")
	}
	if req.Append {
		fmt.Fprintf(&b, "Summarise the %d oldest messages after it, which the summary is about to replace, and nothing newer. ", len(req.Messages))
		writeAppendRequest(&b, req.MaxTokens)
		return b.String()
	}
	fmt.Fprintf(&b, "Fold into the summary the %d oldest messages after it, which it is about to replace, and nothing newer. ", len(req.Messages))
	writeSizeRequest(&b, req.MaxTokens)
	return b.String()
}

// writeSizeRequest asks for the updated summary, in at most the words of
// maxTokens tokens when it is positive.
func writeSizeRequest(b *strings.Builder, maxTokens int) {
	if maxTokens > 0 {
		// One token is about three quarters of an English word.
		fmt.Fprintf(b, "Write the updated summary in at most %d words.", max(1, maxTokens*3/4))
	} else {
		b.WriteString("Write the updated summary.")
	}
}

// AppendInstruction is what a [ModelSummarizer] asks for when the memory
// appends its answer to the current summary ([SummaryRequest.Append]).
const AppendInstruction = "Write only what they add to the current summary, without repeating it: your answer is appended to it."

// writeAppendRequest asks for a segment to append to the summary, in at
// most the words of maxTokens tokens when it is positive.
func writeAppendRequest(b *strings.Builder, maxTokens int) {
	b.WriteString(AppendInstruction)
	if maxTokens > 0 {
		fmt.Fprintf(b, " Write it in at most %d words.", max(1, maxTokens*3/4))
	}
}

// SummaryPrompt returns the user message a [ModelSummarizer] sends for
// req: the current summary, the transcript of req.Messages and the size to
// keep within. Summarizers of other kinds may reuse it.
func SummaryPrompt(req SummaryRequest) string {
	var b strings.Builder
	b.WriteString("Current summary:\n")
	if req.Previous == "" {
		b.WriteString("(none yet)\n")
	} else {
		b.WriteString(req.Previous)
		b.WriteString("\n")
	}
	b.WriteString("\nMessages to fold into it, oldest first:\n")
	for _, m := range req.Messages {
		writeTranscript(&b, m)
	}
	b.WriteString("\n")
	if req.Append {
		writeAppendRequest(&b, req.MaxTokens)
	} else {
		writeSizeRequest(&b, req.MaxTokens)
	}
	return b.String()
}

// writeTranscript writes one line per part of m.
func writeTranscript(b *strings.Builder, m llms.MessageContent) {
	speaker := "User"
	switch m.Role {
	case llms.ChatMessageTypeAI:
		speaker = "Assistant"
	case llms.ChatMessageTypeSystem:
		speaker = "System"
	case llms.ChatMessageTypeTool, llms.ChatMessageTypeFunction:
		speaker = "Tool"
	}
	for _, p := range m.Parts {
		switch p := derefPart(p).(type) {
		case llms.TextContent:
			fmt.Fprintf(b, "%s: %s\n", speaker, p.Text)
		case llms.ToolCall:
			if p.FunctionCall != nil {
				fmt.Fprintf(b, "%s called tool %s with %s\n", speaker, p.FunctionCall.Name, p.FunctionCall.Arguments)
			}
		case llms.ToolCallResponse:
			fmt.Fprintf(b, "Tool %s returned: %s\n", p.Name, p.Content)
		case llms.ImageURLContent:
			fmt.Fprintf(b, "%s: [an image]\n", speaker)
		case llms.BinaryContent:
			fmt.Fprintf(b, "%s: [%s data, %d bytes]\n", speaker, p.MIMEType, len(p.Data))
		case llms.CachedContent:
			writeTranscript(b, llms.MessageContent{Role: m.Role, Parts: []llms.ContentPart{p.ContentPart}})
		}
	}
}
