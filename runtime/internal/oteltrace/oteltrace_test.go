package oteltrace_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/chatscopes/chatgen/runtime/internal/oteltrace"
)

// TestGlobalFollowsTheApplication: the global provider is off until the
// application installs an SDK, and on from then; an explicit provider is
// on unless it is a no-op one. (The test sets the global provider: no
// other test of this package may use it.)
func TestGlobalFollowsTheApplication(t *testing.T) {
	if oteltrace.Records(otel.GetTracerProvider()) {
		t.Fatal("the global provider before an SDK is installed records: OpenTelemetry renamed its delegate?")
	}
	if oteltrace.Records(noop.NewTracerProvider()) || oteltrace.Records(nil) {
		t.Fatal("a no-op provider records")
	}
	global := oteltrace.New(nil, "test")
	noopTracer := oteltrace.New(noop.NewTracerProvider(), "test")
	if _, on := global.Get(); on {
		t.Fatal("global tracer on before an SDK")
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	otel.SetTracerProvider(tp) // for good: the global delegate cannot be restored
	tr, on := global.Get()
	if !on {
		t.Fatal("global tracer off after the SDK was installed")
	}
	_, sp := tr.Start(context.Background(), "x")
	sp.End()
	if len(rec.Ended()) != 1 {
		t.Fatal("the span was not recorded")
	}
	if _, on := noopTracer.Get(); on {
		t.Fatal("explicit no-op tracer on")
	}
	if _, on := oteltrace.New(tp, "test").Get(); !on {
		t.Fatal("explicit SDK tracer off")
	}
}
