package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tmc/langchaingo/llms"
)

// restartable starts a server of the test's own and returns a store on a
// pool of it (migrated), which keeps the connections it has, as a busy
// pool does: pgxpool pings only the connections idle for more than a
// second, so after a restart, each answers the next request sent on it
// with SQLSTATE 57P01.
func restartable(t *testing.T, maxConns int32) (*server, *pgxpool.Pool, *pgstore.Store) {
	t.Helper()
	srv := newServer(t)
	srv.run()
	cfg, err := pgxpool.ParseConfig(srv.url())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// A minute of retries: a server of a loaded machine may take some
	// seconds to start again.
	return srv, pool, migrated(t, pool, &pgstore.Options{RetryTimeout: time.Minute})
}

// fill opens every connection pool may hold.
func fill(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var conns []*pgxpool.Conn
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if err := c.Ping(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
}

// turn stages a turn's two messages in memory mid and returns the batch.
func stageTurn(t testing.TB, ctx context.Context, s *pgstore.Store, mid string, n uint64) *chatstore.Batch {
	b := chatstore.NewBatch()
	change := memory.Change{Tail: []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("turn %d", n)),
		llms.TextParts(llms.ChatMessageTypeAI, fmt.Sprintf("answer %d", n)),
	}}
	if err := s.Memories().Apply(chatstore.WithBatch(ctx, b), mid, change); err != nil {
		t.Fatal(err)
	}
	return b
}

// checkTurns checks that conversation id is at version want, with the
// two messages of each of its turns once, in order.
func checkTurns(t *testing.T, s *pgstore.Store, id, mid string, want uint64) {
	t.Helper()
	got, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != want {
		t.Fatalf("conversation %s at version %d, want %d", id, got.Version, want)
	}
	if turn := string(got.Scopes[0].Beans["turn"]); turn != strconv.FormatUint(want, 10) {
		t.Fatalf("conversation %s at version %d records turn %s", id, got.Version, turn)
	}
	msgs, err := s.Memories().Get(t.Context(), mid)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(msgs)) != 2*want {
		t.Fatalf("conversation %s at version %d has a memory of %d messages, want %d", id, want, len(msgs), 2*want)
	}
	for i := range want {
		if txt := msgs[2*i].Parts[0].(llms.TextContent).Text; txt != fmt.Sprintf("turn %d", i+1) {
			t.Fatalf("conversation %s: message %d is %q, want %q", id, 2*i, txt, fmt.Sprintf("turn %d", i+1))
		}
	}
}

// TestRestart restarts a PostgreSQL server of its own while a pool holds
// connections to it, then saves: the save succeeds on a new connection,
// once. A save sent while the server is down succeeds once it is back.
func TestRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	srv, pool, s := restartable(t, 4)
	ctx := t.Context()
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	st := chatstoretest.State("c")
	mid := st.Scopes[0].Memories[0]
	save := func() error {
		n := st.Version + 1
		b := stageTurn(t, ctx, s, mid, n)
		st.Scopes[0].Beans["turn"] = []byte(strconv.FormatUint(n, 10))
		return s.Save(ctx, st, l, b)
	}
	if err := save(); err != nil {
		t.Fatal(err)
	}

	fill(t, pool)
	srv.stop(syscall.SIGINT)
	srv.run()
	if err := save(); err != nil {
		t.Fatalf("the first save after a restart: %v", err)
	}
	checkTurns(t, s, "c", mid, 2)

	// Down while the save is sent: the save waits for the server.
	fill(t, pool)
	srv.stop(syscall.SIGINT)
	saved := make(chan error, 1)
	b := stageTurn(t, ctx, s, mid, 3)
	st.Scopes[0].Beans["turn"] = []byte("3")
	go func() { saved <- s.Save(ctx, st, l, b) }()
	srv.run()
	if err := <-saved; err != nil {
		t.Fatalf("a save sent while the server was down: %v", err)
	}
	checkTurns(t, s, "c", mid, 3)
}

// load saves conversations turn after turn, each in a goroutine of its
// own, until stopped between two turns.
type load struct {
	t      *testing.T
	s      *pgstore.Store
	stop   atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	saves  []uint64 // the versions acknowledged, by conversation
	failed chan error
}

