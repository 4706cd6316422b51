package ai

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/guardrail"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// guarded is the guardrail state of a turn with guardrails, allocated
// only then: a turn without pays nothing for it.
type guarded struct {
	set       *guardrail.Set
	user      string           // the user message, after the input guardrails
	reprompts int              // reprompts the output guardrails asked for
	in        guardrail.Input  // what the input guardrails check, in place
	out       guardrail.Output // what the output guardrails check, in place
}

// guardrails returns the guardrails of method: its own set in
// Config.MethodGuardrails, else the service's; nil for none.
func (s *Service) guardrails(method string) *guardrail.Set {
	if g, ok := s.methodGuards[method]; ok {
		return g
	}
	return s.guards
}

// observed returns a copy of set whose Observe also records each check,
// without content, as a "chatgen.guardrail" event of the turn's span when
// the service traces; nil for nil.
func (s *Service) observed(set *guardrail.Set) *guardrail.Set {
	if set == nil {
		return nil
	}
	cp := *set
	user := set.Observe
	cp.Observe = func(ctx context.Context, o guardrail.Observation) {
		if _, on := s.tel.tracer(); on {
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				span.AddEvent("chatgen.guardrail", trace.WithAttributes(
					attribute.String("chatgen.guardrail.name", o.Guardrail),
					attribute.String("chatgen.guardrail.stage", o.Stage.String()),
					attribute.String("chatgen.guardrail.outcome", o.Outcome.String()),
					attribute.Float64("chatgen.guardrail.duration", o.Duration.Seconds()),
				))
			}
		}
		if user != nil {
			user(ctx, o)
		}
	}
	return &cp
}

// checkGuardrails reports a method in Config.MethodGuardrails that the
// service does not declare (when generated code declared its methods).
func (s *Service) checkGuardrails() error {
	if len(s.methodGuards) == 0 || len(s.methods) == 0 {
		return nil
	}
	names := make([]string, 0, len(s.methods))
	for _, m := range s.methods {
		names = append(names, m.Name)
	}
	for name := range s.methodGuards {
		if !slices.Contains(names, name) {
			return fmt.Errorf("ai: %s: Config.MethodGuardrails names %q: %w (its methods: %s)", s.name, name, ErrUnknownMethod, strings.Join(names, ", "))
		}
	}
	return nil
}

// checkInput runs the input guardrails of the turn on the user message
// and returns the message to send.
func (t *turn) checkInput(ctx context.Context, user string, history []llms.MessageContent) (string, error) {
	g := t.guard
	g.in = guardrail.Input{Service: t.s.name, Method: t.m.Name, Text: user, Memory: history}
	text, err := g.set.CheckInput(ctx, &g.in)
	g.in.Memory = nil
	if err != nil {
		return "", t.guardFailed(ctx, err)
	}
	return text, nil
}

// checkOutput runs the output guardrails of the turn on the final answer
// content. It returns the answer to commit, or again = true when the
// model is to be asked again (the prompt then holds the reprompt).
func (t *turn) checkOutput(ctx context.Context, content string) (answer string, again bool, err error) {
	k, g := t.mode.stream, t.guard
	g.out = guardrail.Output{Service: t.s.name, Method: t.m.Name, Text: content, User: g.user,
		Reprompts: g.reprompts, Streamed: k != nil && !k.hold && k.sent.Load()}
	res, err := g.set.CheckOutput(ctx, &g.out)
	if err != nil {
		t.retract(ctx, outcomeOf(err))
		return "", false, t.guardFailed(ctx, err)
	}
	switch res.Outcome {
	case guardrail.OutcomeReprompt:
		t.retract(ctx, guardrail.OutcomeReprompt)
		g.reprompts++
		t.s.log().DebugContext(ctx, "ai: an output guardrail asked for the answer again",
			"service", t.s.name, "method", t.m.Name, "reprompts", g.reprompts)
		if res.Message != "" {
			// Sent, never committed: the memory gets the accepted exchange.
			t.prompt = append(t.prompt, llms.TextParts(llms.ChatMessageTypeAI, content),
				llms.TextParts(llms.ChatMessageTypeHuman, res.Message))
		}
		return "", true, nil
	case guardrail.OutcomeRewrite:
		if k != nil {
			t.retract(ctx, guardrail.OutcomeRewrite)
			if res.Text != "" && !k.emit(res.Text) {
				return "", false, errStopped
			}
		}
		return res.Text, false, nil
	}
	if k != nil && k.hold {
		if !k.flush() {
			return "", false, errStopped
		}
	}
	return content, false, nil
}

// retract withdraws what the turn streamed: a Retract event when the
// chunks went out (inside a request), the held chunks otherwise. why is
// the outcome that withdraws them.
func (t *turn) retract(ctx context.Context, why guardrail.Outcome) {
	k := t.mode.stream
	if k == nil {
		return
	}
	if k.hold {
		k.drop()
		return
	}
	if !k.sent.Swap(false) {
		return
	}
	if err := chat.Response(ctx).Event(protocol.EventRetract, protocol.Retraction{Reason: why.String()}); err != nil && !errors.Is(err, chat.ErrNotActive) {
		t.s.log().DebugContext(ctx, "ai: retracting a streamed answer", "service", t.s.name, "method", t.m.Name, "err", err)
	}
}

// outcomeOf returns the outcome of a guardrail error.
func outcomeOf(err error) guardrail.Outcome {
	if ge := (*guardrail.Error)(nil); errors.As(err, &ge) {
		return ge.Outcome
	}
	return guardrail.OutcomeFatal
}

// guardFailed tells the user the message of a guardrail that failed
// (an Error event, inside a request), logs the failure without the text
// checked, and returns the request's error.
func (t *turn) guardFailed(ctx context.Context, err error) error {
	var ge *guardrail.Error
	if errors.As(err, &ge) && ge.Outcome == guardrail.OutcomeFail && ge.Message != "" {
		if serr := chat.Response(ctx).Error(ge.Message); serr != nil && !errors.Is(serr, chat.ErrNotActive) {
			t.s.log().DebugContext(ctx, "ai: telling the user a guardrail's message", "service", t.s.name, "method", t.m.Name, "err", serr)
		}
	}
	t.s.log().InfoContext(ctx, "ai: a guardrail stopped the turn; it is not remembered",
		"service", t.s.name, "method", t.m.Name, "err", err)
	return t.errorf("%w", err)
}
