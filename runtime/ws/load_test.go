package ws

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/chatscopes/chatgen/runtime/chat"
)

// The load test and the memory measurement take a while: they run when
// WS_LOAD=1 is set (WS_LOAD=1 go test ./runtime/ws -run 'TestLoad|TestIdleMemory' -v),
// and the load as BenchmarkLoad1000Sessions (make bench).

func needLoadEnv(t *testing.T) {
	if os.Getenv("WS_LOAD") == "" {
		t.Skip("set WS_LOAD=1 to run the load test")
	}
}

// loadResult is the outcome of one load run.
type loadResult struct {
	turns    int
	elapsed  time.Duration
	p50, p99 time.Duration
	cpu      time.Duration // user+system CPU time of the process during the run
}

func (r loadResult) perSecond() float64 { return float64(r.turns) / r.elapsed.Seconds() }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func summarize(lat []time.Duration, elapsed, cpu time.Duration) loadResult {
	slices.Sort(lat)
	return loadResult{
		cpu:     cpu,
		turns:   len(lat),
		elapsed: elapsed,
		p50:     lat[len(lat)*50/100],
		p99:     lat[len(lat)*99/100],
	}
}

// echoRouter has the one route of the load test.
func echoRouter(tb testing.TB) *chat.Router {
	p := chat.NewPackage("github.com/chatscopes/chatgen/runtime/ws/load")
	p.AddRoute(chat.RouteSpec{Name: "echo", Default: true, Handle: func(ctx context.Context, req *chat.RouteRequest) error {
		return chat.SendValue(ctx, req.UserMessage())
	}})
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, p)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// loadChatscopes runs sessions Go clients (one connection and one session
// each) against the endpoint, each chatting turns times with the echo
// route.
func loadChatscopes(tb testing.TB, sessions, turns int) loadResult {
	router := echoRouter(tb)
	srv := Handler(router, WithLogger(quietLogger()), WithMaxQueued(4))
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + RoutesPath
	ctx := context.Background()
	clients := make([]*Client, sessions)
	ss := make([]chat.Session, sessions)
	for i := range clients {
		c, err := Dial(ctx, url, WithClientLogger(quietLogger()))
		if err != nil {
			tb.Fatal(err)
		}
		clients[i] = c
		if ss[i], err = c.Builder().Connect(ctx, ""); err != nil {
			tb.Fatal(err)
		}
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	msg := "hello, this is a chat turn of a typical length"
	lats := make([][]time.Duration, sessions)
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), cpuTime()
	for i := range sessions {
		wg.Go(func() {
			lat := make([]time.Duration, 0, turns)
			for range turns {
				t0 := time.Now()
				if err := ss[i].Chat(ctx, msg); err != nil {
					tb.Error(err)
					return
				}
				lat = append(lat, time.Since(t0))
			}
			lats[i] = lat
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	return summarize(slices.Concat(lats...), elapsed, cpuTime()-cpu0)
}

// loadRawEcho does the same round trips against a bare coder/websocket
// echo server: the ceiling of the transport.
func loadRawEcho(tb testing.TB, conns, turns int) loadResult {
	var handlers sync.WaitGroup
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wc, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		handlers.Add(1)
		defer handlers.Done()
		defer wc.CloseNow()
		ctx := context.Background()
		for {
			typ, b, err := wc.Read(ctx)
			if err != nil {
				return
			}
			if err := wc.Write(ctx, typ, b); err != nil {
				return
			}
		}
	}))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	ctx := context.Background()
	wcs := make([]*websocket.Conn, conns)
	for i := range wcs {
		wc, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			tb.Fatal(err)
		}
		wcs[i] = wc
	}
	msg := []byte(`{"type":"ChatRouteMessage","chatId":"go-1","scopeId":"3f1c7a52-9d7e-4c55-8c0a-0d51f6c1e2ab","data":{"userMessage":"hello, this is a chat turn of a typical length"},"requestId":1}`)
	lats := make([][]time.Duration, conns)
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), cpuTime()
	for i := range conns {
		wg.Go(func() {
			lat := make([]time.Duration, 0, turns)
			for range turns {
				t0 := time.Now()
				if err := wcs[i].Write(ctx, websocket.MessageText, msg); err != nil {
					tb.Error(err)
					return
				}
				if _, _, err := wcs[i].Read(ctx); err != nil {
					tb.Error(err)
					return
				}
				lat = append(lat, time.Since(t0))
			}
			lats[i] = lat
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, wc := range wcs {
		wc.Close(websocket.StatusNormalClosure, "")
	}
	handlers.Wait()
	return summarize(slices.Concat(lats...), elapsed, cpuTime()-cpu0)
}

// BenchmarkLoad1000Sessions: 1,000 concurrent sessions chatting with an
// echo route, and a raw coder/websocket echo server doing the same round
// trips. b.N is the number of turns (round trips) in all.
func BenchmarkLoad1000Sessions(b *testing.B) {
	const sessions = 1000
	for _, kind := range []string{"chatscopes", "raw-echo"} {
		b.Run(kind, func(b *testing.B) {
			turns := max(1, b.N/sessions)
			var r loadResult
			if kind == "chatscopes" {
				r = loadChatscopes(b, sessions, turns)
			} else {
				r = loadRawEcho(b, sessions, turns)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(r.perSecond(), "turns/s")
			b.ReportMetric(float64(r.p50.Microseconds()), "p50-µs")
			b.ReportMetric(float64(r.p99.Microseconds()), "p99-µs")
			b.ReportMetric(float64(r.cpu.Microseconds())/float64(r.turns), "cpu-µs/turn")
		})
	}
}

// TestLoad prints the side-by-side figures of the issue (WS_LOAD=1).
func TestLoad(t *testing.T) {
	needLoadEnv(t)
	const sessions = 1000
	turns := 30
	if s := os.Getenv("WS_LOAD_TURNS"); s != "" {
		turns, _ = strconv.Atoi(s)
	}
	// Warm up, then alternate to even out the machine's noise.
	loadRawEcho(t, 100, 10)
	loadChatscopes(t, 100, 10)
	var ws, raw []loadResult
	for range 2 {
		raw = append(raw, loadRawEcho(t, sessions, turns))
		ws = append(ws, loadChatscopes(t, sessions, turns))
	}
	best := func(rs []loadResult) loadResult {
		return slices.MaxFunc(rs, func(a, b loadResult) int {
			return int(a.perSecond() - b.perSecond())
		})
	}
	w, r := best(ws), best(raw)
	t.Logf("%d sessions x %d turns (GOMAXPROCS %d)", sessions, turns, runtime.GOMAXPROCS(0))
	t.Logf("%-12s %12s %10s %10s", "", "turns/s", "p50", "p99")
	t.Logf("%-12s %12.0f %10v %10v", "chatscopes", w.perSecond(), w.p50.Round(time.Microsecond), w.p99.Round(time.Microsecond))
	t.Logf("%-12s %12.0f %10v %10v", "raw echo", r.perSecond(), r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond))
	t.Logf("chatscopes / raw echo throughput: %.0f%%", 100*w.perSecond()/r.perSecond())
}

// TestIdleMemory measures the server's memory per idle connected session
// (WS_LOAD=1). The clients run in a child process, so that only the
// server's memory is counted: one connection per session (a browser tab
// each), then many sessions on one connection.
func TestIdleMemory(t *testing.T) {
	needLoadEnv(t)
	const n = 2000
	for _, mode := range []struct {
		name  string
		conns int
		chat  bool
	}{
		{"one connection per session", n, false},
		{"one connection per session, after a turn", n, true},
		{"50 sessions per connection", n / 50, false},
	} {
		router := echoRouter(t)
		srv := Handler(router, WithLogger(quietLogger()), WithMaxSessions(64))
		hs := httptest.NewServer(srv)
		url := "ws" + strings.TrimPrefix(hs.URL, "http") + RoutesPath

		// The listener and the first connections' lazy allocations.
		helper := startHelper(t, url, 10, 10, mode.chat)
		helper.stop()
		waitNoConversations(t, router)

		heap0, stack0, g0 := measure()
		helper = startHelper(t, url, mode.conns, n, mode.chat)
		heap1, stack1, g1 := measure()
		if got := router.Stats().Conversations; got != n {
			t.Fatalf("%d conversations", got)
		}
		per := float64(heap1-heap0+stack1-stack0) / n
		t.Logf("%s: %d sessions on %d connections: %.0f B per idle session (heap %.0f B + stacks %.0f B), %.2f goroutines per session",
			mode.name, n, mode.conns, per, float64(heap1-heap0)/n, float64(stack1-stack0)/n, float64(g1-g0)/n)
		helper.stop()
		waitNoConversations(t, router)
		srv.Close()
		hs.Close()
	}
}

func measure() (heap, stack uint64, goroutines int) {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
		time.Sleep(50 * time.Millisecond)
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse, runtime.NumGoroutine()
}

type helperProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// startHelper runs TestHelperClients in a child process: conns
// connections carrying sessions sessions, all connected and idle.
func startHelper(t *testing.T, url string, conns, sessions int, chat bool) *helperProc {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperClients$")
	cmd.Env = append(os.Environ(), "WS_HELPER_URL="+url, "WS_HELPER_CONNS="+strconv.Itoa(conns), "WS_HELPER_SESSIONS="+strconv.Itoa(sessions))
	if chat {
		cmd.Env = append(cmd.Env, "WS_HELPER_CHAT=1")
	}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if sc.Text() == "ready" {
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			return &helperProc{t: t, cmd: cmd, stdin: stdin}
		}
	}
	_ = cmd.Wait()
	t.Fatal("the helper process did not get ready")
	return nil
}

func (h *helperProc) stop() {
	h.stdin.Close()
	if err := h.cmd.Wait(); err != nil {
		h.t.Fatalf("helper: %v", err)
	}
}

// TestHelperClients is the child process of startHelper.
func TestHelperClients(t *testing.T) {
	url := os.Getenv("WS_HELPER_URL")
	if url == "" {
		t.Skip("a helper process of TestIdleMemory")
	}
	conns, _ := strconv.Atoi(os.Getenv("WS_HELPER_CONNS"))
	sessions, _ := strconv.Atoi(os.Getenv("WS_HELPER_SESSIONS"))
	ctx := context.Background()
	wcs := make([]*websocket.Conn, conns)
	for i := range wcs {
		wc, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		wcs[i] = wc
	}
	// Connect every session, then read every reply.
	for i := range sessions {
		wc := wcs[i%conns]
		frame := fmt.Sprintf(`{"type":"Connect","chatId":"s%d"}`, i)
		if err := wc.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
			t.Fatal(err)
		}
	}
	scopes := make([]string, sessions)
	for i := range sessions {
		_, b, err := wcs[i%conns].Read(ctx)
		if err != nil || !strings.Contains(string(b), "Completed") {
			t.Fatalf("connect: %s %v", b, err)
		}
		var f frame
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		scopes[i] = f.text() // replies come in order on each connection
	}
	if os.Getenv("WS_HELPER_CHAT") != "" {
		// One turn each: the server's stacks after real work.
		for i := range sessions {
			frame := fmt.Sprintf(`{"type":"ChatRouteMessage","chatId":"s%d","scopeId":"%s","data":{"userMessage":"hi"}}`, i, scopes[i])
			if err := wcs[i%conns].Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range sessions {
			for {
				_, b, err := wcs[i%conns].Read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), "Completed") {
					break
				}
			}
		}
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, wc := range wcs {
		wc.Close(websocket.StatusNormalClosure, "")
	}
}
