package agui_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/agui"
)

// TestWriteTimeout: a client that never reads has its run cancelled
// after WriteTimeout although the run's buffer is far from full, and the
// handler does not hang on it.
func TestWriteTimeout(t *testing.T) {
	a := newApp(t, &agui.Options{Route: "big", WriteTimeout: 200 * time.Millisecond})
	conn, err := net.Dial("tcp", a.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A small receive buffer: the server's writes block sooner, whatever
	// the machine's TCP buffer sizes.
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	body := input("t", "r", "x")
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: agui\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// It never reads.
	select {
	case slow := <-a.sig.cancelled:
		if !slow {
			t.Fatal("the run was not cancelled with ErrSlowClient")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the run of a client that does not read was not stopped")
	}
}

// TestThousandConcurrentStreams: 1,000 runs over loopback, all open at
// once, each on its own thread and connection, stream to their end in
// order; afterwards the threads end, and the goroutines (leaktest) and
// the heap come back to their baseline. It logs the peak heap.
func TestThousandConcurrentStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 streams: not in -short")
	}
	const n = 1000
	a := newApp(t, &agui.Options{Route: "gate", ThreadTimeout: 50 * time.Millisecond})
	baseline := heap()
	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, a.srv.URL, strings.NewReader(input(fmt.Sprintf("t%d", i), "r", "go")))
			if err != nil {
				errs <- err
				return
			}
			res, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			if err != nil {
				errs <- err
				return
			}
			got := string(b)
			if !strings.Contains(got, `"delta":"open"`) || !strings.Contains(got, `"delta":"c"`) || !strings.HasPrefix(got[strings.LastIndex(strings.TrimSpace(got), "\n")+1:], `data: {"type":"RUN_FINISHED"`) {
				errs <- fmt.Errorf("run %d: %s", i, got)
			}
		})
	}
	deadline := time.After(60 * time.Second)
	for range n {
		select {
		case <-a.sig.opened:
		case err := <-errs:
			t.Fatal(err)
		case <-deadline:
			t.Fatal("the 1,000 runs did not all open")
		}
	}
	peak := heap()
	goroutines := runtime.NumGoroutine()
	close(a.sig.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	tr.CloseIdleConnections()
	for end := time.Now().Add(10 * time.Second); a.handler.Threads() > 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	if th := a.handler.Threads(); th != 0 {
		t.Errorf("%d threads left after their idle timeout", th)
	}
	// What the streams held comes back: the connections' goroutines end,
	// and sync.Pool's buffers go at the second collection after their
	// last use. The runtime keeps what it keeps for goroutines it ran
	// (their descriptors): an eighth of the peak is allowed for it.
	bound := baseline + (peak-baseline)/8
	after := heap()
	for end := time.Now().Add(3 * time.Second); after > bound && time.Now().Before(end); after = heap() {
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("1,000 open streams: heap %.1f MB (baseline %.1f MB, after %.1f MB), %d goroutines", mb(peak), mb(baseline), mb(after), goroutines)
	if after > bound {
		t.Errorf("the heap did not come back: %.1f MB after, %.1f MB before, %.1f MB at the peak", mb(after), mb(baseline), mb(peak))
	}
}

// heap returns the bytes in use on the heap after a collection.
func heap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }
