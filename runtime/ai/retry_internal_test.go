package ai

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// retryFixture is a service on langchaingo's real OpenAI client against a
// scripted server, whose waits between retries are recorded, not slept.
type retryFixture struct {
	srv   *llmtest.Server
	svc   *Service
	mu    sync.Mutex
	waits []time.Duration
}

func newRetryFixture(t *testing.T, script llmtest.Script, transport bool, cfgp *Config) *retryFixture {
	cfg := *cfgp
	t.Helper()
	f := &retryFixture{srv: llmtest.NewServer(script, nil)}
	t.Cleanup(f.srv.Close)
	var opts []openai.Option
	if transport {
		opts = append(opts, openai.WithHTTPClient(&http.Client{Transport: Transport(f.srv.HTTPClient().Transport)}))
	}
	llm, err := f.srv.Client(opts...)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model = llm
	f.svc = NewService("example.com/app.Assistant", &cfg)
	f.svc.sleep = func(ctx context.Context, d time.Duration) error {
		f.mu.Lock()
		f.waits = append(f.waits, d)
		f.mu.Unlock()
		return ctx.Err()
	}
	return f
}

func (f *retryFixture) waited() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.waits)
}

var retryMethod = Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}

func beginTest(t *testing.T) context.Context {
	t.Helper()
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = chat.End(ctx) })
	return ctx
}

// memoryOf returns the remembered messages of the test's turn, described.
func memoryOf(t *testing.T, ctx context.Context, s *Service) []string {
	t.Helper()
	id, _ := chat.ID(ctx)
	m, err := s.Memory().Memory(ctx, id+"#example.com/app.Assistant.Ask")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := m.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, msg := range msgs {
		out = append(out, string(msg.Role)+": "+msg.Parts[0].(llms.TextContent).Text)
	}
	return out
}

// TestRetry429Then200: a 429 then a 200 is one successful call, waiting
// the server's Retry-After when Transport lets the service see it, and a
// jittered backoff otherwise; the turn is remembered once.
func TestRetry429Then200(t *testing.T) {
	for _, transport := range []bool{true, false} {
		t.Run(map[bool]string{true: "Transport", false: "error-text"}[transport], func(t *testing.T) {
			f := newRetryFixture(t, llmtest.Sequence(
				llmtest.Reply{Status: 429, ErrorMessage: "Rate limit reached", RetryAfter: 7 * time.Second},
				llmtest.Reply{Text: "Hello."},
			), transport, &Config{Retry: Retry{MaxRetries: 3, InitialBackoff: 100 * time.Millisecond}})
			ctx := beginTest(t)
			r, err := f.svc.Chat(ctx, &Request{Method: &retryMethod, User: "hi"})
			if err != nil || r.Content != "Hello." || r.ModelCalls != 1 || f.srv.Calls() != 2 {
				t.Fatalf("reply %+v, err %v, %d server calls", r, err, f.srv.Calls())
			}
			w := f.waited()
			if len(w) != 1 {
				t.Fatalf("waits %v", w)
			}
			if transport && w[0] != 7*time.Second {
				t.Fatalf("waited %v, want the Retry-After of 7s", w[0])
			}
			if !transport && (w[0] < 50*time.Millisecond || w[0] > 100*time.Millisecond) {
				t.Fatalf("waited %v, want a backoff in [50ms, 100ms]", w[0])
			}
			if got := memoryOf(t, ctx, f.svc); !slices.Equal(got, []string{"system: You are terse.", "human: hi", "ai: Hello."}) {
				t.Fatalf("memory %q", got)
			}
		})
	}
}

// TestRetryBackoffAndLimit: 5xx and dropped connections are retried with
// a doubling, jittered backoff up to MaxRetries; the last error says how
// many attempts were made.
func TestRetryBackoffAndLimit(t *testing.T) {
	for _, transport := range []bool{true, false} {
		t.Run(map[bool]string{true: "Transport", false: "error-text"}[transport], func(t *testing.T) {
			testRetryBackoffAndLimit(t, transport)
		})
	}
}

