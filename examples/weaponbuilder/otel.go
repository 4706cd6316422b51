package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// setupOTel installs the OpenTelemetry SDK as the global providers,
// exporting to w: each span as it ends (pretty-printed JSON) and the
// metrics every 30 seconds and at shutdown. The runtime's
// instrumentation uses the global providers by default, so nothing else
// changes. shutdown flushes and stops them.
func setupOTel(w io.Writer) (shutdown func(context.Context) error, err error) {
	res := resource.NewSchemaless(semconv.ServiceName("weaponbuilder"))
	spans, err := stdouttrace.New(stdouttrace.WithWriter(w), stdouttrace.WithPrettyPrint())
	if err != nil {
		return nil, fmt.Errorf("the span exporter: %w", err)
	}
	metrics, err := stdoutmetric.New(stdoutmetric.WithWriter(w), stdoutmetric.WithPrettyPrint())
	if err != nil {
		return nil, fmt.Errorf("the metric exporter: %w", err)
	}
	// A synchronous exporter: a request's spans are printed when it ends.
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSyncer(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metrics, sdkmetric.WithInterval(30*time.Second))))
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	return func(ctx context.Context) error {
		return errors.Join(tp.Shutdown(ctx), mp.Shutdown(ctx))
	}, nil
}
