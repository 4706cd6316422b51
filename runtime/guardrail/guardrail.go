// Package guardrail checks what an AI service sends the model and what the
// model answers: input guardrails run on the user message before the model
// call, output guardrails on the model's answer before it is committed to
// memory and returned. It follows LangChain4j's and Quarkus' guardrails.
//
// A guardrail returns a [Result]: pass ([Pass]); rewrite the text
// ([Rewrite]); fail with a message for the user ([Fail]: the request
// fails with GuardrailFailed and the turn is not remembered); fail the
// request at once ([Fatal]); or, for output guardrails, ask the model
// again with a reprompt message ([Reprompt]), at most [Set.MaxReprompts]
// times per turn.
//
// A [Set] holds the guardrails of an AI service (ai.Config.Guardrails) or
// of one of its methods (ai.Config.MethodGuardrails). The ready
// guardrails are in packages of their own, linked only when imported:
// runtime/guardrail/pii (a redactor of personal data) and
// runtime/guardrail/moderation (a classifier prompt over any model, and
// OpenAI's /v1/moderations).
package guardrail

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// Outcome is what a guardrail decided.
type Outcome uint8

// The outcomes of a guardrail.
const (
	// OutcomePass: the text is fine as it is.
	OutcomePass Outcome = iota
	// OutcomeRewrite: the text is replaced by [Result.Text]; the next
	// guardrails, the model (for input) and the memory get the new text.
	// A rewrite to the same text is a pass.
	OutcomeRewrite
	// OutcomeReprompt: output only: the model is asked again, with
	// [Result.Message] as a follow-up user message (none: the same prompt
	// again). Neither the rejected answer nor the reprompt is remembered.
	OutcomeReprompt
	// OutcomeFail: the request fails with GuardrailFailed; the user is
	// told [Result.Message]; the turn is not remembered.
	OutcomeFail
	// OutcomeFatal: the request fails with GuardrailFailed at once: no
	// later guardrail runs and no reprompt is made; the turn is not
	// remembered. [Result.Err] is logged, never sent.
	OutcomeFatal
)

