package otelchat_test

import (
	"context"
	"log/slog"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/otelchat"
)

// echoSession is chat's BenchmarkLocalTurn session (an echo route through
// the local client, dispatched as generated code does) with hooks.
func echoSession(tb testing.TB, hooks []chat.RouteHook) chat.Session {
	tb.Helper()
	p := chatimpl.NewPackage("example.com/bench")
	p.AddRoute(chatimpl.RouteSpec{Name: "echo", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.SendValue(ctx, req.UserMessage())
	}})
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.DiscardHandler), RouteHooks: hooks}, p)
	if err != nil {
		tb.Fatal(err)
	}
	client := chat.NewLocalClient(r)
	tb.Cleanup(func() { _ = client.Close() })
	var got string
	s, err := client.Builder().OnMessage(func(text string) { got = text }).Connect(context.Background(), "")
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Chat(context.Background(), "ping"); err != nil || got != "ping" {
		tb.Fatalf("warm-up turn: %v, got %q", err, got)
	}
	return s
}

var noopOptions = &otelchat.Options{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}

// BenchmarkLocalTurn is chat's BenchmarkLocalTurn without hooks, with
// RouteHook on the no-op providers, on the global providers (no SDK
// installed: no-op too) and on the SDK (recording every span in memory,
// metrics to a manual reader), to compare.
func BenchmarkLocalTurn(b *testing.B) {
	run := func(b *testing.B, hooks []chat.RouteHook) {
		s := echoSession(b, hooks)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Chat(ctx, "hello"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("no-hook", func(b *testing.B) { run(b, nil) })
	b.Run("otel-noop", func(b *testing.B) { run(b, []chat.RouteHook{otelchat.RouteHook(noopOptions)}) })
	b.Run("otel-global", func(b *testing.B) { run(b, []chat.RouteHook{otelchat.RouteHook(nil)}) })
	b.Run("otel-sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		run(b, []chat.RouteHook{otelchat.RouteHook(&otelchat.Options{TracerProvider: tp, MeterProvider: mp})})
	})
}

// With the no-op providers, the hook allocates nothing: a turn allocates
// what it does without it (one object).
func TestRouteHookNoopAllocatesNothing(t *testing.T) {
	for name, opts := range map[string]*otelchat.Options{"noop": noopOptions, "global": nil} {
		s := echoSession(t, []chat.RouteHook{otelchat.RouteHook(opts)})
		ctx := context.Background()
		if n := testing.AllocsPerRun(100, func() { _ = s.Chat(ctx, "hello") }); n > 1 {
			t.Fatalf("%s: %v allocations per turn, want 1", name, n)
		}
	}
}

func BenchmarkLocalTurnIdentityHook(b *testing.B) {
	s := echoSession(b, []chat.RouteHook{func(next chat.RouteHandler) chat.RouteHandler { return next }})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Chat(ctx, "hello"); err != nil {
			b.Fatal(err)
		}
	}
}
