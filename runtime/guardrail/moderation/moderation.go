// Package moderation is a guardrail that refuses harmful text: the user's
// messages (as an input guardrail) and the model's answers (as an output
// guardrail). It asks a [Moderator]: a [Classifier], a classifier prompt
// over any langchaingo llms.Model, or [OpenAI], OpenAI's /v1/moderations
// endpoint (or any server speaking it).
//
//	mod := moderation.New(moderation.NewOpenAI(&moderation.OpenAIOptions{APIKey: key}), nil)
//	cfg := ai.Config{Guardrails: &guardrail.Set{
//		Input:  []guardrail.InputGuardrail{mod},
//		Output: []guardrail.OutputGuardrail{mod},
//	}}
//
// A flagged text fails the request (guardrail.OutcomeFail: the user is
// told [Options.Message], the turn is not remembered); a moderator that
// cannot answer fails it too (guardrail.OutcomeFatal): the guardrail
// fails closed.
package moderation

import (
	"context"
	"errors"
	"strings"

	"github.com/chatscopes/chatgen/runtime/guardrail"
)

// A Verdict is a moderator's judgement of a text.
type Verdict struct {
	// Flagged reports that the text is harmful.
	Flagged bool
	// Categories are the categories the text was flagged for, in the
	// moderator's order.
	Categories []string
	// Scores are the moderator's scores by category, when it gives any
	// (OpenAI does; a Classifier does not).
	Scores map[string]float64
}

// A Moderator judges texts. It must honour ctx and be safe for
// concurrent use.
type Moderator interface {
	Moderate(ctx context.Context, text string) (Verdict, error)
}

// DefaultMessage is what the user is told of a flagged text when
// [Options.Message] is "".
const DefaultMessage = "Sorry, I can't help with that."

// Options configure a [Guardrail]; nil or the zero value uses the
// defaults.
type Options struct {
	// Message is what the user is told when a text is flagged; ""
	// means [DefaultMessage].
	Message string
}

// FlaggedError is the cause of a flagged text's failure: the categories,
// never the text.
type FlaggedError struct {
	Categories []string
}

// Error implements error.
func (e *FlaggedError) Error() string {
	if len(e.Categories) == 0 {
		return "flagged by moderation"
	}
	return "flagged by moderation: " + strings.Join(e.Categories, ", ")
}

// ErrFlagged is matched (errors.Is) by every *[FlaggedError].
var ErrFlagged = errors.New("flagged by moderation")

// Is reports whether target is [ErrFlagged].
func (e *FlaggedError) Is(target error) bool { return target == ErrFlagged }

// Guardrail is the moderation guardrail: an input and an output guardrail.
type Guardrail struct {
	m       Moderator
	message string
}

// New returns the guardrail asking m, configured by opts.
func New(m Moderator, opts *Options) *Guardrail {
	g := &Guardrail{m: m, message: DefaultMessage}
	if opts != nil && opts.Message != "" {
		g.message = opts.Message
	}
	return g
}

// GuardrailName returns "moderation".
func (g *Guardrail) GuardrailName() string { return "moderation" }

// CheckInput judges the user message.
func (g *Guardrail) CheckInput(ctx context.Context, in *guardrail.Input) guardrail.Result {
	return g.check(ctx, in.Text)
}

// CheckOutput judges the model's answer.
func (g *Guardrail) CheckOutput(ctx context.Context, out *guardrail.Output) guardrail.Result {
	return g.check(ctx, out.Text)
}

func (g *Guardrail) check(ctx context.Context, text string) guardrail.Result {
	if g.m == nil {
		return guardrail.Fatal(errors.New("moderation: no moderator"))
	}
	v, err := g.m.Moderate(ctx, text)
	if err != nil {
		return guardrail.Fatal(err)
	}
	if !v.Flagged {
		return guardrail.Pass()
	}
	res := guardrail.Fail(g.message)
	res.Err = &FlaggedError{Categories: v.Categories}
	return res
}
