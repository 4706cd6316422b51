package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// The fleet's settings. CHATGEN_FLEET_CLIENTS overrides the number of
// clients.
const (
	defaultClients = 200
	leaseTTL       = 5 * time.Second        // how long a killed node's conversations stay busy
	drainDelay     = 2 * time.Second        // > HAProxy's inter 1s × fall 1
	settle         = 4 * time.Second        // between two restarts
	turnTime       = 50 * time.Millisecond  // the model's time: a drain or a kill finds turns running
	minThink       = 200 * time.Millisecond // a client's pause between two turns
	maxThink       = 600 * time.Millisecond
)

// TestFleet runs the fleet: three fleetnode processes on a durable store
// behind a load balancer configured by docs/deploy, clients with
// reconnection chatting continuously, each node drained (SIGTERM) and
// restarted in turn, then one killed (kill -9) and restarted. Every turn
// a client sent must be answered once, with the answer of its place in
// the conversation (so none was lost or run twice); every conversation's
// saved state and memory must hold exactly its turns; a turn may have run
// twice only if its first run was on the killed node, which saved nothing
// of it.
//
// It runs with CHATGEN_FLEET=1 (make fleet); CHATGEN_FLEET_RUNS picks the
// runs ("nginx/cluster,haproxy/cluster,nginx/postgres" by default; redis
// is one redis-server, cluster a Redis Cluster of three masters with a
// replica each).
func TestFleet(t *testing.T) {
	if os.Getenv("CHATGEN_FLEET") == "" {
		t.Skip("the fleet test runs with CHATGEN_FLEET=1 (make fleet)")
	}
	clients := defaultClients
	if v := os.Getenv("CHATGEN_FLEET_CLIENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("CHATGEN_FLEET_CLIENTS=%q is not a positive number", v)
		}
		clients = n
	}
	runs := "nginx/cluster,haproxy/cluster,nginx/postgres"
	if v := os.Getenv("CHATGEN_FLEET_RUNS"); v != "" {
		runs = v
	}
	bin := buildNode(t, t.TempDir())
	for _, run := range strings.Split(runs, ",") {
		lbName, storeName, _ := strings.Cut(run, "/")
		lb, ok := balancers[lbName]
		if !ok || (storeName != "redis" && storeName != "cluster" && storeName != "postgres") {
			t.Fatalf("CHATGEN_FLEET_RUNS: unknown run %q", run)
		}
		t.Run(run, func(t *testing.T) {
			f := &fleet{t: t, bin: bin, dir: t.TempDir(), clients: clients}
			f.openStore(storeName)
			f.run(lb)
		})
	}
}

// A fleet is one run of the fleet test.
type fleet struct {
	t       *testing.T
	bin     string
	dir     string
	clients int

	storeArgs []string                    // the nodes' store flags
	store     chatstore.ConversationStore // the test's view of the store
	memories  memory.Store

	nodes  []*node
	killed map[string]bool // incarnations killed by kill -9

	phase  atomic.Pointer[string] // what the fleet goes through
	phases []string               // every phase, in order

	mu         sync.Mutex
	samples    []sample // every answered turn
	executions int      // runs of the answered turns, on every node
	reran      int      // runs beyond the first (on the killed node)
	twice      int      // answers delivered twice (a cut run's, then the re-run's)
}

// setPhase starts phase: the turns sent from now on are counted in it.
func (f *fleet) setPhase(phase string) {
	f.phases = append(f.phases, phase)
	f.phase.Store(&phase)
}

// A node is one of the fleet's three nodes; each start is an incarnation
// of its own name (n2-g1, n2-g2…).
type node struct {
	name string
	addr string
	gen  int
	proc *proc
}

func (n *node) incarnation() string { return fmt.Sprintf("%s-g%d", n.name, n.gen) }

// A sample is a turn's latency, from the client's Chat to its answer, and
// the phase of the fleet when it was answered.
type sample struct {
	d      time.Duration
	phase  string
	client int
}

