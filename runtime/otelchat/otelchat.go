// Package otelchat instruments a chat.Router with OpenTelemetry: a span
// and metrics per request, through a route hook, and gauges of the
// router's conversations and scopes and of a websocket server's
// connections.
//
// The AI services of runtime/ai instrument their model and tool calls
// themselves (ai.Config.Telemetry); their spans are children of the
// request span, so that one trace shows a request with its model calls
// and tool calls:
//
//	route menu                    chat.route, chat.scope.id, chat.outcome, gen_ai.conversation.id
//	└── invoke_agent MainMenu.Chat
//	    ├── chat gpt-4o-mini      gen_ai.usage.input_tokens, …
//	    ├── execute_tool build    gen_ai.tool.name, gen_ai.tool.call.id
//	    └── chat gpt-4o-mini
//
// Like runtime/ai, this package uses the OpenTelemetry API only: the
// application installs an SDK (or not). While the providers are no-op
// ones — the globals before an SDK is installed — the hook starts no span
// and measures nothing.
//
// Package chat imports nothing but the standard library and google/uuid,
// so it offers hooks ([chat.RouteHook]) and counts ([chat.Router.Stats]); this package
// turns them into telemetry.
package otelchat

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/internal/oteltrace"
)

// instrumentationName names the tracer and meter of this package.
const instrumentationName = "github.com/chatscopes/chatgen/runtime/otelchat"

// The attributes of the request span and metrics.
const (
	// RouteKey is the route a request ran.
	RouteKey = attribute.Key("chat.route")
	// ScopeIDKey is the id of the scope the request was for.
	ScopeIDKey = attribute.Key("chat.scope.id")
	// OutcomeKey is "ok", or the failure reason the client received
	// (ServerError, BadRequest, …; Cancelled for a request the client
	// stopped).
	OutcomeKey = attribute.Key("chat.outcome")
)

// Options configures the instrumentation. A nil *Options, like the zero
// value, uses the global providers.
type Options struct {
	// TracerProvider makes the request spans; nil means the global one
	// (otel.GetTracerProvider) at the time of each request.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the metrics; nil means the global one
	// (otel.GetMeterProvider), whose instruments follow a provider
	// installed later.
	MeterProvider metric.MeterProvider
	// RecordContent puts the text of a failed request's error in the
	// description of the span's error status. The text may repeat what
	// the user sent, so it is off by default: the description is then
	// the failure reason (error.type) alone.
	RecordContent bool
}