// String returns "pass", "rewrite", "reprompt", "fail" or "fatal".
func (o Outcome) String() string {
	switch o {
	case OutcomePass:
		return "pass"
	case OutcomeRewrite:
		return "rewrite"
	case OutcomeReprompt:
		return "reprompt"
	case OutcomeFail:
		return "fail"
	case OutcomeFatal:
		return "fatal"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Result is what a guardrail returns. Make one with [Pass], [Rewrite],
// [Reprompt], [Fail] or [Fatal].
type Result struct {
	// Outcome is the decision.
	Outcome Outcome
	// Text is the replacement text of OutcomeRewrite.
	Text string
	// Message is, for OutcomeFail, what the user is told; for
	// OutcomeReprompt, the follow-up message the model is sent.
	Message string
	// Err is the cause of OutcomeFail or OutcomeFatal, for logs and
	// errors.Is; it is never sent to the client.
	Err error
}

// Pass returns the result of a guardrail that lets the text through.
func Pass() Result { return Result{} }

// Rewrite returns the result of a guardrail that replaces the text.
func Rewrite(text string) Result { return Result{Outcome: OutcomeRewrite, Text: text} }

// Reprompt returns the result of an output guardrail that asks the model
// again, telling it message ("" asks again with the same prompt).
func Reprompt(message string) Result { return Result{Outcome: OutcomeReprompt, Message: message} }

// Fail returns the result of a guardrail that refuses the text: the user
// is told message.
func Fail(message string) Result { return Result{Outcome: OutcomeFail, Message: message} }

// Fatal returns the result of a guardrail that fails the request at once,
// for the cause err (logged, never sent).
func Fatal(err error) Result { return Result{Outcome: OutcomeFatal, Err: err} }

// Input is what an input guardrail checks: the user message of a turn.
type Input struct {
	// Service is the AI service's name, "import/path.Type"; Method the
	// interface method's.
	Service, Method string
	// Text is the user message, as rewritten by the guardrails before.
	Text string
	// Memory is the conversation so far. Read only.
	Memory []llms.MessageContent
}

// Output is what an output guardrail checks: the model's answer.
type Output struct {
	// Service is the AI service's name, "import/path.Type"; Method the
	// interface method's.
	Service, Method string
	// Text is the answer, as rewritten by the guardrails before.
	Text string
	// User is the user message the answer is to (after the input
	// guardrails).
	User string
	// Reprompts is the number of times the model was asked again in
	// this turn.
	Reprompts int
	// Streamed reports that the answer was streamed to the client as it
	// came: a result other than pass retracts it (see package ai).
	Streamed bool
}

// An InputGuardrail checks user messages. It must honour ctx; it may be
// called concurrently for different turns.
type InputGuardrail interface {
	CheckInput(ctx context.Context, in *Input) Result
}

// An OutputGuardrail checks the model's answers. It must honour ctx; it
// may be called concurrently for different turns.
type OutputGuardrail interface {
	CheckOutput(ctx context.Context, out *Output) Result
}

// A Namer names a guardrail in logs, errors, spans and [Observation]s.
// Guardrails without a name are named by their Go type.
type Namer interface {
	GuardrailName() string
}

// InputFunc is an [InputGuardrail] of a function.
type InputFunc func(ctx context.Context, in *Input) Result

// CheckInput calls f.
func (f InputFunc) CheckInput(ctx context.Context, in *Input) Result { return f(ctx, in) }

// OutputFunc is an [OutputGuardrail] of a function.
type OutputFunc func(ctx context.Context, out *Output) Result

// CheckOutput calls f.
func (f OutputFunc) CheckOutput(ctx context.Context, out *Output) Result { return f(ctx, out) }

// Name returns the name of guardrail g: its [Namer] name, else its Go
// type ("pkg.Type", "*pkg.Type"; "<nil>" for nil).
func Name(g any) string {
	if n, ok := g.(Namer); ok {
		return n.GuardrailName()
	}
	if g == nil {
		return "<nil>"
	}
	return reflect.TypeOf(g).String() // no allocation, unlike %T
}

// DefaultMaxReprompts is the number of reprompts a turn may make when
// [Set.MaxReprompts] is 0 (LangChain4j's default too).
const DefaultMaxReprompts = 2

// DefaultMaxText is the longest text, in bytes, a rewrite may produce when
// [Set.MaxText] is 0.
const DefaultMaxText = 1 << 20

// Stage says which side of the model call a guardrail checks.
type Stage uint8

// The stages.
const (
	StageInput Stage = iota
	StageOutput
)

// String returns "input" or "output".
func (s Stage) String() string {
	if s == StageInput {
		return "input"
	}
	return "output"
}

// An Observation is one guardrail check, as [Set.Observe] sees it. It
// holds no content: neither the text checked nor the messages.
type Observation struct {
	// Service is the AI service's name; Method the interface method's.
	Service, Method string
	// Guardrail is the guardrail's name (see [Namer]).
	Guardrail string
	// Stage is input or output.
	Stage Stage
	// Outcome is what the guardrail decided; OutcomeFatal for a guardrail
	// that panicked, timed out or broke a rule (Err says which).
	Outcome Outcome
	// Duration is how long the check took.
	Duration time.Duration
	// Err is the error the check ended the request with, nil for pass,
	// rewrite and reprompt: an *[Error].
	Err error
}

// Set is the guardrails of an AI service or of one of its methods. The
// zero value has none. A Set is read only once its service is made.
type Set struct {
	// Input run in order on the user message before the model call; each
	// sees the text the previous one rewrote. The first that fails stops
	// the turn.
	Input []InputGuardrail
	// Output run in order on the model's final answer (not on the text
	// of a reply that calls tools); each sees the text the previous one
	// rewrote. The first that fails or reprompts stops the chain.
	Output []OutputGuardrail
	// MaxReprompts is the most reprompts of one turn; 0 means
	// [DefaultMaxReprompts], a negative value none (a reprompt then fails
	// the request). Beyond it the request fails with [ErrTooManyReprompts].
	MaxReprompts int
	// Timeout bounds each guardrail check, even one that ignores its
	// context: the check runs on a goroutine of its own, whose result is
	// dropped when the time is up (the request fails with [ErrTimeout]).
	// 0 means none: the check runs on the turn's goroutine, bounded by
	// the request's context only, which the guardrail must honour.
	Timeout time.Duration
	// MaxText is the longest text a rewrite may produce, in bytes; 0 means
	// [DefaultMaxText]. A longer one fails the request with
	// [ErrTextTooLarge].
	MaxText int
	// Observe, when set, is called after every check, with no content
	// (package ai's telemetry records the same as span events).
	Observe func(ctx context.Context, o Observation)
}

// ReasonGuardrailFailed is the failure reason of a request a guardrail
// stopped: the data of its Failed terminator.
const ReasonGuardrailFailed = "GuardrailFailed"

// Errors of this package, for errors.Is.
var (
	// ErrGuardrailFailed matches the error of every request a guardrail
	// stopped, on the server (an *[Error]) and on clients (the
	// *chat.Failure of the Failed terminator).
	ErrGuardrailFailed = &chat.Failure{Reason: ReasonGuardrailFailed}
	// ErrTooManyReprompts: output guardrails still asked for a reprompt
	// after [Set.MaxReprompts] of them.
	ErrTooManyReprompts = errors.New("too many reprompts")
	// ErrTimeout: a guardrail check took longer than [Set.Timeout].
	ErrTimeout = errors.New("guardrail timed out")
	// ErrTextTooLarge: a rewrite produced more than [Set.MaxText] bytes.
	ErrTextTooLarge = errors.New("rewritten text too large")
	// ErrBadOutcome: an input guardrail asked for a reprompt, or a
	// guardrail returned an unknown outcome.
	ErrBadOutcome = errors.New("invalid guardrail outcome")
)

// Error is the error of a request a guardrail stopped. It matches
// [ErrGuardrailFailed] (and a *chat.Failure with the reason
// GuardrailFailed, with errors.As), and its cause.
type Error struct {
	// Guardrail names the guardrail (see [Namer]).
	Guardrail string
	// Stage is input or output.
	Stage Stage
	// Outcome is OutcomeFail or OutcomeFatal.
	Outcome Outcome
	// Message is what the user is told (OutcomeFail only).
	Message string
	// Err is the cause: the guardrail's, a *chat.PanicError, or one of
	// the errors of this package.
	Err error
}

// Error implements error. It includes the user message, not the text
// checked.
func (e *Error) Error() string {
	s := "guardrail " + e.Guardrail + " (" + e.Stage.String() + "): " + e.Outcome.String()
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause and the failure GuardrailFailed.
func (e *Error) Unwrap() []error {
	f := &chat.Failure{Reason: ReasonGuardrailFailed}
	if e.Err == nil {
		return []error{f}
	}
	return []error{e.Err, f}
}

// Empty reports whether s has no guardrail (a nil s included).
func (s *Set) Empty() bool { return s == nil || len(s.Input) == 0 && len(s.Output) == 0 }

func (s *Set) maxText() int {
	if s.MaxText > 0 {
		return s.MaxText
	}
	return DefaultMaxText
}

// maxReprompts returns the most reprompts of a turn.
func (s *Set) maxReprompts() int {
	switch {
	case s.MaxReprompts == 0:
		return DefaultMaxReprompts
	case s.MaxReprompts < 0:
		return 0
	}
	return s.MaxReprompts
}

// CheckInput runs the input guardrails on in and returns the user message
// to send: in.Text, or its rewrite. A guardrail that fails, panics, times
// out or breaks a rule ends the chain with an *[Error]; so does the end of
// ctx. in.Text is left holding the final text.
func (s *Set) CheckInput(ctx context.Context, in *Input) (string, error) {
	if s == nil {
		return in.Text, nil
	}
	for _, g := range s.Input {
		var start time.Time
		if s.Observe != nil {
			start = time.Now()
		}
		res, err := s.input(ctx, g, in)
		if res.Outcome == OutcomeRewrite && res.Text == in.Text {
			res = Result{} // a rewrite that changes nothing passes
		}
		if err == nil {
			err = s.verdict(g, StageInput, &res)
		}
		if s.Observe != nil {
			s.observe(ctx, g, in.Service, in.Method, StageInput, res.Outcome, start, err)
		}
		if err != nil {
			return "", err
		}
		if res.Outcome == OutcomeRewrite {
			in.Text = res.Text
		}
	}
	return in.Text, nil
}

// CheckOutput runs the output guardrails on out. It returns a Result
// with OutcomePass and the answer as it is, OutcomeRewrite with the
// rewritten answer in Text, or OutcomeReprompt with the reprompt message
// (out.Reprompts is below the limit); or an *[Error] for a guardrail that
// failed, panicked, timed out or broke a rule, or a reprompt beyond the
// limit ([ErrTooManyReprompts]). out.Text is left holding the final text.
func (s *Set) CheckOutput(ctx context.Context, out *Output) (Result, error) {
	if s == nil {
		return Result{Text: out.Text}, nil
	}
	rewritten := false
	for _, g := range s.Output {
		var start time.Time
		if s.Observe != nil {
			start = time.Now()
		}
		res, err := s.output(ctx, g, out)
		if res.Outcome == OutcomeRewrite && res.Text == out.Text {
			res = Result{} // a rewrite that changes nothing passes
		}
		if err == nil {
			err = s.verdict(g, StageOutput, &res)
		}
		if err == nil && res.Outcome == OutcomeReprompt && out.Reprompts >= s.maxReprompts() {
			err = &Error{Guardrail: Name(g), Stage: StageOutput, Outcome: OutcomeFatal,
				Err: fmt.Errorf("%w: the limit is %d", ErrTooManyReprompts, s.maxReprompts())}
		}
		if s.Observe != nil {
			s.observe(ctx, g, out.Service, out.Method, StageOutput, res.Outcome, start, err)
		}
		switch {
		case err != nil:
			return Result{}, err
		case res.Outcome == OutcomeReprompt:
			return Result{Outcome: OutcomeReprompt, Message: res.Message}, nil
		case res.Outcome == OutcomeRewrite:
			out.Text, rewritten = res.Text, true
		}
	}
	if rewritten {
		return Result{Outcome: OutcomeRewrite, Text: out.Text}, nil
	}
	return Result{Text: out.Text}, nil
}

// verdict returns the error that the result res of g ends the request
// with, or nil to go on.
func (s *Set) verdict(g any, stage Stage, res *Result) error {
	switch res.Outcome {
	case OutcomePass:
		return nil
	case OutcomeRewrite:
		if len(res.Text) > s.maxText() {
			return &Error{Guardrail: Name(g), Stage: stage, Outcome: OutcomeFatal,
				Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrTextTooLarge, len(res.Text), s.maxText())}
		}
		return nil
	case OutcomeReprompt:
		if stage == StageOutput {
			return nil
		}
		return &Error{Guardrail: Name(g), Stage: stage, Outcome: OutcomeFatal,
			Err: fmt.Errorf("%w: an input guardrail cannot reprompt", ErrBadOutcome)}
	case OutcomeFail:
		return &Error{Guardrail: Name(g), Stage: stage, Outcome: OutcomeFail, Message: res.Message, Err: res.Err}
	case OutcomeFatal:
		return &Error{Guardrail: Name(g), Stage: stage, Outcome: OutcomeFatal, Err: res.Err}
	}
	return &Error{Guardrail: Name(g), Stage: stage, Outcome: OutcomeFatal,
		Err: fmt.Errorf("%w: %v", ErrBadOutcome, res.Outcome)}
}

func (s *Set) observe(ctx context.Context, g any, service, method string, stage Stage, o Outcome, start time.Time, err error) {
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) {
			o = ge.Outcome
		} else {
			o = OutcomeFatal
		}
	}
	s.Observe(ctx, Observation{Service: service, Method: method, Guardrail: Name(g), Stage: stage,
		Outcome: o, Duration: time.Since(start), Err: err})
}

