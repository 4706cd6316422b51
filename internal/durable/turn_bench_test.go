package durable_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/jackc/pgx/v5/pgxpool"
)

// backend is where a router keeps its conversations: Store nil is a
// router without a store (conversations live in the process only).
type backend struct {
	Store    chatstore.ConversationStore
	Memories memory.Store           // the AI memories' store; nil: memory's in-memory store
	trips    interface{ N() int64 } // round trips to the server (Redis, PostgreSQL); nil for the others
}

// backends are the configurations the benchmarks compare: no store, the
// in-memory store, bbolt with group commit (its default) and without,
// Redis (the shared server on loopback), a Redis Cluster of three masters
// started for the benchmark, and PostgreSQL (the shared server).
var backends = []struct {
	name string
	open func(b *testing.B) backend
}{
	{"store=none", func(*testing.B) backend { return backend{} }},
	{"store=inmemory", func(*testing.B) backend {
		s := chat.NewInMemoryConversationStore(nil)
		return backend{Store: s, Memories: chatstoretest.InMemoryMemories(s)}
	}},
	{"store=bolt", func(b *testing.B) backend { return openBolt(b, false) }},
	{"store=bolt-nogroupcommit", func(b *testing.B) backend { return openBolt(b, true) }},
	{"store=redis", func(b *testing.B) backend { return openRedis(b) }},
	{"store=redis-cluster", func(b *testing.B) backend { return openRedisCluster(b) }},
	{"store=postgres", func(b *testing.B) backend { return openPostgres(b) }},
}

func openBolt(tb testing.TB, noGroupCommit bool) backend {
	s, err := boltstore.Open(filepath.Join(tb.TempDir(), "chat.db"), &boltstore.Options{TTL: time.Hour, NoGroupCommit: noGroupCommit})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return backend{Store: s, Memories: s.Memories()}
}

func openRedis(tb testing.TB) backend {
	c := redistest.Client(tb)
	trips := new(redistest.RoundTrips)
	c.AddHook(trips)
	s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(tb, c, "chatgen-durable-test"), TTL: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	return backend{Store: s, Memories: s.Memories(), trips: trips}
}

// pgConns is the size of the PostgreSQL connection pool of the
// benchmarks: pgxpool's default (4 on 2 cores) would queue 1,000 sessions
// on four connections.
const pgConns = 32

