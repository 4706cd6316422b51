package ai

import (
	"context"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// BenchmarkTelemetryOff measures what disabled telemetry costs a turn:
// the checks made per turn, per model call and per tool call (one turn of
// BenchmarkAITurn makes four), with the global providers (no SDK
// installed) and with explicit no-op ones.
func BenchmarkTelemetryOff(b *testing.B) {
	ctx := context.Background()
	for name, cfg := range map[string]Telemetry{
		"global": {},
		"noop":   {TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()},
	} {
		b.Run(name, func(b *testing.B) {
			tel := newTelemetry(cfg, nil)
			b.ReportAllocs()
			for b.Loop() {
				if tel.observing(ctx) {
					b.Fatal("telemetry is on")
				}
				if _, on := tel.tracer(); on {
					b.Fatal("tracing is on")
				}
			}
		})
	}
}
