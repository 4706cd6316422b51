package guardrail_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/guardrail"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// Spans and the Observe hook record every check's outcome, never the text.
func TestGuardrailTelemetry(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	var mu sync.Mutex
	var seen []string
	set := &guardrail.Set{
		Input: []guardrail.InputGuardrail{input(func(in *guardrail.Input) guardrail.Result {
			return guardrail.Rewrite(strings.ReplaceAll(in.Text, "hunter2", "***"))
		})},
		Output: []guardrail.OutputGuardrail{named{"tone", output(func(out *guardrail.Output) guardrail.Result {
			if strings.Contains(out.Text, "rude") {
				return guardrail.Fail("Withheld.")
			}
			return guardrail.Pass()
		})}},
		Observe: func(_ context.Context, o guardrail.Observation) {
			mu.Lock()
			seen = append(seen, o.Guardrail+" "+o.Stage.String()+" "+o.Outcome.String())
			mu.Unlock()
		},
	}
	r := newRig(t, ai.Config{Guardrails: set, Telemetry: ai.Telemetry{TracerProvider: tp}},
		llmtest.Reply{Text: "a polite answer"}, llmtest.Reply{Text: "a rude answer"})
	ctx := begin(t)
	if _, err := r.svc.Chat(ctx, r.req("my password is hunter2")); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Chat(ctx, r.req("again")); err == nil {
		t.Fatal("the rude answer passed")
	}
	want(t, "observed", seen,
		"guardrail.InputFunc input rewrite", "tone output pass",
		"guardrail.InputFunc input pass", "tone output fail")

	var turns []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if strings.HasPrefix(s.Name(), "invoke_agent") {
			turns = append(turns, s)
		}
	}
	if len(turns) != 2 {
		t.Fatalf("%d turn spans", len(turns))
	}
	var events []string
	for _, s := range turns {
		for _, e := range s.Events() {
			if e.Name != "chatgen.guardrail" {
				continue
			}
			a := attrs(e.Attributes)
			events = append(events, a["chatgen.guardrail.name"]+" "+a["chatgen.guardrail.stage"]+" "+a["chatgen.guardrail.outcome"])
			for k, v := range a {
				if strings.Contains(v, "hunter2") || strings.Contains(v, "rude") || strings.Contains(v, "Withheld") {
					t.Errorf("event attribute %s holds content: %q", k, v)
				}
			}
		}
	}
	want(t, "span events", events,
		"guardrail.InputFunc input rewrite", "tone output pass",
		"guardrail.InputFunc input pass", "tone output fail")
	failed := attrs(turns[1].Attributes())
	if failed["error.type"] != "guardrail" || failed["chatgen.guardrail.name"] != "tone" || failed["chatgen.guardrail.outcome"] != "fail" || failed["chatgen.guardrail.stage"] != "output" {
		t.Fatalf("the failed turn's span: %v", failed)
	}
	if d := turns[1].Status().Description; strings.Contains(d, "Withheld") || strings.Contains(d, "rude") {
		t.Fatalf("the status holds content: %q", d)
	}
}

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}