// openRedisCluster starts a Redis Cluster of three masters (no replicas)
// on loopback for the benchmark.
func openRedisCluster(tb testing.TB) backend {
	c := redistest.StartCluster(tb, 3, 0).Client(tb)
	trips := new(redistest.RoundTrips)
	c.AddHook(trips)
	s, err := redisstore.New(c, &redisstore.Options{Prefix: "chatgen:", TTL: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	return backend{Store: s, Memories: s.Memories(), trips: trips}
}

func openPostgres(tb testing.TB) backend {
	trips := new(pgtest.RoundTrips)
	cfg := pgtest.Pool(tb, trips).Config() // its schema and round-trip count
	cfg.MaxConns = pgConns
	pool, err := pgxpool.NewWithConfig(tb.Context(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close) // before pgtest drops the schema
	if _, err := pgstore.Migrate(tb.Context(), pool); err != nil {
		tb.Fatal(err)
	}
	s, err := pgstore.New(tb.Context(), pool, &pgstore.Options{TTL: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return backend{Store: s, Memories: s.Memories(), trips: trips}
}

// counter is a chat-scoped durable bean: the state a route keeps.
type counter struct{ N int }

var counterBean = chat.NewBean("github.com/chatscopes/chatgen/internal/durable.counter", &chat.BeanOptions{Durable: true},
	func(context.Context) (*counter, error) { return &counter{}, nil })

// askMethod is what chatgen generates for a chat-scoped AI method with a
// constant system message and no tools.
var askMethod = ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}

// app is the routes of the benchmarks: "count" (the default) counts its
// turns in counterBean; "ask" asks the AI service.
func app(svc *ai.Service) *chatimpl.Package {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/internal/durable")
	p.AddRoute(chatimpl.RouteSpec{Name: "count", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		c, err := counterBean.Lookup(ctx)
		if err != nil {
			return err
		}
		c.N++
		return chat.SendValue(ctx, strconv.Itoa(c.N)+": "+req.UserMessage())
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "ask", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r, err := svc.Chat(ctx, &ai.Request{Method: &askMethod, User: req.UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	return p
}

// newAI returns the AI service of the benchmarks: llmtest's in-process
// model, and a window memory of 20 messages in mem (full after ten turns;
// then each turn evicts two).
func newAI(mem memory.Store) (*ai.Service, *llmtest.Model) {
	model := llmtest.NewModel(llmtest.Rules(llmtest.When(nil, llmtest.Reply{Text: "It is sunny in Paris."})), nil)
	svc := ai.NewService("github.com/chatscopes/chatgen/internal/durable.Assistant", &ai.Config{
		Model:  model,
		Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(20, nil), Store: mem}),
	})
	return svc, model
}

// newClient returns a router over store serving app, a local client of
// it, and the model of its AI service.
func newClient(tb testing.TB, store backend) (*chat.Router, *chat.LocalClient, *llmtest.Model) {
	svc, model := newAI(store.Memories)
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store.Store, Logger: slog.New(slog.DiscardHandler)}, app(svc))
	if err != nil {
		tb.Fatal(err)
	}
	client := chat.NewLocalClient(r)
	tb.Cleanup(func() { _ = client.Close() })
	return r, client, model
}

// benchTurns runs turns of a session of route over each backend, the
// first warm turns unmeasured (the AI memory's window fills), and
// reports the Redis and PostgreSQL round trips per turn.
func benchTurns(b *testing.B, route string) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			store := be.open(b)
			r, client, model := newClient(b, store)
			ctx := context.Background()
			var got string
			s, err := client.Builder().OnMessage(func(m string) { got = m }).Connect(ctx, route)
			if err != nil {
				b.Fatal(err)
			}
			turn := func(i int) {
				if err := s.Chat(ctx, "Weather in Paris?"); err != nil {
					b.Fatal(err)
				}
				if got == "" {
					b.Fatal("no answer")
				}
				if i%1000 == 0 {
					model.Reset() // llmtest.Model records every request
				}
			}
			for i := range 12 {
				turn(i)
			}
			if route == "count" && got != "12: Weather in Paris?" {
				b.Fatalf("after 12 turns: %q", got)
			}
			var start int64
			if store.trips != nil {
				start = store.trips.N()
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				turn(i)
			}
			if store.trips != nil {
				b.ReportMetric(float64(store.trips.N()-start)/float64(b.N), "roundtrips/op")
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			if st := r.Stats(); st.Scopes != 0 {
				b.Fatalf("after Close: %+v", st)
			}
		})
	}
}

// BenchmarkLocalTurn is a full turn through chat.LocalClient of a route
// that updates a chat-scoped durable bean, over each store: with a store,
// the turn's extra cost is its save (the bean's JSON, the state, the
// version check, the lease).
func BenchmarkLocalTurn(b *testing.B) { benchTurns(b, "count") }

// BenchmarkAITurn is a full turn through chat.LocalClient of a route that
// asks an AI service (runtime/ai with llmtest's in-process model; a full
// window memory of 20 messages in the store's Memories(), which gets the
// turn's two messages and evicts two), over each store: the save then
// also commits the memory's edit.
func BenchmarkAITurn(b *testing.B) { benchTurns(b, "ask") }

// concurrentSessions is the number of conversations BenchmarkConcurrentTurns
// runs at the same time.
const concurrentSessions = 1000

// BenchmarkConcurrentTurns is the durable throughput of one node:
// concurrentSessions sessions of the "ask" route (BenchmarkAITurn's turn:
// one model call, two messages into a window memory of 20 in the store)
// chat through one router at the same time, each sending its next message
// as soon as the last is answered, over each store. b.N is the number of
// turns of all sessions together; run it with -benchtime Nx (make
// bench-durable), since each run connects the sessions again. It reports
// turns/s, the process's CPU time per turn (user + system: the router,
// the store's client and, for bbolt, the store itself; not the Redis or
// PostgreSQL server's), and the round trips per turn to the store's
// server. With 20 turns per session the window fills after ten, then
// evicts two messages a turn. When the stores include "none", it logs
// each store's ratios to it (shown with -v).
func BenchmarkConcurrentTurns(b *testing.B) {
	type result struct{ perSecond, cpuPerTurn float64 }
	results := map[string]result{}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			store := be.open(b)
			_, client, model := newClient(b, store)
			ctx := context.Background()
			sessions := make([]chat.Session, concurrentSessions)
			var wg sync.WaitGroup
			errs := make(chan error, len(sessions))
			for i := range sessions {
				wg.Go(func() {
					s, err := client.Builder().OnMessage(func(string) {}).Connect(ctx, "ask")
					if err != nil {
						errs <- err
						return
					}
					sessions[i] = s
				})
			}
			wg.Wait()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			var left, turns atomic.Int64
			left.Store(int64(b.N))
			errs = make(chan error, len(sessions))
			var trips0 int64
			if store.trips != nil {
				trips0 = store.trips.N()
			}
			b.ResetTimer()
			start, cpu0 := time.Now(), cpuTime(b)
			for _, s := range sessions {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						if err := s.Chat(ctx, "Weather in Paris?"); err != nil {
							errs <- err
							return
						}
						if turns.Add(1)%1000 == 0 {
							model.Reset() // llmtest.Model records every request
						}
					}
				})
			}
			wg.Wait()
			elapsed, cpu := time.Since(start), cpuTime(b)-cpu0
			b.StopTimer()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			res := result{float64(b.N) / elapsed.Seconds(), float64(cpu.Microseconds()) / float64(b.N)}
			results[be.name] = res // the last run, of the largest b.N, stays
			b.ReportMetric(res.perSecond, "turns/s")
			b.ReportMetric(res.cpuPerTurn, "cpu-µs/turn")
			if store.trips != nil {
				b.ReportMetric(float64(store.trips.N()-trips0)/float64(b.N), "roundtrips/op")
			}
			for _, s := range sessions {
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	none, ok := results["store=none"]
	if !ok {
		return
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%d sessions: each store against store=none, this run\n", concurrentSessions)
	fmt.Fprintf(&table, "%-26s %10s %12s %12s %12s\n", "", "turns/s", "cpu-µs/turn", "throughput", "CPU/turn")
	for _, be := range backends {
		if r, ok := results[be.name]; ok {
			fmt.Fprintf(&table, "%-26s %10.0f %12.1f %11.2f× %11.2f×\n", be.name, r.perSecond, r.cpuPerTurn, r.perSecond/none.perSecond, r.cpuPerTurn/none.cpuPerTurn)
		}
	}
	b.Log("\n" + table.String())
}

// cpuTime returns the user and system CPU time of the process so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
