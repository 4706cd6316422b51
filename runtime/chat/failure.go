package chat

import (
	"errors"
	"fmt"
)

// A Failure is the reason a request ended with a Failed terminator. Clients
// get it as the error of Chat and Send; match it with errors.As, or with
// errors.Is against the Err* failures below.
type Failure struct {
	// Reason is the short reason sent on the wire: RouteNotFound,
	// SessionNotActive, BadRequest, Forbidden, ServerError,
	// StreamingFailure, or one a transport adds.
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
)

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