// startLoad starts saving n conversations on s.
func startLoad(t *testing.T, s *pgstore.Store, n int) *load {
	t.Helper()
	ctx := t.Context()
	ld := &load{t: t, s: s, saves: make([]uint64, n), failed: make(chan error, n)}
	for i := range n {
		id := fmt.Sprint("c", i)
		l, err := s.Acquire(ctx, id, "node", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		ld.wg.Go(func() {
			st := chatstoretest.State(id)
			mid := st.Scopes[0].Memories[0]
			for !ld.stop.Load() {
				n := st.Version + 1
				b := chatstore.NewBatch()
				change := memory.Change{Tail: []llms.MessageContent{
					llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("turn %d", n)),
					llms.TextParts(llms.ChatMessageTypeAI, fmt.Sprintf("answer %d", n)),
				}}
				if err := s.Memories().Apply(chatstore.WithBatch(ctx, b), mid, change); err != nil {
					ld.failed <- fmt.Errorf("%s: staging turn %d: %w", id, n, err)
					return
				}
				st.Scopes[0].Beans["turn"] = []byte(strconv.FormatUint(n, 10))
				if err := s.Save(ctx, st, l, b); err != nil {
					ld.failed <- fmt.Errorf("%s: saving turn %d: %w", id, n, err)
					return
				}
				ld.mu.Lock()
				ld.saves[i] = st.Version
				ld.mu.Unlock()
			}
		})
	}
	t.Cleanup(func() { ld.stop.Store(true); ld.wg.Wait() })
	return ld
}

// total returns the number of saves acknowledged.
func (ld *load) total() uint64 {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	var n uint64
	for _, v := range ld.saves {
		n += v
	}
	return n
}

// wait waits for n more saves, and fails the test at the first failed
// one.
func (ld *load) wait(n uint64) {
	ld.t.Helper()
	for target := ld.total() + n; ld.total() < target; {
		select {
		case err := <-ld.failed:
			ld.t.Fatal(err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// finish stops the load, reports its failures, and checks that each
// conversation holds each of its acknowledged turns once, in s (the store
// of the server that has them now).
func (ld *load) finish(s *pgstore.Store) {
	ld.t.Helper()
	ld.stop.Store(true)
	ld.wg.Wait()
	close(ld.failed)
	for err := range ld.failed {
		ld.t.Error(err)
	}
	for i, v := range ld.saves {
		id := fmt.Sprint("c", i)
		checkTurns(ld.t, s, id, chatstoretest.State(id).Scopes[0].Memories[0], v)
	}
}

// TestFailoverRestartUnderLoad restarts a PostgreSQL server of its own
// again and again — fast shutdowns, and immediate ones the server
// recovers from — while conversations save turn after turn: no save
// fails, and each conversation holds each of its turns once. It runs
// with CHATGEN_FAILOVER=1 (make failover).
func TestFailoverRestartUnderLoad(t *testing.T) {
	if os.Getenv("CHATGEN_FAILOVER") != "1" {
		t.Skip("set CHATGEN_FAILOVER=1 to restart a PostgreSQL server under load (make failover)")
	}
	srv, _, s := restartable(t, 4)
	ld := startLoad(t, s, 8)
	ld.wait(50)
	for i, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGINT} {
		before := ld.total()
		srv.stop(sig)
		srv.run()
		ld.wait(50)
		t.Logf("restart %d (%v): %d saves before it, %d after", i+1, sig, before, ld.total())
	}
	ld.finish(s)
}

// TestFailoverPromote fails a primary over to its synchronous standby
// while conversations save turn after turn, through a pool whose URL
// names both servers (target_session_attrs=read-write): the primary stops,
// the standby is promoted, and no save fails; the new primary holds each
// acknowledged turn once. It runs with CHATGEN_FAILOVER=1 (make
// failover).
func TestFailoverPromote(t *testing.T) {
	if os.Getenv("CHATGEN_FAILOVER") != "1" {
		t.Skip("set CHATGEN_FAILOVER=1 to fail a PostgreSQL server over under load (make failover)")
	}
	ctx := t.Context()
	primary := newServer(t)
	primary.run()
	standby := newStandby(t, primary)
	standby.run()
	admin, err := pgx.Connect(ctx, primary.url())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	// Synchronous: a save acknowledged is on the standby too.
	if _, err := admin.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = '*'"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	for {
		var sync bool
		if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_replication WHERE sync_state = 'sync')").Scan(&sync); err != nil {
			t.Fatal(err)
		}
		if sync {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	admin.Close(ctx)

	cfg, err := pgxpool.ParseConfig(fmt.Sprintf(
		"postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		primary.port, standby.port))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := migrated(t, pool, &pgstore.Options{RetryTimeout: time.Minute})
	ld := startLoad(t, s, 8)
	ld.wait(100)
	before := ld.total()
	primary.stop(syscall.SIGINT)
	if out, err := standby.command("pg_ctl", "promote", "-w", "-D", standby.data()).CombinedOutput(); err != nil {
		t.Fatalf("promoting the standby: %v\n%s", err, out)
	}
	ld.wait(100)
	t.Logf("failed over after %d saves; %d now", before, ld.total())
	ld.finish(s)
}
