package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// An Input chooses what the agent handed to sees of the conversation so
// far (the turns before the current user message, which it answers
// itself): the OpenAI Agents SDK's input filters. The zero Input is
// [All]. A turn is a user message and everything up to the next one.
type Input struct {
	kind      inputKind
	turns     int
	summarise Summarizer
}

type inputKind uint8

const (
	inputAll inputKind = iota
	inputNone
	inputLast
	inputSummary
)

// All gives the whole conversation so far, as the agent answering now saw
// it (its tool calls and results included).
func All() Input { return Input{kind: inputAll} }

// Nothing gives none of it: the agent handed to sees its own memory and
// the user message.
func Nothing() Input { return Input{kind: inputNone} }

// LastTurns gives the last n turns (n < 1 is 1).
func LastTurns(n int) Input {
	if n < 1 {
		n = 1
	}
	return Input{kind: inputLast, turns: n}
}

// Summary gives a summary of the conversation so far, written by
// summarise (a model call, see [ServiceSummarizer]), in the system message
// of the agent handed to. The summary's usage is in the hand-off's
// [Record], and, when a tool of an AI service's turn hands off, in that
// turn's Reply.Usage (see ai.AddUsage). A conversation with no turns yet
// is not summarised.
func Summary(summarise Summarizer) Input { return Input{kind: inputSummary, summarise: summarise} }

// A Summarizer summarises a conversation's transcript (one line per
// message, "user: …", "assistant: …", "tool …: …") for a hand-off, and
// returns the summary and the usage of its model calls.
type Summarizer func(ctx context.Context, transcript string) (string, ai.Usage, error)

// ErrNoSummarizer is the error of a hand-off whose [Summary] input has a
// nil Summarizer.
var ErrNoSummarizer = errors.New("summary input without a summarizer")

// DefaultSummaryPrompt is the system message of [ServiceSummarizer] given
// "".
const DefaultSummaryPrompt = "Summarise the conversation below for the agent taking it over: the user's needs, what was done and decided, and what is still open. Be brief."

// ServiceSummarizer returns a Summarizer that asks svc, in an invocation
// memory of its own (nothing of it stays), with system as its system
// message ("" means [DefaultSummaryPrompt]). The call is one of svc's: its
// hooks, retries, timeouts and telemetry apply.
func ServiceSummarizer(svc *ai.Service, system string) Summarizer {
	if system == "" {
		system = DefaultSummaryPrompt
	}
	method := &ai.Method{Name: "HandOffSummary", Kind: chat.KindInvocation, System: system}
	return func(ctx context.Context, transcript string) (string, ai.Usage, error) {
		ictx, end := chat.BeginInvocation(ctx)
		defer end()
		r, err := svc.Chat(ictx, &ai.Request{Method: method, User: transcript})
		if err != nil {
			return "", ai.Usage{}, err
		}
		return r.Content, r.Usage, nil
	}
}

// String names the input in a [Record].
func (in Input) String() string {
	switch in.kind {
	case inputNone:
		return "none"
	case inputLast:
		if in.turns == 1 {
			return "last turn"
		}
		return fmt.Sprintf("last %d turns", in.turns)
	case inputSummary:
		return "summary"
	}
	return "all"
}

// apply returns what the agent is given of source, and the record of the
// hand-off so far.
func (in Input) apply(ctx context.Context, source []Message) (*given, Record, error) {
	rec := Record{Input: in.String()}
	g := &given{}
	switch in.kind {
	case inputNone:
	case inputAll:
		g.Messages = source
		rec.Turns = countTurns(source)
	case inputLast:
		g.Messages = lastTurns(source, in.turns)
		rec.Turns = countTurns(g.Messages)
	case inputSummary:
		if in.summarise == nil {
			return nil, rec, ErrNoSummarizer
		}
		rec.Turns = countTurns(source)
		if rec.Turns == 0 {
			break
		}
		s, u, err := in.summarise(ctx, transcript(source))
		rec.Usage = u
		if err != nil {
			return nil, rec, fmt.Errorf("summarising the conversation: %w", err)
		}
		g.Summary = strings.TrimSpace(s)
	}
	return g, rec, nil
}

// countTurns counts the user messages of msgs.
func countTurns(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == roleHuman {
			n++
		}
	}
	return n
}

// lastTurns returns the last n turns of msgs: from its n-th last user
// message on.
func lastTurns(msgs []Message, n int) []Message {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == roleHuman {
			if n--; n == 0 {
				return msgs[i:]
			}
		}
	}
	return msgs
}

// transcript renders msgs one line each.
func transcript(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		switch m.Role {
		case roleHuman:
			fmt.Fprintf(&b, "user: %s\n", m.Text)
		case roleAI:
			if m.Text != "" {
				fmt.Fprintf(&b, "assistant: %s\n", m.Text)
			}
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "assistant calls %s(%s)\n", c.Name, c.Arguments)
			}
		case roleTool:
			if m.Result != nil {
				fmt.Fprintf(&b, "tool %s: %s\n", m.Result.Name, m.Result.Content)
			}
		}
	}
	return b.String()
}
