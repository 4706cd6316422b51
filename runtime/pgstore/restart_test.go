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

// TestFailoverRestartUnderLoad restarts a PostgreSQL server of its own
// again and again — fast shutdowns, and immediate ones the server
// recovers from — while conversations save turn after turn: no save
// fails, and each conversation holds each of its turns once. It runs
// with CHATGEN_FAILOVER=1 (make failover).
func TestFailoverRestartUnderLoad(t *testing.T) {
	if os.Getenv("CHATGEN_FAILOVER") != "1" {
		t.Skip("set CHATGEN_FAILOVER=1 to restart a PostgreSQL server under load (make failover)")
	}
	const conversations = 8
	srv, _, s := restartable(t, 4)
	ctx := t.Context()

	var (
		stop   atomic.Bool // the workers stop between turns, not in a save
		wg     sync.WaitGroup
		mu     sync.Mutex
		saves  [conversations]uint64
		failed = make(chan error, conversations)
	)
	for i := range conversations {
		id := fmt.Sprint("c", i)
		l, err := s.Acquire(ctx, id, "node", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			st := chatstoretest.State(id)
			mid := st.Scopes[0].Memories[0]
			for !stop.Load() {
				n := st.Version + 1
				b := chatstore.NewBatch()
				change := memory.Change{Tail: []llms.MessageContent{
					llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("turn %d", n)),
					llms.TextParts(llms.ChatMessageTypeAI, fmt.Sprintf("answer %d", n)),
				}}
				if err := s.Memories().Apply(chatstore.WithBatch(ctx, b), mid, change); err != nil {
					failed <- fmt.Errorf("%s: staging turn %d: %w", id, n, err)
					return
				}
				st.Scopes[0].Beans["turn"] = []byte(strconv.FormatUint(n, 10))
				if err := s.Save(ctx, st, l, b); err != nil {
					failed <- fmt.Errorf("%s: saving turn %d: %w", id, n, err)
					return
				}
				mu.Lock()
				saves[i] = st.Version
				mu.Unlock()
			}
		})
	}
	total := func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		var n uint64
		for _, v := range saves {
			n += v
		}
		return n
	}
	// waitSaves waits for n more saves, or a failure.
	waitSaves := func(n uint64) {
		t.Helper()
		for target := total() + n; total() < target; {
			select {
			case err := <-failed:
				t.Fatal(err)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitSaves(50)
	for i, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGINT} {
		before := total()
		srv.stop(sig)
		srv.run()
		waitSaves(50)
		t.Logf("restart %d (%v): %d saves before it, %d after", i+1, sig, before, total())
	}
	stop.Store(true)
	wg.Wait()
	close(failed)
	for err := range failed {
		t.Error(err)
	}
	for i, v := range saves {
		checkTurns(t, s, fmt.Sprint("c", i), chatstoretest.State(fmt.Sprint("c", i)).Scopes[0].Memories[0], v)
	}
}
