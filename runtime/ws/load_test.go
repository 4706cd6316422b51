package ws

import (
	"bufio"
	"bytes"
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
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// The load measurements compare chatgen's server with its peer, a raw
// coder/websocket echo server, driven by the same load client:
//
//   - BenchmarkLoad (make bench) runs both, interleaved, and reports each
//     one's turns/s and server CPU per turn and the ratios between them.
//   - BenchmarkIdleMemory reports the server's memory per idle session.
//   - TestLoad and TestIdleMemory print the same figures as tables; they
//     run when WS_LOAD=1 is set:
//     WS_LOAD=1 go test ./runtime/ws -run 'TestLoad|TestIdleMemory' -v
//
// The load client runs in a child process (the test binary re-run as
// TestHelperLoadClient), so that this process holds nothing but the
// server: its CPU time (getrusage RUSAGE_SELF: user + system, so the
// socket syscalls count) over the turns is the server's CPU, and its heap
// and stacks are the server's memory. The client is a bare coder/websocket
// client speaking the chat protocol. A turn is one ChatRouteMessage and
// the frames up to its reply: chatgen answers the echo route with a
// Message and a Completed frame (written together), the echo server with
// the request itself.

func needLoadEnv(t *testing.T) {
	if os.Getenv("WS_LOAD") == "" {
		t.Skip("set WS_LOAD=1 to run the load test")
	}
}

// loadSessions is the number of concurrent sessions of a load run, one per
// connection.
const loadSessions = 1000

// loadTurns is the number of turns of each session in a load run
// (WS_LOAD_TURNS, default 30).
func loadTurns() int {
	if n, err := strconv.Atoi(os.Getenv("WS_LOAD_TURNS")); err == nil && n > 0 {
		return n
	}
	return 30
}

// loadResult is the outcome of one load run.
type loadResult struct {
	turns    int
	elapsed  time.Duration // as the client measured it
	p50, p99 time.Duration
	cpu      time.Duration // CPU time of this process (the server) during the run
	client   time.Duration // CPU time of the load client during the run
}

func (r loadResult) perSecond() float64 { return float64(r.turns) / r.elapsed.Seconds() }

func (r loadResult) cpuPerTurn() time.Duration { return r.cpu / time.Duration(r.turns) }

// cpuTime returns the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// echoRouter has the one route of the load test.
func echoRouter(tb testing.TB) *chat.Router {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/runtime/ws/load")
	p.AddRoute(chatimpl.RouteSpec{Name: "echo", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.SendValue(ctx, req.UserMessage())
	}})
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, p)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// A loadServer is a server under load: its websocket URL and how to stop
// it.
type loadServer struct {
	name string
	url  string
	stop func()
}

// startChatgen serves the echo route with chatgen's server.
func startChatgen(tb testing.TB) loadServer {
	srv := NewServer(echoRouter(tb), &ServerOptions{Logger: quietLogger(), MaxQueued: 4})
	hs := httptest.NewServer(srv)
	return loadServer{name: "chatgen", url: "ws" + strings.TrimPrefix(hs.URL, "http") + RoutesPath, stop: func() {
		srv.Close()
		hs.Close()
	}}
}

// startRawEcho serves a bare coder/websocket echo: the ceiling of the
// transport. Each connection has a goroutine reading a message and writing
// it back.
func startRawEcho(tb testing.TB) loadServer {
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
	return loadServer{name: "raw echo", url: "ws" + strings.TrimPrefix(hs.URL, "http"), stop: func() {
		hs.CloseClientConnections()
		hs.Close()
		handlers.Wait()
	}}
}

// runLoad drives srv with sessions sessions (one connection each) chatting
// turns times, from a load client in a child process.
func runLoad(tb testing.TB, srv loadServer, sessions, turns int) loadResult {
	tb.Helper()
	h := startHelper(tb, "^TestHelperLoadClient$", "WS_HELPER_URL="+srv.url,
		"WS_HELPER_SESSIONS="+strconv.Itoa(sessions), "WS_HELPER_TURNS="+strconv.Itoa(turns))
	defer h.stop()
	runtime.GC()
	cpu0 := cpuTime()
	line := h.command("go")
	cpu := cpuTime() - cpu0
	var r loadResult
	var elapsed, p50, p99, client int64
	if _, err := fmt.Sscan(line, &r.turns, &elapsed, &p50, &p99, &client); err != nil || r.turns == 0 {
		tb.Fatalf("load client: %q: %v", line, err)
	}
	r.elapsed, r.p50, r.p99, r.cpu, r.client = time.Duration(elapsed), time.Duration(p50), time.Duration(p99), cpu, time.Duration(client)
	return r
}

