package a2aserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/a2aserver"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// TestThousandStreams: 1,000 streaming sends are open at once, each on
// a context of its own, over loopback; every stream ends on its final
// status. It logs the peak goroutines and heap.
func TestThousandStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	const n = 1000
	a := newApp(t, &a2aserver.Options{Route: "gate"}, nil)
	tr := &http.Transport{MaxIdleConnsPerHost: n, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	g0 := runtime.NumGoroutine()

	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- oneStream(client, a.srv.URL+"/", i)
		}()
	}
	for range n {
		select {
		case <-a.sig.ready:
		case <-time.After(time.Minute):
			t.Fatal("the streams did not all start")
		}
	}
	var peak runtime.MemStats
	runtime.ReadMemStats(&peak)
	g := runtime.NumGoroutine()
	t.Logf("%d streams open: %d goroutines (%d before, client and server), heap in use %.1f MiB (%.1f MiB before)",
		n, g, g0, float64(peak.HeapInuse)/(1<<20), float64(before.HeapInuse)/(1<<20))
	close(a.sig.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := a.handler.Contexts(); got != n {
		t.Fatalf("%d contexts, want %d", got, n)
	}
}

// oneStream runs one streaming send and checks it ends completed.
func oneStream(client *http.Client, url string, i int) error {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"SendStreamingMessage","params":{"message":{"messageId":"m%d","role":"ROLE_USER","parts":[{"text":"hi"}]}}}`, i, i)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	var last string
	events := 0
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			last = line
			events++
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if !strings.Contains(last, "TASK_STATE_COMPLETED") || !strings.Contains(last, "ready\\nthrough") {
		return fmt.Errorf("stream %d ended on %s (%d events)", i, last, events)
	}
	return nil
}

// BenchmarkSendRoundTrip: one 1.0 SendMessage on a context, over
// loopback: the client's and the server's allocations together.
func BenchmarkSendRoundTrip(b *testing.B) {
	benchRoundTrip(b, newApp(b, nil, nil))
}

// BenchmarkSendRoundTripDurable is BenchmarkSendRoundTrip on a router
// with an in-memory conversation store, given to the handler too: each
// task is saved when it starts and when it ends.
func BenchmarkSendRoundTripDurable(b *testing.B) {
	store := chat.NewInMemoryConversationStore(nil)
	benchRoundTrip(b, newApp(b, &a2aserver.Options{Store: store}, store))
}

func benchRoundTrip(b *testing.B, a *app) {
	client := a.srv.Client()
	first := a.rpc(b, "1.0", "ann", "SendMessage", userMessage1("hi", "", ""))
	var res struct{ Task task1 }
	if err := json.Unmarshal(first.Result, &res); err != nil {
		b.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": userMessage1("again", res.Task.ContextID, "")})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/", bytes.NewReader(body))
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("X-User", "ann")
		r, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var out rpcReply
		if err := json.NewDecoder(r.Body).Decode(&out); err != nil || out.Error != nil {
			b.Fatal(err, out.Error)
		}
		r.Body.Close()
	}
}

// BenchmarkSendHandler: one 1.0 SendMessage on a context, the handler
// alone (no network, no client): what the server spends on a send.
func BenchmarkSendHandler(b *testing.B) {
	benchHandler(b, newApp(b, nil, nil))
}

// BenchmarkSendHandlerDurable is BenchmarkSendHandler on a router with an
// in-memory conversation store, given to the handler too.
func BenchmarkSendHandlerDurable(b *testing.B) {
	store := chat.NewInMemoryConversationStore(nil)
	benchHandler(b, newApp(b, &a2aserver.Options{Store: store}, store))
}

func benchHandler(b *testing.B, a *app) {
	first := a.rpc(b, "1.0", "ann", "SendMessage", userMessage1("hi", "", ""))
	var res struct{ Task task1 }
	if err := json.Unmarshal(first.Result, &res); err != nil {
		b.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": userMessage1("again", res.Task.ContextID, "")})
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("X-User", "ann")
		w := httptest.NewRecorder()
		a.handler.ServeHTTP(w, req)
		if w.Code != http.StatusOK || bytes.Contains(w.Body.Bytes(), []byte(`"error"`)) {
			b.Fatal(w.Body.String())
		}
	}
}