func (f *fleet) openStore(name string) {
	t := f.t
	switch name {
	case "redis":
		addr := startRedis(t, f.dir)
		prefix := "fleet:"
		f.storeArgs = []string{"-redis", addr, "-prefix", prefix}
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { c.Close() })
		s, err := redisstore.New(c, &redisstore.Options{Prefix: prefix, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		f.store, f.memories = s, s.Memories()
	case "cluster":
		cl := redistest.StartCluster(t, 3, 1)
		prefix := "fleet:"
		f.storeArgs = []string{"-redis", strings.Join(cl.Addrs(), ","), "-prefix", prefix}
		s, err := redisstore.New(cl.Client(t), &redisstore.Options{Prefix: prefix, TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		f.store, f.memories = s, s.Memories()
	case "postgres":
		pool := pgtest.Pool(t, nil)
		if _, err := pgstore.Migrate(t.Context(), pool); err != nil {
			t.Fatal(err)
		}
		f.storeArgs = []string{"-postgres", nodeURL(t, pool)}
		s, err := pgstore.New(t.Context(), pool, &pgstore.Options{TTL: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		f.store, f.memories = s, s.Memories()
	}
}

// nodeURL is the URL of pgtest's database with the pool's schema.
func nodeURL(t *testing.T, pool *pgxpool.Pool) string {
	schema := pool.Config().ConnConfig.RuntimeParams["search_path"]
	if schema == "" {
		t.Fatal("pgtest's pool has no search_path")
	}
	u := pgtest.URL()
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "search_path=" + schema
}

// startNode starts n's next incarnation and waits until it is ready.
func (f *fleet) startNode(n *node) {
	f.t.Helper()
	n.gen++
	name := n.incarnation()
	args := append([]string{f.bin, "-addr", n.addr, "-node", name,
		"-exec-log", filepath.Join(f.dir, "exec-"+name+".log"),
		"-lease-ttl", leaseTTL.String(), "-turn-time", turnTime.String(), "-drain-delay", drainDelay.String(), "-drain-timeout", "20s"}, f.storeArgs...)
	n.proc = start(f.t, f.dir, name, args...)
	n.proc.waitUntil(f.t, "readiness", func() bool { return httpOK("http://" + n.addr + "/readyz") })
}

func (f *fleet) run(lb balancer) {
	t := f.t
	f.killed = map[string]bool{}
	var addrs []string
	for i := range 3 {
		n := &node{name: fmt.Sprintf("n%d", i+1), addr: fmt.Sprintf("127.0.0.1:%d", freePort(t))}
		f.nodes = append(f.nodes, n)
		addrs = append(addrs, n.addr)
		f.startNode(n)
	}
	lbAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	lb.start(t, f.dir, lbAddr, addrs)
	url := "ws://" + lbAddr + ws.RoutesPath

	// The clients connect, then chat until told to stop.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stop atomic.Bool
	f.setPhase("steady")
	started := time.Now()
	cs := make([]*client, f.clients)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		for _, c := range cs {
			c.close()
		}
	}()
	var connected sync.WaitGroup
	for i := range cs {
		cs[i] = &client{id: i}
		connected.Add(1)
		wg.Go(func() { cs[i].chat(ctx, f, url, &stop, &connected) })
	}
	connected.Wait()
	t.Logf("%d clients connected through %s in %v", f.clients, lb.name, time.Since(started).Round(time.Millisecond))

	// Each node drained and restarted in turn, then one killed.
	time.Sleep(settle)
	for _, n := range f.nodes {
		t0 := time.Now()
		name := n.incarnation()
		f.setPhase("drain " + n.name)
		if err := n.proc.stop(syscall.SIGTERM, 30*time.Second); err != nil {
			t.Errorf("%s after SIGTERM: %v\n%s", name, err, n.proc.tail())
		}
		drained := time.Since(t0)
		f.startNode(n)
		t.Logf("%s drained in %v (delay %v), %s ready %v after the SIGTERM", name, drained.Round(time.Millisecond), drainDelay, n.incarnation(), time.Since(t0).Round(time.Millisecond))
		time.Sleep(settle)
	}
	victim := f.nodes[1]
	f.killed[victim.incarnation()] = true
	t0 := time.Now()
	f.setPhase("kill -9 " + victim.name)
	victim.proc.kill()
	f.startNode(victim)
	t.Logf("%s killed (kill -9), %s ready %v later", victim.name+"-g"+strconv.Itoa(victim.gen-1), victim.incarnation(), time.Since(t0).Round(time.Millisecond))
	time.Sleep(leaseTTL + settle)

	var spread []string
	for _, n := range f.nodes {
		_, port, _ := strings.Cut(n.addr, ":")
		spread = append(spread, fmt.Sprintf("%s %d", n.name, established(port)))
	}
	t.Logf("FLEET %s: websockets per node at the end: %s", t.Name(), strings.Join(spread, ", "))
	stop.Store(true)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cancel()
		<-done
		t.Error("clients still waiting for answers 2 minutes after the last restart")
	}
	elapsed := time.Since(started)
	f.check(cs)
	f.report(cs, elapsed)
}

// A client is one of the fleet's clients: one connection, one
// conversation.
type client struct {
	id      int
	c       *ws.Client
	s       chat.Session
	convID  string
	turns   int   // answered
	twice   []int // turns whose answer was delivered twice
	failure error

	mu   sync.Mutex
	msgs []string
}

func (c *client) add(text string) {
	c.mu.Lock()
	c.msgs = append(c.msgs, text)
	c.mu.Unlock()
}

func (c *client) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.msgs
	c.msgs = nil
	return m
}

func (c *client) close() {
	if c.c != nil {
		c.c.Close()
	}
}

// chat connects, then sends turn after turn, each checked against the
// answer it must get, until stop; the first failure ends it.
func (c *client) chat(ctx context.Context, f *fleet, url string, stop *atomic.Bool, connected *sync.WaitGroup) {
	fail := func(err error) {
		c.failure = err
	}
	var err error
	c.c, err = ws.Dial(ctx, url, &ws.DialOptions{
		Logger:    slog.New(slog.DiscardHandler),
		Reconnect: &ws.ReconnectOptions{MinDelay: 50 * time.Millisecond, MaxDelay: time.Second},
	})
	if err == nil {
		c.s, err = c.c.Builder().OnMessage(c.add).Connect(ctx, "")
	}
	connected.Done()
	if err != nil {
		fail(fmt.Errorf("connecting: %w", err))
		return
	}
	c.convID = c.s.(interface{ ConversationID() string }).ConversationID()
	for k := 1; !stop.Load(); k++ {
		msg := fmt.Sprintf("c%d t%d", c.id, k)
		t0 := time.Now()
		if err := c.s.Chat(ctx, msg); err != nil {
			fail(fmt.Errorf("turn %d: %w", k, err))
			return
		}
		d := time.Since(t0)
		phase := *f.phase.Load() // the phase of a restart that held the turn up
		got, want := c.take(), Answer(k, msg)
		switch {
		case len(got) == 1 && got[0] == want:
		case len(got) == 2 && got[0] == want && got[1] == want:
			// The events of a run cut by the kill -9 (sent before its
			// save), then those of its run elsewhere: checked against
			// the execution logs.
			c.twice = append(c.twice, k)
		default:
			fail(fmt.Errorf("turn %d answered %q, want %q", k, got, want))
			return
		}
		c.turns = k
		f.mu.Lock()
		f.samples = append(f.samples, sample{d: d, phase: phase, client: c.id})
		f.mu.Unlock()
		think := minThink + rand.N(maxThink-minThink)
		select {
		case <-time.After(think):
		case <-ctx.Done():
			return
		}
	}
}

// check checks each client's answers, each conversation's saved state
// and memory, and the nodes' executions.
func (f *fleet) check(cs []*client) {
	t := f.t
	ctx := context.Background()
	failed := 0
	for _, c := range cs {
		if c.failure != nil {
			failed++
			if failed <= 10 {
				t.Errorf("client %d (conversation %s): %v", c.id, c.convID, c.failure)
			}
		}
	}
	if failed > 0 {
		t.Fatalf("%d of %d clients failed", failed, len(cs))
	}
	for _, c := range cs {
		if err := f.checkConversation(ctx, c); err != nil {
			t.Errorf("client %d, conversation %s: %v", c.id, c.convID, err)
		}
	}
	f.checkExecutions(cs)
}

// checkConversation checks that c's conversation holds its turns: the
// counter bean, and the memory (the system message, then each message
// and answer in order).
func (f *fleet) checkConversation(ctx context.Context, c *client) error {
	st, err := f.store.Load(ctx, c.convID)
	if err != nil {
		return fmt.Errorf("loading: %w", err)
	}
	if len(st.Scopes) != 1 || len(st.Scopes[0].Memories) != 1 {
		return fmt.Errorf("saved scopes %+v, want one with one memory", st.Scopes)
	}
	var counter Counter
	if err := json.Unmarshal(st.Scopes[0].Beans[CounterBean], &counter); err != nil {
		return fmt.Errorf("the counter bean %s: %w", st.Scopes[0].Beans[CounterBean], err)
	}
	if counter.N != c.turns {
		return fmt.Errorf("the counter bean holds %d turns, the client was answered %d", counter.N, c.turns)
	}
	mem, err := f.memories.Get(ctx, st.Scopes[0].Memories[0])
	if err != nil {
		return fmt.Errorf("the memory: %w", err)
	}
	want := []string{"system " + askMethod.System}
	for k := 1; k <= c.turns; k++ {
		want = append(want, fmt.Sprintf("human c%d t%d", c.id, k), fmt.Sprintf("ai %d messages", 2*k))
	}
	var got []string
	for _, m := range mem {
		var text string
		for _, p := range m.Parts {
			if tc, ok := p.(llms.TextContent); ok {
				text += tc.Text
			}
		}
		got = append(got, string(m.Role)+" "+text)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("the memory holds %d messages, want %d: %q", len(got), len(want), firstDiff(got, want))
	}
	return nil
}

// firstDiff returns the messages from the first that differs.
func firstDiff(got, want []string) []string {
	for i := range got {
		if i >= len(want) || got[i] != want[i] {
			return got[i:min(len(got), i+4)]
		}
	}
	return nil
}

// checkExecutions reads the nodes' execution logs: every answered turn ran
// at least once, and twice only if a run was on the killed node.
func (f *fleet) checkExecutions(cs []*client) {
	t := f.t
	runs := map[string][]string{} // message → incarnations
	logs, err := filepath.Glob(filepath.Join(f.dir, "exec-*.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			inc, msg, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
			if !ok || !strings.HasSuffix(line, "\n") {
				t.Errorf("%s: a malformed line %q", l, line)
				continue
			}
			runs[msg] = append(runs[msg], inc)
		}
	}
	total, again, twice := 0, 0, 0
	for _, c := range cs {
		for _, k := range c.twice {
			twice++
			msg := fmt.Sprintf("c%d t%d", c.id, k)
			if !slices.ContainsFunc(runs[msg], func(inc string) bool { return f.killed[inc] }) {
				t.Errorf("%s was answered twice, and its runs %v were not cut by the kill", msg, runs[msg])
			}
		}
		for k := 1; k <= c.turns; k++ {
			msg := fmt.Sprintf("c%d t%d", c.id, k)
			incs := runs[msg]
			total += len(incs)
			switch {
			case len(incs) == 0:
				t.Errorf("%s was answered but never ran", msg)
			case len(incs) > 1:
				cut := 0
				for _, inc := range incs {
					if f.killed[inc] {
						cut++
					}
				}
				if cut < len(incs)-1 {
					t.Errorf("%s ran %d times, on %v (killed: %v)", msg, len(incs), incs, f.killed)
				}
				again += len(incs) - 1
			}
		}
	}
	f.mu.Lock()
	f.reran = again
	f.executions = total
	f.twice = twice
	f.mu.Unlock()
}

// report logs the run's figures: turns, latency percentiles overall and
// in each phase (a phase lasts from its SIGTERM or kill until the next
// one; a turn counts in the phase it was answered in), and the turns run
// again after the kill.
func (f *fleet) report(cs []*client, elapsed time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	turns := 0
	for _, c := range cs {
		turns += c.turns
	}
	f.t.Logf("FLEET %s: %d clients, %d turns in %v (%.0f/s), none lost, none run twice; %d runs of the %d turns: %d again after the kill -9 (their first run was cut, unsaved), %d of those answered twice (the cut run had sent its answer)",
		f.t.Name(), len(cs), turns, elapsed.Round(time.Second), float64(turns)/elapsed.Seconds(), f.executions, turns, f.reran, f.twice)
	f.t.Logf("FLEET %s: all turns: %s", f.t.Name(), latencies(f.samples))
	for _, phase := range f.phases {
		var in []sample
		for _, s := range f.samples {
			if s.phase == phase {
				in = append(in, s)
			}
		}
		f.t.Logf("FLEET %s: %-10s %s", f.t.Name(), phase+":", latencies(in))
	}
}

// latencies describes the samples: their number, p50, p99, the longest
// (the longest stall a client saw) and how many took over a second.
func latencies(samples []sample) string {
	if len(samples) == 0 {
		return "no turns"
	}
	s := slices.Clone(samples)
	slices.SortFunc(s, func(a, b sample) int { return int(a.d - b.d) })
	pct := func(p float64) time.Duration {
		return s[min(len(s)-1, int(p*float64(len(s))))].d.Round(100 * time.Microsecond)
	}
	over := len(s) - sort.Search(len(s), func(i int) bool { return s[i].d > time.Second })
	return fmt.Sprintf("%6d turns, p50 %v, p99 %v, longest %v (client %d), %d over 1 s",
		len(s), pct(0.5), pct(0.99), s[len(s)-1].d.Round(time.Millisecond), s[len(s)-1].client, over)
}
