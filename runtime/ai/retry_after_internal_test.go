package ai

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// throttlingServer is a loopback OpenAI-compatible server that answers
// the first requests with a 429 and the headers it is given, and passes
// the others on to a scripted llmtest server.
type throttlingServer struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header // for the next 429s, in order
	calls   int
}

func newThrottlingServer(t *testing.T, next *llmtest.Server, headers ...http.Header) *throttlingServer {
	t.Helper()
	u, err := url.Parse(next.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.Transport = next.HTTPClient().Transport
	s := &throttlingServer{headers: headers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.calls++
		var h http.Header
		if len(s.headers) > 0 {
			h, s.headers = s.headers[0], s.headers[1:]
		}
		s.mu.Unlock()
		if h == nil {
			proxy.ServeHTTP(w, r)
			return
		}
		for k, v := range h {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *throttlingServer) served() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// TestRetryAfterCap: a server's Retry-After (or retry-after-ms) is waited
// up to MaxRetryAfter; a longer wait, or one beyond what a time.Duration
// holds (Inf, 1e300, a date centuries ahead), fails the call at once with
// a RetryAfterError carrying the wait; a malformed one (negative, NaN) is
// ignored for the backoff, through langchaingo's real OpenAI client and
// Transport against a loopback server.
func TestRetryAfterCap(t *testing.T) {
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	farDate := time.Now().AddDate(300, 0, 0).UTC().Format(http.TimeFormat)
	pastDate := time.Now().AddDate(-1, 0, 0).UTC().Format(http.TimeFormat)
	inHours := time.Now().Add(3 * time.Hour).UTC().Format(http.TimeFormat)
	for _, c := range []struct {
		name     string
		max      time.Duration // MaxRetryAfter; 0 the default
		h        http.Header
		wait     time.Duration // the wait before the retry; -1 a backoff
		after    time.Duration // when the call fails at once: the wait asked for
		afterMin time.Duration // or at least this
	}{
		{name: "seconds", h: hdr("Retry-After", "2"), wait: 2 * time.Second},
		{name: "ms", h: hdr("Retry-After-Ms", "1500", "Retry-After", "2"), wait: 1500 * time.Millisecond},
		{name: "at the cap", h: hdr("Retry-After", "60"), wait: time.Minute},
		{name: "past date", h: hdr("Retry-After", pastDate), wait: 0},
		{name: "negative", h: hdr("Retry-After", "-5"), wait: -1},
		{name: "NaN", h: hdr("Retry-After", "NaN"), wait: -1},
		{name: "text", h: hdr("Retry-After", "later"), wait: -1},
		{name: "huge", h: hdr("Retry-After", "999999"), after: 999999 * time.Second},
		{name: "Inf", h: hdr("Retry-After", "Inf"), after: maxDuration},
		{name: "1e300", h: hdr("Retry-After", "1e300"), after: maxDuration},
		{name: "1e400", h: hdr("Retry-After", "1e400"), after: maxDuration},
		{name: "ms 1e30", h: hdr("Retry-After-Ms", "1e30"), after: maxDuration},
		{name: "date centuries ahead", h: hdr("Retry-After", farDate), after: maxDuration},
		{name: "date hours ahead", h: hdr("Retry-After", inHours), afterMin: 2 * time.Hour},
		{name: "over a custom cap", max: 10 * time.Second, h: hdr("Retry-After", "30"), after: 30 * time.Second},
		{name: "under a custom cap", max: 5 * time.Minute, h: hdr("Retry-After", "120"), wait: 2 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			next := llmtest.NewServer(llmtest.Sequence(llmtest.Reply{Text: "Hello."}), nil)
			t.Cleanup(next.Close)
			front := newThrottlingServer(t, next, c.h)
			llm, err := next.Client(openai.WithBaseURL(front.URL),
				openai.WithHTTPClient(&http.Client{Transport: Transport(front.Client().Transport)}))
			if err != nil {
				t.Fatal(err)
			}
			f := &retryFixture{srv: next, svc: NewService("example.com/app.Assistant", &Config{Model: llm,
				Retry: Retry{MaxRetries: 2, InitialBackoff: 100 * time.Millisecond, MaxRetryAfter: c.max}})}
			f.svc.sleep = func(ctx context.Context, d time.Duration) error {
				f.mu.Lock()
				f.waits = append(f.waits, d)
				f.mu.Unlock()
				return ctx.Err()
			}
			r, err := f.svc.Chat(beginTest(t), &Request{Method: &retryMethod, User: "hi"})
			waits := f.waited()
			if c.after == 0 && c.afterMin == 0 {
				if err != nil || r.Content != "Hello." || front.served() != 2 || len(waits) != 1 {
					t.Fatalf("reply %+v, err %v, %d calls, waits %v", r, err, front.served(), waits)
				}
				switch {
				case c.wait >= 0 && waits[0] != c.wait:
					t.Fatalf("waited %v, want %v", waits[0], c.wait)
				case c.wait < 0 && (waits[0] < 50*time.Millisecond || waits[0] > 100*time.Millisecond):
					t.Fatalf("waited %v, want a backoff in [50ms, 100ms]", waits[0])
				}
				return
			}
			var ra *RetryAfterError
			if !errors.As(err, &ra) || front.served() != 1 || len(waits) != 0 {
				t.Fatalf("err %v, %d calls, waits %v; want a RetryAfterError at once", err, front.served(), waits)
			}
			wantMax := c.max
			if wantMax == 0 {
				wantMax = DefaultMaxRetryAfter
			}
			if c.after != 0 && ra.After != c.after || c.afterMin != 0 && ra.After < c.afterMin || ra.Max != wantMax {
				t.Fatalf("RetryAfterError{After: %v, Max: %v}, want After %v (at least %v), Max %v", ra.After, ra.Max, c.after, c.afterMin, wantMax)
			}
			if !strings.Contains(err.Error(), "429") || !strings.Contains(err.Error(), "MaxRetryAfter") || ra.Err == nil {
				t.Fatalf("error %q does not say what happened", err)
			}
		})
	}
}

func TestParseRetryAfterEdges(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"1e300"}}, maxDuration, true},
		{http.Header{"Retry-After": {"+Inf"}}, maxDuration, true},
		{http.Header{"Retry-After": {"-Inf"}}, 0, false},
		{http.Header{"Retry-After": {"-1"}}, 0, false},
		{http.Header{"Retry-After": {"nan"}}, 0, false},
		{http.Header{"Retry-After": {" 7 "}}, 7 * time.Second, true},
		{http.Header{"Retry-After": {"9223372036"}}, 9223372036 * time.Second, true},
		{http.Header{"Retry-After": {"9223372037"}}, maxDuration, true},
		{http.Header{"Retry-After-Ms": {"1e30"}}, maxDuration, true},
		{http.Header{"Retry-After-Ms": {"-3"}, "Retry-After": {"4"}}, 4 * time.Second, true},
		{http.Header{"Retry-After": {"Fri, 31 Dec 9999 23:59:59 GMT"}}, maxDuration, true},
		{http.Header{"Retry-After": {"Mon, 01 Jan 1900 00:00:00 GMT"}}, 0, true},
	} {
		got, ok := parseRetryAfter(tc.h, now)
		if got != tc.want || ok != tc.ok || got < 0 {
			t.Errorf("%v: %v %v, want %v %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
	if maxDuration != math.MaxInt64 {
		t.Fatal("maxDuration")
	}
}
