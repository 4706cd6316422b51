// Package oteltrace resolves the OpenTelemetry tracer of chatgen's
// instrumentation so that tracing costs nothing while no SDK is
// installed: a no-op provider, or the global one before the application
// set it, hands out non-recording spans that still cost allocations, so
// chatgen starts no span at all then.
package oteltrace

import (
	"reflect"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// A Tracer is the tracer of one instrumentation: of a given provider, or
// of the global provider at the time of each use.
type Tracer struct {
	name     string
	explicit trace.TracerProvider // nil: the global provider
	tracer   trace.Tracer         // explicit's, when it records
	global   atomic.Pointer[globalTracer]
}

// globalTracer is the tracer of the global provider last seen.
type globalTracer struct {
	tp     trace.TracerProvider
	tracer trace.Tracer
	on     bool
}

// New returns the tracer called name of tp; a nil tp means the global
// provider, looked up at each [Tracer.Get].
func New(tp trace.TracerProvider, name string) *Tracer {
	t := &Tracer{name: name, explicit: tp}
	if tp != nil && Records(tp) {
		t.tracer = tp.Tracer(name)
	}
	return t
}

// Get returns the tracer, and false when its provider cannot record
// spans (start none then).
func (t *Tracer) Get() (trace.Tracer, bool) {
	if t.explicit != nil {
		return t.tracer, t.tracer != nil
	}
	tp := otel.GetTracerProvider()
	if g := t.global.Load(); g != nil && g.tp == tp {
		return g.tracer, g.on
	}
	g := &globalTracer{tp: tp, on: Records(tp)}
	if g.on {
		g.tracer = tp.Tracer(t.name)
	}
	if reflect.TypeOf(tp).Comparable() {
		t.global.Store(g)
	}
	return g.tracer, g.on
}

// Records reports whether tp may record spans: it is neither a no-op
// provider nor the global delegate before an SDK was installed. (Should
// OpenTelemetry rename its delegate, tracing stays correct and merely
// costs its non-recording spans.)
func Records(tp trace.TracerProvider) bool {
	if tp == nil {
		return false
	}
	if _, ok := tp.(noop.TracerProvider); ok {
		return false
	}
	typ := reflect.TypeOf(tp)
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	return typ.PkgPath() != "go.opentelemetry.io/otel/internal/global" || typ.Name() != "tracerProvider"
}
