package ai

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// Retry configures the retries of failed model calls ([Config.Retry]).
//
// A model call is tried again when it failed with HTTP status 429 or 5xx,
// with a transport error (a connection refused or reset, a response cut
// short), or by timing out ([Config.ModelTimeout]); never after part of
// its answer reached the client (a streamed chunk, a Thinking event),
// never when the request's own context ended, and never for other errors
// (400, 401, a bad tool call…). Between attempts it waits the server's
// Retry-After (or retry-after-ms) when the server said, otherwise an
// exponential backoff with jitter: a random wait between half and all of
// InitialBackoff, doubling per attempt up to MaxBackoff. The wait ends
// early, failing the request, when the request's context ends.
//
// A server's wait is honoured up to MaxRetryAfter (a minute by default):
// one that asks for longer (Retry-After: 999999, a date years ahead, Inf)
// fails the call at once with a [*RetryAfterError] carrying the wait it
// asked for, rather than holding the conversation that long. A
// Retry-After that is not a non-negative number of seconds nor an HTTP
// date (negative, NaN, text) is ignored: the backoff applies; a date in
// the past means no wait.
//
// langchaingo's clients report neither the HTTP status nor the headers of
// a failed call: wrap the HTTP transport of the provider's client with
// [Transport] so that the service sees them. Without it, the service
// recognises the status in the error's text ("status code: 429", as
// langchaingo's OpenAI and Anthropic clients write it), llms.Error codes
// and transport errors, and cannot honour Retry-After.
type Retry struct {
	// MaxRetries is the most times one model call is tried again; 0
	// means never.
	MaxRetries int
	// InitialBackoff is the wait before the first retry; 0 means
	// [DefaultInitialBackoff].
	InitialBackoff time.Duration
	// MaxBackoff bounds the backoff (not a server's Retry-After); 0
	// means [DefaultMaxBackoff].
	MaxBackoff time.Duration
	// MaxRetryAfter is the longest wait a server may ask for with
	// Retry-After or retry-after-ms; a call whose server asks for longer
	// fails at once with a [*RetryAfterError]. 0 (or a negative value)
	// means [DefaultMaxRetryAfter].
	MaxRetryAfter time.Duration
}

// The default backoff of [Retry].
const (
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 30 * time.Second
	// DefaultMaxRetryAfter is the longest wait a server may ask for
	// when Retry.MaxRetryAfter is 0.
	DefaultMaxRetryAfter = time.Minute
)

// A RetryAfterError is a model call that failed and whose server asked
// to be tried again after a wait longer than [Retry.MaxRetryAfter]: the
// call fails at once instead of waiting. It wraps the call's error.
type RetryAfterError struct {
	// After is the wait the server asked for; a wait beyond the range of
	// time.Duration (Inf, a date centuries ahead) is the largest
	// Duration, about 292 years.
	After time.Duration
	// Max is the MaxRetryAfter it exceeds.
	Max time.Duration
	// Err is the error of the call.
	Err error
}

// Error implements error.
func (e *RetryAfterError) Error() string {
	after := e.After.String()
	if e.After == maxDuration {
		after = "forever"
	}
	return fmt.Sprintf("not retried: the server asked to wait %s, more than MaxRetryAfter (%v): %v", after, e.Max, e.Err)
}

// Unwrap returns the error of the call.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// maxDuration is the largest time.Duration.
const maxDuration = time.Duration(math.MaxInt64)

