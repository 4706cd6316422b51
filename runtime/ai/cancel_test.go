package ai_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// A streamed turn the user stops (its context cancelled with a cause
// matching chat.ErrCancelled) is remembered: the user's message and the
// part of the answer that was streamed, marked as interrupted. The next
// turn's request, through langchaingo's real OpenAI client against the
// strict server, is valid and carries the interrupted answer.
func TestStoppedStreamKeepsThePartialAnswer(t *testing.T) {
	leaktest.Check(t)
	f := newServerFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: "one two three four five six seven eight nine ten", ChunkDelay: 20 * time.Millisecond},
		llmtest.Reply{Text: "As I was saying."},
	), &ai.Config{})
	ctx := begin(t)
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var seen []string
	var err error
	for chunk, cerr := range f.svc.Stream(rctx, f.req("Count")) {
		if cerr != nil {
			err = cerr
			break
		}
		seen = append(seen, chunk)
		if len(seen) == 2 {
			stop(chat.ErrCancelled) // the Stop button
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stream error %v, want context.Canceled", err)
	}
	partial := strings.Join(seen, "")
	if strings.Contains(partial, "ten") {
		t.Fatalf("the whole answer was streamed (%q): the model call was not cancelled", partial)
	}
	id := memID(t, ctx)
	wantStrings(t, "memory", f.memory(ctx, id),
		"system: You are terse.",
		"human: Count",
		"ai: "+partial+"\n\n"+ai.InterruptedMarker)

	if _, err := f.svc.Chat(ctx, f.req("Go on")); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	wantStrings(t, "second request", describe(reqs[1].Messages),
		"system: You are terse.",
		"human: Count",
		"ai: "+partial+"\n\n"+ai.InterruptedMarker,
		"human: Go on")
}

// A turn stopped while its tool runs is remembered without an orphan
// tool call: the running call keeps what the tool returned (here the
// context's error), the next call does not run and gets a cancelled
// result, and the answer is the marker alone. The strict server accepts the next turn's history.
func TestStoppedToolCallGetsACancelledResult(t *testing.T) {
	leaktest.Check(t)
	f := newServerFixture(t, llmtest.Sequence(
		calls(call("weather", `{"city":"Paris"}`), call("add", `{"a":1,"b":2}`)),
		llmtest.Reply{Text: "Sorry, I stopped."},
	), &ai.Config{})
	ctx := begin(t)
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	f.box.hooks["weather"] = func(ctx context.Context) error {
		stop(chat.ErrCancelled) // the user stops while the tool runs
		<-ctx.Done()            // the tool sees it at once
		return ctx.Err()
	}
	if _, err := f.svc.Chat(rctx, f.req("Weather?")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Chat = %v, want context.Canceled", err)
	}
	id := memID(t, ctx)
	wantStrings(t, "memory", f.memory(ctx, id),
		"system: You are terse.",
		"human: Weather?",
		`ai: call weather {"city":"Paris"} | call add {"a":1,"b":2}`,
		"tool: result weather error: context canceled", // what the tool returned
		"tool: result add cancelled: the turn was stopped before this call ran",
		"ai: "+ai.InterruptedMarker)
	if got := f.box.called(); len(got) != 1 {
		t.Fatalf("tools called: %q; the second call must not run after the stop", got)
	}
	delete(f.box.hooks, "weather")
	if _, err := f.svc.Chat(ctx, f.req("Never mind")); err != nil {
		t.Fatalf("the turn after the stop: %v", err)
	}
	if got := describe(f.requests()[1].Messages); got[len(got)-1] != "human: Never mind" || len(got) != 7 {
		t.Fatalf("second request: %q", got)
	}
}

// A context cancelled without the stop cause (the connection or the
// session ended) is no stop: nothing is remembered, as before.
func TestCancelledWithoutStopCommitsNothing(t *testing.T) {
	f := newServerFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: "one two three four five six", ChunkDelay: 20 * time.Millisecond},
	), &ai.Config{})
	ctx := begin(t)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var err error
	for _, cerr := range f.svc.Stream(rctx, f.req("Count")) {
		if cerr != nil {
			err = cerr
			break
		}
		cancel()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("stream error %v, want context.Canceled", err)
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)))
}
