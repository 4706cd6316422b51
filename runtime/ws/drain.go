package ws

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// DefaultDrainTimeout is the default bound of a drain, its delay
// included: within Kubernetes' default termination grace period (30 s),
// with time left for the process to exit.
const DefaultDrainTimeout = 25 * time.Second

// DrainOptions configures [Server.Drain] and [Server.ServeUntilSignal]. A
// nil *DrainOptions, like the zero value, gives the defaults.
type DrainOptions struct {
	// Delay is how long the node goes on serving once its readiness
	// fails, before it closes its listener and moves its websocket
	// clients: the time load balancers and Kubernetes take to stop
	// sending it new connections (their health-check interval times
	// their failure threshold; a few seconds on Kubernetes, where the
	// endpoint is removed while the pod gets SIGTERM). During it, plain
	// HTTP requests and the open websockets are served as usual and new
	// websocket upgrades are refused with 503, which a load balancer can
	// retry on another node. 0: none.
	Delay time.Duration

	// Timeout bounds the whole drain, Delay included (0:
	// [DefaultDrainTimeout]). Turns still running when it passes are cut,
	// the connections dropped and the conversations' leases released
	// (within [ReleaseTimeout]): a durable conversation's client sends
	// its request again on another node, which resumes it at once, and
	// runs it again there (nothing of the cut turn was saved).
	Timeout time.Duration

	// Signals start the drain in ServeUntilSignal (nil: SIGTERM and
	// os.Interrupt). The same signal again cuts the drain short, as if
	// Timeout had passed.
	Signals []os.Signal
}

func (o *DrainOptions) withDefaults() DrainOptions {
	var d DrainOptions
	if o != nil {
		d = *o
	}
	if d.Timeout <= 0 {
		d.Timeout = DefaultDrainTimeout
	}
	d.Delay = max(d.Delay, 0)
	if len(d.Signals) == 0 {
		d.Signals = []os.Signal{syscall.SIGTERM, os.Interrupt}
	}
	return d
}

// Drain takes the node out of service without losing a turn. At once,
// readiness fails ([Server.ReadinessHandler]) and new websocket upgrades
// are refused with 503; after opts.Delay, hs (when not nil) stops
// listening and finishes its HTTP requests (http.Server.Shutdown), while
// the server shuts down ([Server.Shutdown]): the requests running and
// queued finish and are saved, a request of a durable conversation that
// arrives meanwhile is left for the client to send again elsewhere, and
// every connection is closed with status 1001 (going away), on which the
// Go and JavaScript clients with reconnection resume their conversations
// through the load balancer, on another node.
//
// opts.Timeout (and ctx) bound it all: when they end first, the turns
// still running are cut and Drain returns an error matching ctx's. It
// returns nil once every connection is closed and every conversation
// saved and let go.
func (s *Server) Drain(ctx context.Context, hs *http.Server, opts *DrainOptions) error {
	o := opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()
	s.stopConns() // readiness fails; upgrades are refused
	s.opts.Logger.InfoContext(ctx, "ws: draining: readiness fails, new connections are refused",
		"delay", o.Delay, "timeout", o.Timeout, "connections", s.Connections())
	if o.Delay > 0 {
		t := time.NewTimer(o.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	s.opts.Logger.InfoContext(ctx, "ws: draining: closing the listener, finishing turns, moving clients", "connections", s.Connections())
	httpDone := make(chan error, 1)
	go func() {
		if hs == nil {
			httpDone <- nil
			return
		}
		err := hs.Shutdown(ctx)
		if err != nil {
			_ = hs.Close()
			err = fmt.Errorf("ws: drain: http server: %w", err)
		}
		httpDone <- err
	}()
	err := errors.Join(s.Shutdown(ctx), <-httpDone)
	if err != nil {
		s.opts.Logger.WarnContext(ctx, "ws: drain cut short", "after", time.Since(start), "err", err)
		return err
	}
	s.opts.Logger.InfoContext(ctx, "ws: drained", "after", time.Since(start))
	return nil
}

// ServeUntilSignal serves hs — on ln, or on hs.Addr when ln is nil — until
// one of opts.Signals (SIGTERM, os.Interrupt) arrives or ctx ends, then
// drains the node ([Server.Drain]) and returns: the whole main() of a
// replica behind a load balancer or in Kubernetes, where
// terminationGracePeriodSeconds must exceed opts.Timeout. The same signal
// again cuts the drain short.
//
// It returns nil after a complete drain; serving's error (say, an address
// in use) when the server could not serve, after draining what it
// served; the drain's error, matching context.DeadlineExceeded, when
// turns had to be cut.
func (s *Server) ServeUntilSignal(ctx context.Context, hs *http.Server, ln net.Listener, opts *DrainOptions) error {
	o := opts.withDefaults()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, o.Signals...)
	defer signal.Stop(sigs)

	served := make(chan error, 1)
	go func() {
		if ln != nil {
			served <- hs.Serve(ln)
			return
		}
		served <- hs.ListenAndServe()
	}()

	var serveErr error
	select {
	case sig := <-sigs:
		s.opts.Logger.InfoContext(ctx, "ws: signal received", "signal", sig.String())
	case <-ctx.Done():
	case serveErr = <-served:
		serveErr = fmt.Errorf("ws: serve: %w", serveErr)
		served = nil
	}

	// The drain is not cut by ctx, which may be what started it; a second
	// signal cuts it.
	dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case sig := <-sigs:
			s.opts.Logger.WarnContext(dctx, "ws: signal received again: cutting the drain short", "signal", sig.String())
			cancel()
		case <-dctx.Done():
		}
	})
	err := s.Drain(dctx, hs, &o)
	cancel()
	wg.Wait()
	if served != nil {
		if e := <-served; !errors.Is(e, http.ErrServerClosed) {
			serveErr = fmt.Errorf("ws: serve: %w", e)
		}
	}
	return errors.Join(serveErr, err)
}