// withDefaults returns r with its zero fields filled in.
func (r Retry) withDefaults() Retry {
	if r.MaxRetries < 0 {
		r.MaxRetries = 0
	}
	if r.InitialBackoff <= 0 {
		r.InitialBackoff = DefaultInitialBackoff
	}
	if r.MaxBackoff <= 0 {
		r.MaxBackoff = DefaultMaxBackoff
	}
	if r.MaxBackoff < r.InitialBackoff {
		r.MaxBackoff = r.InitialBackoff
	}
	if r.MaxRetryAfter <= 0 {
		r.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return r
}

// wait returns the wait before retry n (from 1) of a call that failed
// with err, as [Retry.backoff] does, or, when the server asked for a wait
// longer than MaxRetryAfter, a *RetryAfterError to fail the call with.
func (r Retry) wait(n int, rec *httpRecord, err error) (time.Duration, error) {
	if after, ok := rec.retryAfter(); ok && after > r.MaxRetryAfter {
		return 0, &RetryAfterError{After: after, Max: r.MaxRetryAfter, Err: err}
	}
	return r.backoff(n, rec), nil
}

// backoff returns the wait before retry n (from 1): the server's
// Retry-After when it sent one (at most MaxRetryAfter), else the jittered
// exponential backoff.
func (r Retry) backoff(n int, rec *httpRecord) time.Duration {
	if after, ok := rec.retryAfter(); ok {
		return min(after, r.MaxRetryAfter)
	}
	d := r.InitialBackoff
	for i := 1; i < n && d < r.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, r.MaxBackoff)
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits d, or until ctx ends (returning its error).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Transport returns an http.RoundTripper over base (nil means
// http.DefaultTransport) that lets an AI service see what langchaingo's
// clients do not report of its model calls: the HTTP status and the
// Retry-After header, so that [Retry] honours them, and Gemini's usage.
// Give it to the provider's client:
//
//	llm, err := openai.New(openai.WithHTTPClient(&http.Client{Transport: ai.Transport(nil)}))
//
// Gemini sends usageMetadata in every response of a stream, the prompt's
// count before the last response and the whole call's in the last, and
// Google's SDK under llms/googleai keeps the first, for a call that
// streams or not (it always streams): without Transport, the usage of an
// answer of more than one response is the prompt's only, no output
// tokens (the service then logs a warning, once). Through Transport the
// service counts each call with its last response's usage. The googleai
// client's HTTP client skips the API key, so Google's transport adds it
// over Transport (import "google.golang.org/api/transport/http" as
// htransport), and the key is given again for the client's cache service:
//
//	rt, err := htransport.NewTransport(ctx, ai.Transport(nil), option.WithAPIKey(key))
//	if err != nil {
//		return err
//	}
//	llm, err := googleai.New(ctx, googleai.WithAPIKey(key), googleai.WithHTTPClient(&http.Client{Transport: rt}))
//
// The vertex package's client speaks gRPC, which Transport does not see.
//
// Transport changes nothing in the requests and responses it carries, and
// calls made outside an AI service pass through it untouched.
func Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{base: base}
}

type transport struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if rec, ok := req.Context().Value(httpRecordKey{}).(*httpRecord); ok {
		rec.record(resp, err)
		if err == nil && resp.StatusCode/100 == 2 && resp.Body != nil && geminiGenerate(req.URL.Path) {
			resp.Body = &usageBody{ReadCloser: resp.Body, rec: rec}
		}
	}
	return resp, err
}

// httpRecordKey is the context key of the httpRecord of a model call.
type httpRecordKey struct{}

// httpRecord is what [Transport] saw of the last HTTP exchange of a model
// call.
type httpRecord struct {
	mu         sync.Mutex
	seen       bool
	status     int
	after      time.Duration
	hasAfter   bool
	transportE error
	// gemini is the usageMetadata of the last Gemini response read from
	// the exchange's body (see usageBody), when hasGemini.
	gemini    geminiUsage
	hasGemini bool
}

func (r *httpRecord) record(resp *http.Response, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen, r.status, r.after, r.hasAfter, r.transportE = true, 0, 0, false, err
	r.gemini, r.hasGemini = geminiUsage{}, false
	if resp == nil {
		return
	}
	r.status = resp.StatusCode
	r.after, r.hasAfter = parseRetryAfter(resp.Header, time.Now())
}

// setGeminiUsage records the usage of a Gemini response.
func (r *httpRecord) setGeminiUsage(u geminiUsage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gemini, r.hasGemini = u, true
}

