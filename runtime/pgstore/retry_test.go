package pgstore_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tmc/langchaingo/llms"
)

// busyPool returns a pool on a schema of the test's own that never pings
// a connection before handing it out, as a busy pool does not (pgxpool
// pings only those idle for more than a second): a connection the server
// ended is found dead by the request sent on it.
func busyPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	cfg := pgtest.Pool(t, nil).Config()
	cfg.MaxConns = 4
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // before pgtest drops the schema
	return pool
}

// terminateAll opens every connection pool may hold, then has the server
// end their sessions with pg_terminate_backend, as a restart or a failover
// of the server ends them: each answers its next request with SQLSTATE
// 57P01 (admin_shutdown). It returns once the server has ended them all.
func terminateAll(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	ctx := t.Context()
	var conns []*pgxpool.Conn
	var pids []uint32
	var err error
	for len(conns) < int(pool.Config().MaxConns) && err == nil {
		var c *pgxpool.Conn
		if c, err = pool.Acquire(ctx); err != nil {
			break
		}
		if c.Ping(ctx) != nil { // one a former call left dead: the pool drops it
			c.Release()
			continue
		}
		conns = append(conns, c)
		pids = append(pids, c.Conn().PgConn().PID())
	}
	for _, c := range conns {
		c.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	ids := make([]int32, len(pids))
	for i, p := range pids {
		ids[i] = int32(p)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid", ids); err != nil {
		t.Fatal(err)
	}
	for {
		var left int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY ($1)", ids).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("backends %v outlive pg_terminate_backend", pids)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestTerminatedConnections ends the sessions of all the pool's
// connections before each store operation, as a restart or failover of
// PostgreSQL does: each operation still succeeds, once (a save is applied
// once, at the version it should have), on a new connection.
func TestTerminatedConnections(t *testing.T) {
	ctx := t.Context()
	pool := busyPool(t)
	s := migrated(t, pool, &pgstore.Options{TTL: time.Hour})
	ms := s.Memories()

	terminateAll(t, pool)
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	st := chatstoretest.State("c")
	mid := st.Scopes[0].Memories[0]
	for turn := 1; turn <= 3; turn++ {
		b := chatstore.NewBatch()
		if err := ms.Apply(chatstore.WithBatch(ctx, b), mid, memory.Change{Tail: turnMessages(2)}); err != nil {
			t.Fatal(err)
		}
		terminateAll(t, pool)
		if err := s.Save(ctx, st, l, b); err != nil {
			t.Fatalf("Save of turn %d: %v", turn, err)
		}
		if st.Version != uint64(turn) {
			t.Fatalf("after turn %d, the state's version is %d", turn, st.Version)
		}
	}
	terminateAll(t, pool)
	got, err := s.Load(ctx, "c")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got.Version != 3 {
		t.Fatalf("loaded version %d, want 3", got.Version)
	}
	terminateAll(t, pool)
	msgs, err := ms.Get(ctx, mid)
	if err != nil {
		t.Fatalf("Memories.Get: %v", err)
	}
	if len(msgs) != 6 {
		t.Fatalf("the memory holds %d messages after 3 turns of 2, want 6 (each turn saved once)", len(msgs))
	}

	// The memory store's own writes, outside a request.
	terminateAll(t, pool)
	if err := ms.Update(ctx, "m", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "one")}); err != nil {
		t.Fatalf("Memories.Update: %v", err)
	}
	terminateAll(t, pool)
	if err := ms.Apply(ctx, "m", memory.Change{Tail: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeAI, "two")}}); err != nil {
		t.Fatalf("Memories.Apply: %v", err)
	}
	terminateAll(t, pool)
	if msgs, err := ms.Get(ctx, "m"); err != nil || len(msgs) != 2 {
		t.Fatalf("Memories.Get after Update and Apply = %d messages, %v; want 2 (Apply applied once)", len(msgs), err)
	}
	terminateAll(t, pool)
	if ids, err := ms.IDs(ctx); err != nil || !slices.Contains(ids, "m") {
		t.Fatalf("Memories.IDs = %q, %v", ids, err)
	}
	terminateAll(t, pool)
	if err := ms.Delete(ctx, "m"); err != nil {
		t.Fatalf("Memories.Delete: %v", err)
	}
	terminateAll(t, pool)
	if _, err := s.Sweep(ctx); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	terminateAll(t, pool)
	if err := s.Release(ctx, "c", l); err != nil {
		t.Fatalf("Release: %v", err)
	}
	terminateAll(t, pool)
	if err := s.Delete(ctx, "c"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Load(ctx, "c"); !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("Load after Delete = %v, want ErrConversationNotFound", err)
	}
}

// cutter loses the answer to one request of a pool's connections, as a
// network failure or a server failing over during the request does: the
// first request written after arm reaches the server (or, with drop, is
// lost on the way), and once the test closes cut, its connection reads
// an unexpected EOF instead of the answer.
type cutter struct {
	mu    sync.Mutex
	armed bool
	drop  bool
	sent  chan struct{} // closed once the request was written, or dropped
	cut   chan struct{} // closed by the test: the connection fails
}