// BenchmarkLoad runs 1,000 concurrent sessions chatting with chatgen's
// echo route and the same load against a raw coder/websocket echo server,
// one after the other in each iteration, and reports for each its turns/s
// and server CPU per turn, and chatgen's ratios to the echo server. The
// targets (issue 9): throughput ratio ≥ 0.8, CPU ratio ≤ 1.5. Use
// -count (each iteration is one pair of runs of about a second each).
func BenchmarkLoad(b *testing.B) {
	turns := loadTurns()
	chatgen, echo := startChatgen(b), startRawEcho(b)
	defer chatgen.stop()
	defer echo.stop()
	var c, e loadResult
	for range b.N {
		er := runLoad(b, echo, loadSessions, turns)
		cr := runLoad(b, chatgen, loadSessions, turns)
		e.turns, e.elapsed, e.cpu = e.turns+er.turns, e.elapsed+er.elapsed, e.cpu+er.cpu
		c.turns, c.elapsed, c.cpu = c.turns+cr.turns, c.elapsed+cr.elapsed, c.cpu+cr.cpu
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(c.perSecond(), "turns/s")
	b.ReportMetric(e.perSecond(), "echo-turns/s")
	b.ReportMetric(c.perSecond()/e.perSecond(), "throughput-ratio")
	b.ReportMetric(float64(c.cpuPerTurn().Nanoseconds())/1e3, "cpu-µs/turn")
	b.ReportMetric(float64(e.cpuPerTurn().Nanoseconds())/1e3, "echo-cpu-µs/turn")
	b.ReportMetric(float64(c.cpuPerTurn())/float64(e.cpuPerTurn()), "cpu-ratio")
}

// TestLoad prints the side-by-side figures of BenchmarkLoad as a table
// (WS_LOAD=1): three interleaved pairs of runs, and the median ratios.
func TestLoad(t *testing.T) {
	needLoadEnv(t)
	turns := loadTurns()
	chatgen, echo := startChatgen(t), startRawEcho(t)
	defer chatgen.stop()
	defer echo.stop()
	runLoad(t, echo, 100, 10) // warm up
	runLoad(t, chatgen, 100, 10)
	t.Logf("%d sessions x %d turns (GOMAXPROCS %d); CPU is the server's", loadSessions, turns, runtime.GOMAXPROCS(0))
	t.Logf("%-10s %10s %10s %10s %12s %12s", "", "turns/s", "p50", "p99", "CPU/turn", "client CPU")
	var tput, cpu []float64
	for range 3 {
		e := runLoad(t, echo, loadSessions, turns)
		c := runLoad(t, chatgen, loadSessions, turns)
		for _, r := range []struct {
			name string
			loadResult
		}{{"raw echo", e}, {"chatgen", c}} {
			t.Logf("%-10s %10.0f %10v %10v %12v %12v", r.name, r.perSecond(), r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond),
				r.cpuPerTurn().Round(100*time.Nanosecond), (r.client / time.Duration(r.turns)).Round(100*time.Nanosecond))
		}
		tput = append(tput, c.perSecond()/e.perSecond())
		cpu = append(cpu, float64(c.cpuPerTurn())/float64(e.cpuPerTurn()))
	}
	slices.Sort(tput)
	slices.Sort(cpu)
	t.Logf("chatgen / raw echo: throughput %.2f×, CPU per turn %.2f× (medians; targets ≥ 0.8×, ≤ 1.5×)", tput[1], cpu[1])
}

