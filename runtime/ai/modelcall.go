package ai

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// generate makes one model call of the turn: through the model hooks,
// when the service has some, around the attempts.
func (t *turn) generate(ctx context.Context) (*llms.ContentResponse, error) {
	if t.s.modelHooks == nil {
		return t.attempts(ctx, t.prompt, t.opts)
	}
	call := &ModelCall{
		Service:  t.s.name,
		Method:   t.m.Name,
		N:        t.reply.ModelCalls + 1,
		Messages: t.prompt[:len(t.prompt):len(t.prompt)],
		Options:  t.opts[:len(t.opts):len(t.opts)],
		turn:     t,
	}
	resp, err := t.s.callModelHooks(ctx, call)
	var hp *hookPanic
	if errors.As(err, &hp) {
		t.s.log().ErrorContext(ctx, "ai: model hook panicked",
			"service", t.s.name, "method", t.m.Name,
			"panic", fmt.Sprint(hp.pe.Value), "stack", string(hp.pe.Stack))
	}
	return resp, err
}

// attempts makes a model call with msgs and opts, retrying as
// [Config.Retry] says.
func (t *turn) attempts(ctx context.Context, msgs []llms.MessageContent, opts []llms.CallOption) (*llms.ContentResponse, error) {
	for n := 1; ; n++ {
		resp, rec, err := t.attempt(ctx, msgs, opts)
		if err == nil {
			return resp, nil
		}
		if n > t.s.retry.MaxRetries || t.reachedClient() || !retryable(ctx, err, rec) {
			if n > 1 {
				return nil, fmt.Errorf("attempt %d of %d: %w", n, t.s.retry.MaxRetries+1, err)
			}
			return nil, err
		}
		wait, werr := t.s.retry.wait(n, rec, err)
		if werr != nil {
			return nil, werr
		}
		t.s.log().WarnContext(ctx, "ai: model call failed; retrying",
			"service", t.s.name, "method", t.m.Name, "attempt", n, "wait", wait, "err", err)
		if serr := t.s.sleep(ctx, wait); serr != nil {
			return nil, err
		}
		// Nothing of the failed attempt reached the client.
		if k := t.mode.stream; k != nil {
			k.yielded.Store(false)
		}
		t.resetFlags()
	}
}

// attempt makes one attempt of a model call, with the model call's
// timeout and telemetry; the caller resets the turn's flags first. It
// returns what Transport saw of it when the service retries or its client
// is googleai (whose usage Transport reads).
func (t *turn) attempt(ctx context.Context, msgs []llms.MessageContent, opts []llms.CallOption) (*llms.ContentResponse, *httpRecord, error) {
	actx := ctx
	var rec *httpRecord
	if t.s.retry.MaxRetries > 0 || t.s.dialect.wireUsage {
		rec = new(httpRecord)
		actx = context.WithValue(actx, httpRecordKey{}, rec)
	}
	d := t.s.modelTimeout
	if d > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeoutCause(actx, d, errModelDeadline)
		defer cancel()
	}
	var obs chatObservation
	if t.s.tel.observing(ctx) {
		actx, obs = t.startChat(actx, msgs, opts)
	}
	resp, err := t.s.model.GenerateContent(actx, t.s.dialect.messagesMarked(msgs, t.callMarkLimit(msgs)), opts...)
	if d > 0 && ctx.Err() == nil && context.Cause(actx) == errModelDeadline {
		resp, err = nil, &modelTimeoutError{after: d, err: err}
	}
	if err == nil && t.s.dialect.wireUsage {
		t.useGeminiUsage(ctx, resp, rec)
	}
	if obs.active() {
		t.endChat(actx, obs, resp, err, rec)
	}
	return resp, rec, err
}

// reachedClient reports whether the model call in progress sent part of
// its answer to the client: a streamed chunk or a Thinking event.
func (t *turn) reachedClient() bool {
	if k := t.mode.stream; k != nil && k.yielded.Load() {
		return true
	}
	return t.thought.Load()
}

// onReasoning is the streaming reasoning function of a service that
// forwards thinking: each reasoning chunk becomes a Thinking event of the
// request in ctx. Text chunks (which the stream function, if any, takes)
// only mark the call as streamed.
func (t *turn) onReasoning(ctx context.Context, reasoning, chunk []byte) error {
	if k := t.mode.stream; k != nil && k.stopped.Load() {
		return errStopped
	}
	if len(chunk) > 0 {
		t.streamed.Store(true)
	}
	if len(reasoning) == 0 {
		return nil
	}
	t.streamed.Store(true)
	t.thought.Store(true)
	t.think(ctx, string(reasoning))
	return nil
}

// think sends text as a Thinking event of the request in ctx; outside a
// request it does nothing.
func (t *turn) think(ctx context.Context, text string) {
	if t.agent != nil {
		t.agentEvent(ctx, AgentEvent{Type: "Thinking", Text: text})
		return
	}
	if err := chat.Response(ctx).Thinking(text); err != nil && !errors.Is(err, chat.ErrNotActive) {
		t.s.log().DebugContext(ctx, "ai: forwarding the model's reasoning", "service", t.s.name, "method", t.m.Name, "err", err)
	}
}

// resetFlags clears the flags for a new model call (or attempt). Only
// onReasoning sets them: without ForwardThinking there is nothing to do.
func (t *turn) resetFlags() {
	if t.s.thinking {
		t.streamed.Store(false)
		t.thought.Store(false)
	}
}

// turnFlags are the per-model-call flags of a turn, set from the
// provider's streaming callbacks.
type turnFlags struct {
	// streamed: the provider streamed something of the answer to
	// onReasoning (so the answer must end with a finish reason).
	streamed atomic.Bool
	// thought: a reasoning chunk reached the client as a Thinking event.
	thought atomic.Bool
}
