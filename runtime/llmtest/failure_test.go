package llmtest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// headerRecorder is an http.RoundTripper recording the status and headers
// of each response.
type headerRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []*http.Response
	errs []error
}

func (h *headerRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.base.RoundTrip(req)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, resp)
	h.errs = append(h.errs, err)
	return resp, err
}

// TestServerRetryAfterAndDisconnect pins what a client sees of a scripted
// 429 with RetryAfter (both headers) and of a dropped connection, through
// langchaingo's real OpenAI client, which reports neither the headers nor
// the transport error itself.
func TestServerRetryAfterAndDisconnect(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Sequence(
		llmtest.Reply{Status: 429, ErrorMessage: "slow down", RetryAfter: 1500 * time.Millisecond},
		llmtest.Reply{Disconnect: true},
		llmtest.Reply{Text: "ok"},
	), nil)
	t.Cleanup(srv.Close)
	rec := &headerRecorder{base: srv.HTTPClient().Transport}
	llm, err := srv.Client(openai.WithHTTPClient(&http.Client{Transport: rec}))
	if err != nil {
		t.Fatal(err)
	}
	msgs := []llms.MessageContent{human("hi")}

	_, err = llm.GenerateContent(context.Background(), msgs)
	mustContain(t, err, "API returned unexpected status code: 429: slow down")
	resp := rec.seen[0]
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || resp.Header.Get("Retry-After-Ms") != "1500" {
		t.Fatalf("429: status %d, Retry-After %q, retry-after-ms %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"))
	}

	_, err = llm.GenerateContent(context.Background(), msgs)
	mustContain(t, err, "network error")
	if rec.seen[1] != nil || !errors.Is(rec.errs[1], io.EOF) {
		t.Fatalf("disconnect: response %v, transport error %v (want io.EOF)", rec.seen[1], rec.errs[1])
	}

	resp2, err := llm.GenerateContent(context.Background(), msgs)
	if c := choice0(t, resp2, err); c.Content != "ok" || srv.Calls() != 3 {
		t.Fatalf("after the failures: %q, %d calls", c.Content, srv.Calls())
	}
}

func TestModelRetryAfterAndDisconnect(t *testing.T) {
	m := llmtest.NewModel(llmtest.Sequence(
		llmtest.Reply{Status: 503, RetryAfter: time.Second},
		llmtest.Reply{Disconnect: true, Status: 500},
		llmtest.Reply{RetryAfter: -time.Second},
	), nil)
	msgs := []llms.MessageContent{human("hi")}
	_, err := m.GenerateContent(context.Background(), msgs)
	var se *llmtest.StatusError
	if !errors.As(err, &se) || se.StatusCode != 503 || se.RetryAfter != time.Second {
		t.Fatalf("503: %v", err)
	}
	_, err = m.GenerateContent(context.Background(), msgs)
	if !errors.Is(err, llmtest.ErrDisconnected) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("disconnect: %v", err)
	}
	_, err = m.GenerateContent(context.Background(), msgs)
	mustContain(t, err, "negative Delay, ChunkDelay or RetryAfter")
}