// checked is a guardrail's result, or why there is none.
type checked struct {
	res Result
	err error
}

// input runs one input guardrail, recovering its panic and bounding it
// by s.Timeout.
func (s *Set) input(ctx context.Context, g InputGuardrail, in *Input) (Result, error) {
	if s.Timeout <= 0 {
		return safeInput(ctx, g, in)
	}
	// The guardrail gets a copy: one that ignores its context and returns
	// late must not write into the turn's Input.
	cp := *in
	return s.bounded(ctx, g, StageInput, func(ctx context.Context) (Result, error) { return safeInput(ctx, g, &cp) })
}

// output runs one output guardrail, recovering its panic and bounding it
// by s.Timeout.
func (s *Set) output(ctx context.Context, g OutputGuardrail, out *Output) (Result, error) {
	if s.Timeout <= 0 {
		return safeOutput(ctx, g, out)
	}
	cp := *out
	return s.bounded(ctx, g, StageOutput, func(ctx context.Context) (Result, error) { return safeOutput(ctx, g, &cp) })
}

// bounded runs check on a goroutine of its own and waits for it at most
// s.Timeout, or until ctx ends.
func (s *Set) bounded(parent context.Context, g any, stage Stage, check func(context.Context) (Result, error)) (Result, error) {
	ctx, cancel := context.WithTimeout(parent, s.Timeout)
	defer cancel()
	done := make(chan checked, 1) // buffered: a late check never blocks
	go func() {
		res, err := check(ctx)
		done <- checked{res, err}
	}()
	select {
	case c := <-done:
		return c.res, c.err
	case <-ctx.Done():
		err := parent.Err()
		if err == nil {
			err = fmt.Errorf("%w after %v", ErrTimeout, s.Timeout)
		}
		return Result{}, &Error{Guardrail: Name(g), Stage: stage, Outcome: OutcomeFatal, Err: err}
	}
}

// panicked returns the error of guardrail g that panicked with v.
func panicked(g any, stage Stage, v any) error {
	return &Error{Guardrail: Name(g), Stage: stage, Outcome: OutcomeFatal,
		Err: &chat.PanicError{Value: v, Stack: debug.Stack()}}
}

func safeInput(ctx context.Context, g InputGuardrail, in *Input) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicked(g, StageInput, v)
		}
	}()
	if err := ctx.Err(); err != nil {
		return Result{}, &Error{Guardrail: Name(g), Stage: StageInput, Outcome: OutcomeFatal, Err: err}
	}
	return g.CheckInput(ctx, in), nil
}

func safeOutput(ctx context.Context, g OutputGuardrail, out *Output) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicked(g, StageOutput, v)
		}
	}()
	if err := ctx.Err(); err != nil {
		return Result{}, &Error{Guardrail: Name(g), Stage: StageOutput, Outcome: OutcomeFatal, Err: err}
	}
	return g.CheckOutput(ctx, out), nil
}