// TestHelperLoadClient is the load client of runLoad, in a child process:
// it connects WS_HELPER_SESSIONS sessions, says "ready", and on "go" runs
// WS_HELPER_TURNS turns on each at once and answers with the number of
// turns, the elapsed time, the median and 99th percentile latencies and
// its own CPU time (in ns).
func TestHelperLoadClient(t *testing.T) {
	url := os.Getenv("WS_HELPER_URL")
	if url == "" || os.Getenv("WS_HELPER_TURNS") == "" {
		t.Skip("the load client of BenchmarkLoad and TestLoad")
	}
	sessions, _ := strconv.Atoi(os.Getenv("WS_HELPER_SESSIONS"))
	turns, _ := strconv.Atoi(os.Getenv("WS_HELPER_TURNS"))
	ctx := context.Background()
	wcs := make([]*websocket.Conn, sessions)
	frames := make([][]byte, sessions)
	for i := range wcs {
		wc, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		wcs[i] = wc
		if err := wc.Write(ctx, websocket.MessageText, []byte(`{"type":"Connect","chatId":"load"}`)); err != nil {
			t.Fatal(err)
		}
	}
	for i, wc := range wcs {
		_, b, err := wc.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		scope := "3f1c7a52-9d7e-4c55-8c0a-0d51f6c1e2ab" // the echo server's
		if loadFrameType(b) == protocol.EventCompleted {
			var f frame
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			scope = f.text()
		}
		frames[i] = fmt.Appendf(nil, `{"type":"ChatRouteMessage","chatId":"load","scopeId":%q,"data":{"userMessage":"hello, this is a chat turn of a typical length"},"requestId":1}`, scope)
	}
	in := bufio.NewScanner(os.Stdin)
	fmt.Println("ready")
	if !in.Scan() {
		return
	}
	lats := make([][]time.Duration, sessions)
	var wg sync.WaitGroup
	start, cpu0 := time.Now(), cpuTime()
	for i, wc := range wcs {
		wg.Go(func() {
			var buf bytes.Buffer
			lat := make([]time.Duration, 0, turns)
			for range turns {
				t0 := time.Now()
				if err := wc.Write(ctx, websocket.MessageText, frames[i]); err != nil {
					t.Error(err)
					return
				}
				for done := false; !done; {
					_, r, err := wc.Reader(ctx)
					if err == nil {
						buf.Reset()
						_, err = buf.ReadFrom(r)
					}
					if err != nil {
						t.Error(err)
						return
					}
					switch loadFrameType(buf.Bytes()) {
					case protocol.EventCompleted, TypeChatRouteMessage: // chatgen's terminator, the echo
						done = true
					case protocol.EventFailed:
						t.Errorf("failed: %s", buf.Bytes())
						return
					}
				}
				lat = append(lat, time.Since(t0))
			}
			lats[i] = lat
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	all := slices.Concat(lats...)
	slices.Sort(all)
	if len(all) == 0 {
		t.Fatal("no turns")
	}
	fmt.Println(len(all), elapsed.Nanoseconds(), all[len(all)/2].Nanoseconds(), all[len(all)*99/100].Nanoseconds(), cpu.Nanoseconds())
	in.Scan() // until stdin closes
	for _, wc := range wcs {
		wc.Close(websocket.StatusNormalClosure, "")
	}
}

// loadFrameType returns the type of a frame written without spaces, as
// both servers and the load client write them.
func loadFrameType(b []byte) string {
	_, after, ok := bytes.Cut(b, []byte(`"type":"`))
	if !ok {
		return ""
	}
	typ, _, _ := bytes.Cut(after, []byte(`"`))
	return string(typ)
}

// idleResult is the server's memory per idle session.
type idleResult struct {
	sessions, conns   int
	heap, stack       float64 // bytes per session
	goroutinesPerSess float64
}

func (r idleResult) kib() float64 { return (r.heap + r.stack) / 1024 }

// An idleMode is a way of holding idle sessions.
type idleMode struct {
	name  string
	conns int  // connections carrying the sessions
	chat  bool // each session had one turn before idling
}

const idleSessions = 2000

var idleModes = []idleMode{
	{"conn-per-session", idleSessions, false},           // a browser tab each
	{"conn-per-session-after-turn", idleSessions, true}, // the same, after a turn each
	{"50-sessions-per-conn", idleSessions / 50, false},  // many sessions on one connection
}

// measureIdle measures the server's memory per idle connected session:
// the heap and stacks of this process with the sessions held open by a
// child process, less the same without them.
func measureIdle(tb testing.TB, mode idleMode) idleResult {
	router := echoRouter(tb)
	srv := NewServer(router, &ServerOptions{Logger: quietLogger(), MaxSessions: 64})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + RoutesPath
	env := func(conns, sessions int) []string {
		e := []string{"WS_HELPER_URL=" + url, "WS_HELPER_CONNS=" + strconv.Itoa(conns), "WS_HELPER_SESSIONS=" + strconv.Itoa(sessions)}
		if mode.chat {
			e = append(e, "WS_HELPER_CHAT=1")
		}
		return e
	}

	// The listener and the first connections' lazy allocations.
	helper := startHelper(tb, "^TestHelperClients$", env(10, 10)...)
	helper.stop()
	waitNoConversations(tb, router)

	waitNoWorkers(tb, srv)
	heap0, stack0, g0 := measure()
	helper = startHelper(tb, "^TestHelperClients$", env(mode.conns, idleSessions)...)
	defer helper.stop()
	waitNoWorkers(tb, srv)
	heap1, stack1, g1 := measure()
	if got := router.Stats().Conversations; got != idleSessions {
		tb.Fatalf("%d conversations", got)
	}
	n := float64(idleSessions)
	return idleResult{
		sessions:          idleSessions,
		conns:             mode.conns,
		heap:              float64(int64(heap1)-int64(heap0)) / n,
		stack:             float64(int64(stack1)-int64(stack0)) / n,
		goroutinesPerSess: float64(g1-g0) / n,
	}
}

// BenchmarkIdleMemory reports the server's memory per idle connected
// session, in KiB (target ≤ 8 KiB with one connection per session, issue
// 9).
func BenchmarkIdleMemory(b *testing.B) {
	for _, mode := range idleModes {
		b.Run(mode.name, func(b *testing.B) {
			var kib float64
			for range b.N {
				kib += measureIdle(b, mode).kib()
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(kib/float64(b.N), "KiB/session")
		})
	}
}

// TestIdleMemory prints the server's memory per idle connected session
// (WS_LOAD=1) in each of the idle modes.
func TestIdleMemory(t *testing.T) {
	needLoadEnv(t)
	for _, mode := range idleModes {
		r := measureIdle(t, mode)
		t.Logf("%s: %d sessions on %d connections: %.2f KiB per idle session (heap %.2f KiB + stacks %.2f KiB), %.2f goroutines per session",
			mode.name, r.sessions, r.conns, r.kib(), r.heap/1024, r.stack/1024, r.goroutinesPerSess)
	}
}

// waitNoWorkers waits until the server's pool has retired its workers,
// as it does workerIdleTime after their last task: they belong to the
// last turns, not to the idle sessions.
func waitNoWorkers(tb testing.TB, srv *Server) {
	deadline := time.Now().Add(5 * workerIdleTime)
	for {
		srv.workers.mu.Lock()
		n := len(srv.workers.idle)
		srv.workers.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d workers still idle", n)
		}
		time.Sleep(50 * time.Millisecond)
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

// helperProc is a child process running one of the helper tests: it
// prints "ready" when set up, answers each line of its stdin with one line
// of stdout, and ends when its stdin closes.
type helperProc struct {
	tb     testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Scanner
}

// startHelper runs the test binary's tests matching run in a child
// process with env added, and waits until it is ready.
func startHelper(tb testing.TB, run string, env ...string) *helperProc {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run="+run)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	h := &helperProc{tb: tb, cmd: cmd, stdin: stdin, stdout: bufio.NewScanner(stdout)}
	for h.stdout.Scan() {
		if h.stdout.Text() == "ready" {
			return h
		}
	}
	_ = cmd.Wait()
	tb.Fatal("the helper process did not get ready")
	return nil
}

// command sends a line to the helper and returns its answer.
func (h *helperProc) command(line string) string {
	h.tb.Helper()
	if _, err := io.WriteString(h.stdin, line+"\n"); err != nil {
		h.tb.Fatal(err)
	}
	if !h.stdout.Scan() {
		h.tb.Fatalf("helper: no answer to %q", line)
	}
	return h.stdout.Text()
}

func (h *helperProc) stop() {
	h.stdin.Close() // what the helper still prints fits in the pipe
	if err := h.cmd.Wait(); err != nil {
		h.tb.Fatalf("helper: %v", err)
	}
}

// TestHelperClients is the child process of measureIdle: WS_HELPER_CONNS
// connections carrying WS_HELPER_SESSIONS sessions, all connected and
// idle.
func TestHelperClients(t *testing.T) {
	url := os.Getenv("WS_HELPER_URL")
	if url == "" || os.Getenv("WS_HELPER_CONNS") == "" {
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