func (o *Options) meter() metric.Meter {
	var mp metric.MeterProvider
	if o != nil {
		mp = o.MeterProvider
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	return mp.Meter(instrumentationName)
}

// RouteHook returns a route hook (for chat.RouterOptions.RouteHooks) that
// traces and measures every request:
//
//   - a span "route {route}" of kind server with chat.route,
//     chat.scope.id, gen_ai.conversation.id (the conversation's top scope
//     id) and chat.outcome, and, when the request fails, error.type (the
//     failure reason) and an error status, whose description is the
//     failure reason too (the error's text with [Options.RecordContent]);
//   - the counter chatgen.requests and the histogram
//     chatgen.request.duration (seconds), by chat.route and chat.outcome;
//   - the counter chatgen.requests.cancelled, by chat.route: the requests
//     the client stopped (chat.Cancelled: a Cancel frame, an interrupting
//     request, a cancelled local call). Their span's chat.outcome is
//     Cancelled and its status is not an error: a stop is the user's
//     choice, not a failure of the server.
//
// Give it first in RouteHooks so that the span encloses the other hooks.
func RouteHook(opts *Options) chat.RouteHook {
	var tp trace.TracerProvider
	var mp metric.MeterProvider
	content := false
	if opts != nil {
		tp, mp, content = opts.TracerProvider, opts.MeterProvider, opts.RecordContent
	}
	if _, noMetrics := mp.(metricnoop.MeterProvider); noMetrics && tp != nil && !oteltrace.Records(tp) {
		// No-op providers given: the hook is no hook at all.
		return func(next chat.RouteHandler) chat.RouteHandler { return next }
	}
	tracer := oteltrace.New(tp, instrumentationName)
	meter := opts.meter()
	requests, _ := meter.Int64Counter("chatgen.requests",
		metric.WithDescription("Chat requests handled, by route and outcome."), metric.WithUnit("{request}"))
	duration, _ := meter.Float64Histogram("chatgen.request.duration",
		metric.WithDescription("Duration of chat requests, by route and outcome."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120))
	cancelled, _ := meter.Int64Counter("chatgen.requests.cancelled",
		metric.WithDescription("Chat requests the client stopped, by route."), metric.WithUnit("{request}"))
	return func(next chat.RouteHandler) chat.RouteHandler {
		return func(ctx context.Context, route string, req *chat.RouteRequest) error {
			tr, tracing := tracer.Get()
			measuring := requests != nil && requests.Enabled(ctx) || duration != nil && duration.Enabled(ctx) ||
				cancelled != nil && cancelled.Enabled(ctx)
			if !tracing && !measuring {
				return next(ctx, route, req)
			}
			start := time.Now()
			var span trace.Span
			if tracing {
				attrs := []attribute.KeyValue{RouteKey.String(route)}
				if id, err := chat.ID(ctx); err == nil {
					attrs = append(attrs, ScopeIDKey.String(id))
				}
				if id, err := chat.ConversationID(ctx); err == nil {
					attrs = append(attrs, semconv.GenAIConversationID(id))
				}
				ctx, span = tr.Start(ctx, "route "+route, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			}
			err := next(ctx, route, req)
			outcome := "ok"
			stopped := chat.Cancelled(ctx)
			if f := chat.FailureOf(err); stopped {
				outcome = chat.ErrCancelled.Reason
			} else if f != nil {
				outcome = f.Reason
			}
			if span != nil {
				span.SetAttributes(OutcomeKey.String(outcome))
				if err != nil && !stopped {
					span.SetAttributes(semconv.ErrorTypeKey.String(outcome))
					desc := outcome
					if content {
						desc = err.Error()
					}
					span.SetStatus(codes.Error, desc)
				}
				span.End()
			}
			if measuring {
				set := metric.WithAttributeSet(attribute.NewSet(RouteKey.String(route), OutcomeKey.String(outcome)))
				if requests != nil {
					requests.Add(ctx, 1, set)
				}
				if duration != nil {
					duration.Record(ctx, time.Since(start).Seconds(), set)
				}
				if stopped && cancelled != nil {
					cancelled.Add(ctx, 1, metric.WithAttributeSet(attribute.NewSet(RouteKey.String(route))))
				}
			}
			return err
		}
	}
}

// Connections is what counts open websocket connections: a *ws.Server.
type Connections interface {
	Connections() int
}

// Observe registers the gauges chatgen.conversations and chatgen.scopes
// (the live conversations and scopes of r, from [chat.Router.Stats]) and,
// when conns is not nil, chatgen.ws.connections (its open websocket
// connections). They are read when the metrics are collected, never on a
// request's path. Unregister the returned registration when r is done.
func Observe(r *chat.Router, conns Connections, opts *Options) (metric.Registration, error) {
	meter := opts.meter()
	convs, err := meter.Int64ObservableUpDownCounter("chatgen.conversations",
		metric.WithDescription("Live chat conversations."), metric.WithUnit("{conversation}"))
	if err != nil {
		return nil, err
	}
	scopes, err := meter.Int64ObservableUpDownCounter("chatgen.scopes",
		metric.WithDescription("Live chat scopes, nested ones included."), metric.WithUnit("{scope}"))
	if err != nil {
		return nil, err
	}
	insts := []metric.Observable{convs, scopes}
	var wsConns metric.Int64ObservableUpDownCounter
	if conns != nil {
		wsConns, err = meter.Int64ObservableUpDownCounter("chatgen.ws.connections",
			metric.WithDescription("Open websocket connections."), metric.WithUnit("{connection}"))
		if err != nil {
			return nil, err
		}
		insts = append(insts, wsConns)
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := r.Stats()
		o.ObserveInt64(convs, st.Conversations)
		o.ObserveInt64(scopes, st.Scopes)
		if conns != nil {
			o.ObserveInt64(wsConns, int64(conns.Connections()))
		}
		return nil
	}, insts...)
}