func testRetryBackoffAndLimit(t *testing.T, transport bool) {
	f := newRetryFixture(t, llmtest.Sequence(
		llmtest.Reply{Status: 503, ErrorMessage: "overloaded"},
		llmtest.Reply{Disconnect: true},
		llmtest.Reply{Status: 500},
		llmtest.Reply{Status: 502},
		llmtest.Reply{Text: "never"},
	), transport, &Config{Retry: Retry{MaxRetries: 3, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond}})
	ctx := beginTest(t)
	_, err := f.svc.Chat(ctx, &Request{Method: &retryMethod, User: "hi"})
	if err == nil || !strings.Contains(err.Error(), "attempt 4 of 4") || !strings.Contains(err.Error(), "status code: 502") {
		t.Fatalf("err %v", err)
	}
	if f.srv.Calls() != 4 {
		t.Fatalf("%d calls", f.srv.Calls())
	}
	w := f.waited()
	bounds := [][2]time.Duration{{50, 100}, {100, 200}, {150, 300}}
	if len(w) != 3 {
		t.Fatalf("waits %v", w)
	}
	for i, b := range bounds {
		if w[i] < b[0]*time.Millisecond || w[i] > b[1]*time.Millisecond {
			t.Fatalf("wait %d = %v, want in [%vms, %vms]", i+1, w[i], b[0], b[1])
		}
	}
	if got := memoryOf(t, ctx, f.svc); len(got) != 0 {
		t.Fatalf("memory %q", got)
	}
}

// TestNoRetry: a 400 is not retried, nor is a call whose stream reached
// the client before it was cut; a 429 before the stream began is.
func TestNoRetry(t *testing.T) {
	f := newRetryFixture(t, llmtest.Sequence(
		llmtest.Reply{Status: 400, ErrorMessage: "bad tool schema"},
		llmtest.Reply{Status: 429},
		llmtest.Reply{Text: "Once upon a time", Err: errors.New("cut")},
		llmtest.Reply{Text: "never"},
	), true, &Config{Retry: Retry{MaxRetries: 3}})
	ctx := beginTest(t)
	_, err := f.svc.Chat(ctx, &Request{Method: &retryMethod, User: "hi"})
	if err == nil || !strings.Contains(err.Error(), "400") || f.srv.Calls() != 1 {
		t.Fatalf("400: err %v, %d calls", err, f.srv.Calls())
	}
	var chunks []string
	for chunk, err := range f.svc.Stream(ctx, &Request{Method: &retryMethod, User: "a story"}) {
		if err != nil {
			if !strings.Contains(err.Error(), "error reading streaming response") {
				t.Fatalf("stream err %v", err)
			}
			break
		}
		chunks = append(chunks, chunk)
	}
	if f.srv.Calls() != 3 || strings.Join(chunks, "") != "Once upon a time" || len(f.waited()) != 1 {
		t.Fatalf("%d calls, chunks %q, waits %v", f.srv.Calls(), chunks, f.waited())
	}
}

// TestRetryTimeout: an attempt past ModelTimeout is retried.
func TestRetryTimeout(t *testing.T) {
	f := newRetryFixture(t, llmtest.Sequence(
		llmtest.Reply{Text: "late", Delay: time.Hour},
		llmtest.Reply{Text: "Hello."},
	), false, &Config{
		// The timeout bounds each attempt, the second one too: it must be
		// long enough for a real call on a loaded machine (20 ms was not).
		ModelTimeout: 2 * time.Second,
		Retry:        Retry{MaxRetries: 1},
	})
	ctx := beginTest(t)
	r, err := f.svc.Chat(ctx, &Request{Method: &retryMethod, User: "hi"})
	if err != nil || r.Content != "Hello." || f.srv.Calls() != 2 {
		t.Fatalf("reply %+v, err %v, %d calls", r, err, f.srv.Calls())
	}
}

// TestRetryWaitEndsWithTheRequest: a request whose context ends during
// the wait fails with the context's error.
func TestRetryWaitEndsWithTheRequest(t *testing.T) {
	f := newRetryFixture(t, llmtest.Sequence(
		llmtest.Reply{Status: 429, RetryAfter: 50 * time.Second}, // under DefaultMaxRetryAfter
		llmtest.Reply{Text: "never"},
	), true, &Config{Retry: Retry{MaxRetries: 1}})
	f.svc.sleep = sleep
	ctx := beginTest(t)
	rctx, cancel := context.WithCancel(ctx)
	go func() {
		for f.srv.Calls() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := f.svc.Chat(rctx, &Request{Method: &retryMethod, User: "hi"})
	if !errors.Is(err, context.Canceled) || f.srv.Calls() != 1 {
		t.Fatalf("err %v, %d calls", err, f.srv.Calls())
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond, true},
		{http.Header{"Retry-After": {"Wed, 01 Jan 2025 00:00:10 GMT"}}, 10 * time.Second, true},
		{http.Header{"Retry-After": {"Tue, 31 Dec 2024 00:00:10 GMT"}}, 0, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{}, 0, false},
	} {
		got, ok := parseRetryAfter(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v: %v %v, want %v %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}
