package ws

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Health checks for load balancers and orchestrators (docs/deploy.md).
//
// Readiness answers "should new clients be sent here": it fails once the
// server drains ([Server.Drain], [Server.ServeUntilSignal],
// [Server.Shutdown], [Server.Close]) and while a check of what the server
// needs (its conversation store) fails. Liveness answers "is the process
// still serving": it stays OK while draining, so that an orchestrator does
// not kill a node that is finishing its turns.

// A HealthCheck reports whether something a server needs (its
// conversation store, typically) is reachable: nil when it is. It should
// return soon after ctx ends.
type HealthCheck func(ctx context.Context) error

// DefaultHealthCheckTimeout bounds each [HealthCheck] of a readiness
// probe.
const DefaultHealthCheckTimeout = 2 * time.Second

// ErrDraining is the error of a readiness probe of a server that drains or
// has shut down.
var ErrDraining = errors.New("ws: the server is draining")

// Ready returns nil while the server accepts websocket connections and
// every check passes; [ErrDraining] once it drains or has shut down; or the
// first failing check's error, wrapped. Each check runs with ctx bounded
// by [DefaultHealthCheckTimeout].
func (s *Server) Ready(ctx context.Context, checks ...HealthCheck) error {
	s.mu.Lock()
	down := s.shutdown
	s.mu.Unlock()
	if down {
		return ErrDraining
	}
	for i, check := range checks {
		cctx, cancel := context.WithTimeout(ctx, DefaultHealthCheckTimeout)
		err := check(cctx)
		cancel()
		if err != nil {
			return fmt.Errorf("ws: readiness check %d: %w", i, err)
		}
	}
	return nil
}

// ReadinessHandler returns the handler of a readiness probe (mount it at
// /readyz, say): 200 "ready" while [Server.Ready] with checks returns nil,
// 503 otherwise, with "draining" when the server drains and "not ready"
// when a check fails. Probes are not authenticated, so the answer never
// carries a check's error, which may name hosts, users or databases: that
// is logged (at Warn) instead. Pass the conversation store's ping as a
// check (for Redis, client.Ping(ctx).Err(); for PostgreSQL, pool.Ping), so
// that a node cut off from the store stops getting new clients.
func (s *Server) ReadinessHandler(checks ...HealthCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		noStore(w)
		if err := s.Ready(r.Context(), checks...); err != nil {
			if errors.Is(err, ErrDraining) {
				http.Error(w, "draining", http.StatusServiceUnavailable)
				return
			}
			s.opts.Logger.WarnContext(r.Context(), "ws: not ready", "err", err)
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
}

// LivenessHandler returns the handler of a liveness probe (mount it at
// /livez, say): 200 "ok" whenever the process answers HTTP, draining or
// not, and whatever the store's health: restarting a node does not mend
// its store, and killing a draining one cuts its turns.
func (s *Server) LivenessHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		noStore(w)
		_, _ = w.Write([]byte("ok\n"))
	})
}

func noStore(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
}
