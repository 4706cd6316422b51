package chat

import (
	"context"
	"errors"
	"fmt"
)

// A Failure is the reason a request ended with a Failed terminator. Clients
// get it as the error of Chat and Send; match it with errors.As, or with
// errors.Is against the Err* failures below.
type Failure struct {
	// Reason is the short reason sent on the wire: RouteNotFound,
	// SessionNotActive, BadRequest, Forbidden, ServerError,
	// StreamingFailure, Cancelled, or one a transport adds.
	Reason string
	// Err is the cause, on the server only: it is logged, never sent.
	Err error
}

// The failure reasons of the protocol, for errors.Is.
var (
	ErrRouteNotFound    = &Failure{Reason: "RouteNotFound"}
	ErrSessionNotActive = &Failure{Reason: "SessionNotActive"}
	ErrBadRequest       = &Failure{Reason: "BadRequest"}
	ErrForbidden        = &Failure{Reason: "Forbidden"}
	ErrServerError      = &Failure{Reason: "ServerError"}
	ErrStreamingFailure = &Failure{Reason: "StreamingFailure"}
	// ErrCancelled is the failure of a request the client stopped: its
	// context was cancelled (the local client), a Cancel frame named it
	// or an interrupting request replaced it (the websocket transport).
	// It is not an error of the server: clients report it as a stop, and
	// the chat memory keeps the interrupted turn (see [Cancelled]).
	ErrCancelled = &Failure{Reason: "Cancelled"}
)

// Cancelled reports whether ctx, the context of a request, ended because
// the client stopped the request: it was cancelled with a cause matching
// [ErrCancelled]. Transports cancel a stopped request's context so
// (context.WithCancelCause); a context that ended otherwise (its
// deadline passed, the connection or the session ended) is not a stop.
// Services call it to keep an interrupted turn in memory rather than
// drop it.
func Cancelled(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrCancelled)
}

// failureOf returns the failure of a request that ended with err (not
// nil) on ctx: Cancelled when the client stopped it, else the failure err
// maps to (reasonOf).
func failureOf(ctx context.Context, err error) *Failure {
	if Cancelled(ctx) {
		return fail(ErrCancelled, err)
	}
	return reasonOf(err)
}

func (f *Failure) Error() string {
	if f.Err != nil {
		return fmt.Sprintf("chat: request failed: %s: %v", f.Reason, f.Err)
	}
	return "chat: request failed: " + f.Reason
}

// Unwrap returns the cause.
func (f *Failure) Unwrap() error { return f.Err }

// Is reports whether target is a Failure with the same reason.
func (f *Failure) Is(target error) bool {
	t, ok := target.(*Failure)
	return ok && t.Reason == f.Reason
}

func fail(reason *Failure, err error) *Failure {
	return &Failure{Reason: reason.Reason, Err: err}
}

// A BadRequestError reports request data that does not fit a route's
// parameter: the request fails with BadRequest.
type BadRequestError struct {
	Param string // the parameter (request data key)
	Err   error
}

func (e *BadRequestError) Error() string {
	return fmt.Sprintf("chat: parameter %q: %v", e.Param, e.Err)
}

// Unwrap returns the cause.
func (e *BadRequestError) Unwrap() error { return e.Err }

// A StreamError reports that a streamed reply failed after it started: the
// request fails with StreamingFailure.
type StreamError struct{ Err error }

func (e *StreamError) Error() string { return "chat: stream failed: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *StreamError) Unwrap() error { return e.Err }

// reasonOf maps an unhandled route error to its failure.
func reasonOf(err error) *Failure {
	var f *Failure
	var bad *BadRequestError
	var stream *StreamError
	switch {
	case errors.As(err, &f):
		return fail(f, err)
	case errors.As(err, &bad):
		return fail(ErrBadRequest, err)
	case errors.As(err, &stream):
		return fail(ErrStreamingFailure, err)
	}
	return fail(ErrServerError, err)
}