func (c *cutter) arm(drop bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed, c.drop = true, drop
	c.sent, c.cut = make(chan struct{}), make(chan struct{})
}

type cutConn struct {
	net.Conn
	c      *cutter
	victim atomic.Bool
	drop   bool
	cut    chan struct{}
}

func (c *cutConn) Write(p []byte) (int, error) {
	c.c.mu.Lock()
	first := c.c.armed
	if first {
		c.c.armed = false
		c.drop, c.cut = c.c.drop, c.c.cut
		c.victim.Store(true)
	}
	sent := c.c.sent
	c.c.mu.Unlock()
	if c.victim.Load() && c.drop {
		if first {
			close(sent)
		}
		return len(p), nil
	}
	n, err := c.Conn.Write(p)
	if first {
		close(sent)
	}
	return n, err
}

func (c *cutConn) Read(p []byte) (int, error) {
	if c.victim.Load() {
		<-c.cut
		c.Conn.Close()
		return 0, io.ErrUnexpectedEOF
	}
	return c.Conn.Read(p)
}

// cutPool returns a pool of one connection, on a schema of the test's own,
// whose connections c can cut, and the name of the schema.
func cutPool(t *testing.T, c *cutter) (*pgxpool.Pool, string) {
	t.Helper()
	cfg := pgtest.Pool(t, nil).Config()
	cfg.MaxConns = 1
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	d := &net.Dialer{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &cutConn{Conn: conn, c: c}, nil
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, cfg.ConnConfig.RuntimeParams["search_path"]
}

// TestSaveAnswerLost loses the answer to a save, once after the server
// committed it and once before the server got it: either way Save
// returns nil, and the turn is saved once, at the version it should be.
func TestSaveAnswerLost(t *testing.T) {
	for _, tc := range []struct {
		name      string
		committed bool
	}{{"after the commit", true}, {"before the server got it", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			var c cutter
			pool, schema := cutPool(t, &c)
			s := migrated(t, pool, nil)
			l, err := s.Acquire(ctx, "c", "node", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			st := chatstoretest.State("c")
			mid := st.Scopes[0].Memories[0]
			turn := func() *chatstore.Batch {
				b := chatstore.NewBatch()
				if err := s.Memories().Apply(chatstore.WithBatch(ctx, b), mid, memory.Change{Tail: turnMessages(2)}); err != nil {
					t.Fatal(err)
				}
				return b
			}
			if err := s.Save(ctx, st, l, turn()); err != nil { // the connection knows the statements now
				t.Fatal(err)
			}
			b := turn()
			c.arm(!tc.committed)
			saved := make(chan error, 1)
			go func() { saved <- s.Save(ctx, st, l, b) }()
			<-c.sent
			if tc.committed {
				admin, err := pgx.Connect(ctx, pgtest.URL())
				if err != nil {
					t.Fatal(err)
				}
				defer admin.Close(context.Background())
				for {
					var v int64
					err := admin.QueryRow(ctx, "SELECT version FROM "+schema+".chatgen_conversations WHERE id = 'c'").Scan(&v)
					if err != nil {
						t.Fatal(err)
					}
					if v == 2 {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			close(c.cut)
			if err := <-saved; err != nil {
				t.Fatalf("Save whose answer was lost: %v", err)
			}
			if st.Version != 2 {
				t.Fatalf("state's version %d after the save, want 2", st.Version)
			}
			got, err := s.Load(ctx, "c")
			if err != nil || got.Version != 2 {
				t.Fatalf("Load = %v, %v; want version 2", got, err)
			}
			msgs, err := s.Memories().Get(ctx, mid)
			if err != nil || len(msgs) != 4 {
				t.Fatalf("memory of %d messages (%v) after two turns of 2: want 4, the second turn saved once", len(msgs), err)
			}
		})
	}
}

// TestNoRetryOfOtherErrors: a failure that is not the connection's — a
// database that does not exist, a cancelled context — is not tried again.
func TestNoRetryOfOtherErrors(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg := pgtest.Pool(t, nil).Config()
	cfg.ConnConfig.Database = "chatgen_no_such_database"
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// An hour of retries: the test would time out if New retried.
	if _, err := pgstore.New(t.Context(), pool, &pgstore.Options{RetryTimeout: time.Hour, Logger: logger}); err == nil {
		t.Fatal("New on a database that does not exist succeeded")
	}

	s := migrated(t, busyPool(t), &pgstore.Options{RetryTimeout: time.Hour, Logger: logger})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Load(ctx, "c"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load with a cancelled context = %v", err)
	}
	if l := logs.String(); strings.Contains(l, "trying again") {
		t.Fatalf("retried:\n%s", l)
	}
}
