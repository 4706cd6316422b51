package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultRetryTimeout is how long an operation whose connection failed is
// retried on new connections when [Options.RetryTimeout] is 0.
const DefaultRetryTimeout = 10 * time.Second

// failure says whether an error is a failure of the connection, and what
// the server may have done with the request.
type failure int

const (
	// notConn: not a failure of the connection (or the caller's context
	// ended): the request is not tried again.
	notConn failure = iota
	// unsent: the server certainly did not run the request: nothing was
	// sent, no connection could be made, or the server ended the session
	// before it answered the request's first statement.
	unsent
	// unknown: the connection failed after the request was sent: the
	// server may have run it, and committed it.
	unknown
)

// classify tells what err says of the connection a request was sent on.
func classify(err error) failure {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err):
		return notConn
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		// Reaching the server failed: retry what a restart or a failover
		// explains (refused, reset, starting up, shutting down), not a
		// wrong password or database.
		if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
			if sessionEnded(pgErr.Code) {
				return unsent
			}
			return notConn
		}
		if netFailure(err) {
			return unsent
		}
		return notConn
	}
	if pgconn.SafeToRetry(err) {
		return unsent
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		if sessionEnded(pgErr.Code) {
			return unknown
		}
		return notConn
	}
	if netFailure(err) || errors.Is(err, pgconn.ErrConnClosed) {
		return unknown
	}
	return notConn
}

// sessionEnded reports whether a SQLSTATE is the server's ending a
// session or refusing one for now: admin_shutdown (a fast or smart
// shutdown, pg_terminate_backend), crash_shutdown, cannot_connect_now (a
// server starting up or shutting down), idle_session_timeout, or a
// connection exception.
func sessionEnded(code string) bool {
	switch code {
	case "57P01", "57P02", "57P03", "57P05":
		return true
	}
	return strings.HasPrefix(code, "08")
}

// netFailure reports whether err is a network failure other than a
// timeout: a refused, reset, aborted or closed connection.
func netFailure(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	ne, ok := errors.AsType[net.Error](err)
	return ok && !ne.Timeout()
}

// unsentError marks the error of a request the server certainly did not
// run, so that [classify] says unsent.
type unsentError struct{ err error }

func (e unsentError) Error() string     { return e.err.Error() }
func (e unsentError) Unwrap() error     { return e.err }
func (e unsentError) SafeToRetry() bool { return true }

// firstAnswer marks err, the error a request's first statement got, as
// unsent when it is the server ending the session: the server answers the
// statements of a request in order, and commits it only after the last,
// so a session that ended before the first was answered ran nothing.
func firstAnswer(err error) error {
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && sessionEnded(pgErr.Code) {
		return unsentError{err}
	}
	return err
}

// retrier runs requests again on new connections when their connection
// failed, as a restart or a failover of PostgreSQL makes the connections
// of a pool fail one after the other.
type retrier struct {
	pool *pgxpool.Pool
	// timeout is how long after the first failure a request is tried
	// again; negative: never.
	timeout time.Duration
	log     *slog.Logger
}

// do runs op until it succeeds, fails otherwise than by its connection,
// or the retrier's time is spent. A failure whose request may have run
// (unknown) is retried only when resend says that a second run is
// harmless: a read, a write that does the same the second time, a save
// whose version check refuses a second commit.
//
// Each failed connection is dropped by the pool, and the next attempt
// takes another; the attempts go on at once while there may be dead
// connections left in the pool, then wait, 10 ms doubling up to a second,
// as they do while no connection can be made.
func (r retrier) do(ctx context.Context, what string, resend bool, op func() error) error {
	var (
		start time.Time
		first error
		wait  = 10 * time.Millisecond
	)
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil && attempt > 1 {
			r.log.InfoContext(ctx, "pgstore: done on another connection after its connection failed",
				"op", what, "attempts", attempt, "first_err", first)
		}
		f := classify(err)
		if f == notConn || f == unknown && !resend || r.timeout < 0 {
			return err
		}
		if start.IsZero() {
			start, first = time.Now(), err
		}
		if time.Since(start) >= r.timeout {
			return fmt.Errorf("%w (tried %d times in %v)", err, attempt, time.Since(start).Round(time.Millisecond))
		}
		r.log.DebugContext(ctx, "pgstore: the connection failed; trying again on another one",
			"op", what, "attempt", attempt, "err", err)
		_, connecting := errors.AsType[*pgconn.ConnectError](err)
		if !connecting && attempt <= int(r.pool.Stat().MaxConns()) {
			continue
		}
		t := time.NewTimer(min(wait, r.timeout-time.Since(start)))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}
