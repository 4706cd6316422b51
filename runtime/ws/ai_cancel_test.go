package ws

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// A Stop from the Go client, end to end: a streaming AI route over
// langchaingo's real OpenAI client and llmtest's strict server, whose
// answer to "Count" streams slowly.

// stopRig is the endpoint of the stop tests and what it measured.
type stopRig struct {
	llm *llmtest.Server
	ts  *testServer

	mu        sync.Mutex
	cancelled []time.Time // when a model call's response body read failed (the call was cancelled)
	arrived   []time.Time // when a model request reached the server
}

// bodyWatch records when reading a response body fails: the model call
// was cancelled.
type bodyWatch struct {
	rig *stopRig
	rt  http.RoundTripper
}

func (w bodyWatch) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := w.rt.RoundTrip(r)
	if err != nil {
		w.rig.record(&w.rig.cancelled)
		return nil, err
	}
	resp.Body = &watchedBody{ReadCloser: resp.Body, rig: w.rig}
	return resp, nil
}

type watchedBody struct {
	io.ReadCloser
	rig  *stopRig
	once sync.Once
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.once.Do(func() { b.rig.record(&b.rig.cancelled) })
	}
	return n, err
}

func (rig *stopRig) record(ts *[]time.Time) {
	rig.mu.Lock()
	*ts = append(*ts, time.Now())
	rig.mu.Unlock()
}

func (rig *stopRig) times() (cancelled, arrived []time.Time) {
	rig.mu.Lock()
	defer rig.mu.Unlock()
	return append([]time.Time(nil), rig.cancelled...), append([]time.Time(nil), rig.arrived...)
}

func newStopRig(t testing.TB) *stopRig {
	t.Helper()
	rig := &stopRig{}
	rig.llm = llmtest.NewServer(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		rig.record(&rig.arrived)
		if req.LastUserText() == "Count" {
			return llmtest.Reply{Text: strings.Repeat("and one more ", 400), ChunkDelay: 25 * time.Millisecond}, nil
		}
		return llmtest.Reply{Text: "Go on then."}, nil
	}), nil)
	t.Cleanup(rig.llm.Close)
	hc := &http.Client{Transport: bodyWatch{rig: rig, rt: http.DefaultTransport}}
	model, err := rig.llm.Client(openai.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	svc := ai.NewService("example.com/app.Counter", &ai.Config{
		Model:  model,
		Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(1000, nil)}),
		Logger: quietLogger(),
	})
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You count."}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "count", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.Response(ctx).StreamWithErrors(svc.Stream(ctx, &ai.Request{Method: method, User: req.UserMessage()}))
	}})
	router, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, p)
	if err != nil {
		t.Fatal(err)
	}
	rig.ts = startServerFor(t, router, nil, nil)
	return rig
}

// stopOnce streams "Count", stops it after its first chunk, then asks
// "Next"; it returns the chunks the handler got and when the stop was.
func stopOnce(t testing.TB, s chat.Session, chunks chan string) (seen string, stopAt time.Time) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	call := s.ChatAsync(ctx, "Count")
	seen = recv(t, chunks)
	stopAt = time.Now()
	cancel()
	recv(t, call.Done())
	if err := call.Err(); !errors.Is(err, chat.ErrCancelled) {
		t.Fatalf("the stopped call ended with %v", err)
	}
	for len(chunks) > 0 { // delivered before the stop reached the client
		seen += <-chunks
	}
	next, stopNext := context.WithTimeout(context.Background(), 20*time.Second)
	defer stopNext()
	if err := s.Chat(next, "Next"); err != nil {
		t.Fatalf("the request after the stop: %v", err)
	}
	return seen, stopAt
}

// A Stop cancels the server's model call, keeps the interrupted answer in
// memory, and the next request's model call carries it, accepted by the
// strict server.
func TestStopCancelsTheModelCallAndKeepsTheInterruptedAnswer(t *testing.T) {
	leaktest.Check(t)
	rig := newStopRig(t)
	c := dialTest(t, rig.ts)
	chunks := make(chan string, 1000)
	s, err := c.Builder().OnStream(func(chunk string) { chunks <- chunk }).Connect(t.Context(), "count")
	if err != nil {
		t.Fatal(err)
	}
	seen, stopAt := stopOnce(t, s, chunks)
	cancelled, arrived := rig.times()
	if len(cancelled) != 1 || len(arrived) != 2 {
		t.Fatalf("%d model calls cancelled, %d made; want 1 and 2", len(cancelled), len(arrived))
	}
	t.Logf("stop → model call cancelled: %.1f ms; stop → next model call: %.1f ms",
		ms(cancelled[0].Sub(stopAt)), ms(arrived[1].Sub(stopAt)))
	var next string
	for len(chunks) > 0 {
		next += <-chunks
	}
	if !strings.HasSuffix(next, "Go on then.") || strings.Contains(next, "more") {
		t.Fatalf("the chunks after the stopped call ended: %q; want the next answer only", next)
	}
	reqs := rig.llm.Requests()
	msgs := describeAll(reqs[1].Messages)
	if len(msgs) != 4 || msgs[1] != "human: Count" || msgs[3] != "human: Next" ||
		!strings.HasPrefix(msgs[2], "ai: "+seen) || !strings.HasSuffix(msgs[2], "\n\n"+ai.InterruptedMarker) {
		t.Fatalf("the next request's messages: %q (the client saw %q)", msgs, seen)
	}
}

// BenchmarkStopToNextRequest measures, with a slow streaming model behind
// the websocket, the time from a Stop (the Go client's context cancelled)
// to the server's model call being cancelled (stop-ms) and to the next
// request's model call (next-ms). Issue 33's goal: both within 100 ms.
func BenchmarkStopToNextRequest(b *testing.B) {
	rig := newStopRig(b)
	c := dialTest(b, rig.ts)
	chunks := make(chan string, 1000)
	s, err := c.Builder().OnStream(func(chunk string) {
		if !strings.Contains("Go on then.", chunk) {
			chunks <- chunk
		}
	}).Connect(b.Context(), "count")
	if err != nil {
		b.Fatal(err)
	}
	var stopTotal, nextTotal time.Duration
	for i := 0; b.Loop(); i++ {
		_, stopAt := stopOnce(b, s, chunks)
		cancelled, arrived := rig.times()
		stopTotal += cancelled[i].Sub(stopAt)
		nextTotal += arrived[2*i+1].Sub(stopAt)
	}
	b.ReportMetric(ms(stopTotal)/float64(b.N), "stop-ms")
	b.ReportMetric(ms(nextTotal)/float64(b.N), "next-ms")
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// describeAll renders messages as "role: text".
func describeAll(msgs []llms.MessageContent) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		var parts []string
		for _, p := range m.Parts {
			if tc, ok := p.(llms.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		out[i] = string(m.Role) + ": " + strings.Join(parts, "")
	}
	return out
}