// geminiUsage returns the usage of the last Gemini response of the
// exchange, if there was one.
func (r *httpRecord) geminiUsage() (geminiUsage, bool) {
	if r == nil {
		return geminiUsage{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gemini, r.hasGemini
}

// retryAfter returns the wait the server asked for, if it did.
func (r *httpRecord) retryAfter() (time.Duration, bool) {
	if r == nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.after, r.hasAfter
}

// outcome returns the recorded status and transport error.
func (r *httpRecord) outcome() (seen bool, status int, err error) {
	if r == nil {
		return false, 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen, r.status, r.transportE
}

// parseRetryAfter reads retry-after-ms (OpenAI's, in milliseconds) or
// Retry-After (seconds, or an HTTP date). A wait too long for a
// time.Duration (Inf, 1e300, a date centuries ahead) is maxDuration; a
// negative or NaN one is no wait asked for; a date in the past is 0.
func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if d, ok := parseWait(v, time.Millisecond); ok {
			return d, true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if d, ok := parseWait(v, time.Second); ok {
		return d, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true // Sub saturates at maxDuration
	}
	return 0, false
}

// parseWait parses a non-negative number of units, saturating at
// maxDuration.
func parseWait(v string, unit time.Duration) (time.Duration, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) { // out of range: ±Inf or ±0
		return 0, false
	}
	if math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if d := f * float64(unit); d < float64(maxDuration) {
		return time.Duration(d), true
	}
	return maxDuration, true
}

// statusInText finds the HTTP status langchaingo's clients (and the
// in-process llmtest.Model) write in their errors.
var statusInText = regexp.MustCompile(`status code: (\d{3})\b`)

// httpStatus returns the HTTP status of a failed model call: the one
// [Transport] saw, else the one in the error's text; 0 when unknown.
func httpStatus(err error, rec *httpRecord) int {
	if seen, status, _ := rec.outcome(); seen && status != 0 {
		return status
	}
	if err == nil {
		return 0
	}
	if m := statusInText.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// retryableStatus reports whether an HTTP status is worth another try.
func retryableStatus(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500 && status <= 599
}

// retryable reports whether a model call that failed with err may be
// tried again (see [Retry]); ctx is the request's.
func retryable(ctx context.Context, err error, rec *httpRecord) bool {
	if ctx.Err() != nil || errors.Is(err, errStopped) {
		return false
	}
	if errors.Is(err, ErrModelTimeout) {
		return true
	}
	if seen, status, terr := rec.outcome(); seen {
		if terr != nil {
			return !errors.Is(terr, context.Canceled)
		}
		if status != http.StatusOK {
			return retryableStatus(status)
		}
		// 200: the body failed to arrive whole (a cut stream, before
		// anything of it reached the client).
		return transportError(err)
	}
	if status := httpStatus(err, nil); status != 0 {
		return retryableStatus(status)
	}
	var le *llms.Error
	if errors.As(err, &le) {
		switch le.Code {
		case llms.ErrCodeRateLimit, llms.ErrCodeProviderUnavailable, llms.ErrCodeTimeout:
			return true
		}
	}
	return transportError(err)
}

// transportError reports whether err is a failure to reach the model or
// to read its whole answer.
func transportError(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	// langchaingo's OpenAI client replaces transport errors with errors
	// of its own text.
	msg := err.Error()
	for _, s := range []string{
		"network error: failed to reach API server",
		"request timeout: network operation exceeded timeout",
		"error reading streaming response",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// modelTimeoutError is the error of a model call that timed out.
type modelTimeoutError struct {
	after time.Duration
	err   error // the provider's error, if any
}

func (e *modelTimeoutError) Error() string {
	if e.err != nil {
		return fmt.Sprintf("timed out after %v: %v", e.after, e.err)
	}
	return fmt.Sprintf("timed out after %v", e.after)
}

// Is makes the error match ErrModelTimeout and context.DeadlineExceeded.
func (e *modelTimeoutError) Is(target error) bool {
	return target == ErrModelTimeout || target == context.DeadlineExceeded
}

// errModelDeadline is the cause of the context of a model call that
// timed out, telling its timeout from the caller's deadline.
var errModelDeadline = errors.New("ai: the model call's timeout expired")
