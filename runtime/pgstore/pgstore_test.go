package pgstore_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tmc/langchaingo/llms"
)

// migrated returns a store on a fresh migrated schema.
func migrated(t testing.TB, pool *pgxpool.Pool, opts *pgstore.Options) *pgstore.Store {
	t.Helper()
	if _, err := pgstore.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(t.Context(), pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newStore(t *testing.T, ttl time.Duration) chatstoretest.Store {
	s := migrated(t, pgtest.Pool(t, nil), &pgstore.Options{TTL: ttl, SweepInterval: 50 * time.Millisecond})
	return chatstoretest.Store{Conversations: s, Memories: s.Memories()}
}

func TestConformance(t *testing.T) {
	chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store { return newStore(t, time.Hour) })
}

func TestConformanceNoTTL(t *testing.T) {
	chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store { return newStore(t, 0) })
}

func TestExpiry(t *testing.T) {
	chatstoretest.RunExpiry(t, newStore)
}

// TestNewNeedsMigration: New refuses a database without the schema, and
// does not create it; Migrate does, once.
func TestNewNeedsMigration(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t, nil)
	if _, err := pgstore.New(ctx, pool, nil); !errors.Is(err, pgstore.ErrSchemaNotReady) {
		t.Fatalf("New on an empty schema = %v, want ErrSchemaNotReady", err)
	}
	if v, err := pgstore.Version(ctx, pool); err != nil || v != 0 {
		t.Fatalf("Version after a refused New = %d, %v; want 0 (New must not migrate)", v, err)
	}
	applied, err := pgstore.Migrate(ctx, pool)
	if err != nil || len(applied) != pgstore.SchemaVersion {
		t.Fatalf("Migrate = %v, %v", applied, err)
	}
	if applied, err := pgstore.Migrate(ctx, pool); err != nil || len(applied) != 0 {
		t.Fatalf("second Migrate = %v, %v; want nothing applied", applied, err)
	}
	s, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	// A schema newer than the package's is refused too.
	if _, err := pool.Exec(ctx, "INSERT INTO chatgen_schema_migrations (version, name) VALUES ($1, 'future')", pgstore.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.New(ctx, pool, nil); err == nil {
		t.Fatal("New on a newer schema succeeded")
	}
	if _, err := pgstore.Migrate(ctx, pool); err == nil {
		t.Fatal("Migrate on a newer schema succeeded")
	}
}

// TestSweep shows the sweeper's work done by hand: expired conversations,
// their memories and their leases leave the database.
func TestSweep(t *testing.T) {
	ctx := t.Context()
	s := migrated(t, pgtest.Pool(t, nil), &pgstore.Options{TTL: 100 * time.Millisecond, SweepInterval: time.Hour})
	for _, id := range []string{"a", "b"} {
		l, err := s.Acquire(ctx, id, "node", 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		st := chatstoretest.State(id)
		b := chatstore.NewBatch()
		if err := s.Memories().Update(chatstore.WithBatch(ctx, b), st.Scopes[0].Memories[0],
			[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, id)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, st, l, b); err != nil {
			t.Fatal(err)
		}
	}
	// A lease on a conversation never saved.
	if _, err := s.Acquire(ctx, "never", "node", 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(250 * time.Millisecond) // past the TTL, and past the leases' expiry by a TTL
	n, err := s.Sweep(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Sweep = %d, %v; want 2 conversations", n, err)
	}
	if ids, err := s.Memories().IDs(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("memory ids after the sweep: %q, %v", ids, err)
	}
	// The leases went too: a new lease of "never" gets a new token, which
	// it would not if node's expired lease were still there.
	l, err := s.Acquire(ctx, "never", "node", time.Minute)
	if err != nil || l.Token != 4 {
		t.Fatalf("Acquire after the sweep = %+v, %v; want token 4", l, err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second Sweep = %d, %v", n, err)
	}
}

// TestSaveDeleteSweep runs saves, deletes and sweeps of the same
// conversations at once: each fails only as the contract says (a lost
// lease, a conflict), never with a deadlock PostgreSQL had to break.
func TestSaveDeleteSweep(t *testing.T) {
	ctx := t.Context()
	s := migrated(t, pgtest.Pool(t, nil), &pgstore.Options{TTL: 20 * time.Millisecond, SweepInterval: time.Hour})
	const rounds, workers = 200, 3
	var wg sync.WaitGroup
	errs := make(chan error, 3*workers*rounds)
	for range workers {
		wg.Go(func() {
			for i := range rounds {
				id := fmt.Sprint("c", i%5)
				l, err := s.Acquire(ctx, id, "node", time.Minute)
				if err != nil {
					errs <- err
					continue
				}
				st, err := s.Load(ctx, id)
				if errors.Is(err, chatstore.ErrConversationNotFound) {
					st, err = chatstoretest.State(id), nil
				}
				if err != nil {
					errs <- err
					continue
				}
				b := chatstore.NewBatch()
				if err := s.Memories().Apply(chatstore.WithBatch(ctx, b), st.Scopes[0].Memories[0],
					memory.Change{Tail: turnMessages(30)}); err != nil {
					errs <- err
					continue
				}
				if err := s.Save(ctx, st, l, b); err != nil && !errors.Is(err, chatstore.ErrLeaseLost) && !errors.Is(err, chatstore.ErrVersionConflict) {
					errs <- err
				}
			}
		})
		wg.Go(func() {
			for i := range rounds {
				if err := s.Delete(ctx, fmt.Sprint("c", (i+2)%5)); err != nil {
					errs <- err
				}
			}
		})
		wg.Go(func() {
			for range rounds {
				if _, err := s.Sweep(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestExpiredOnAccess: with no sweep, an expired conversation is not
// loaded, a save from its version finds it gone, and a new conversation of
// the same id starts without its memories.
func TestExpiredOnAccess(t *testing.T) {
	ctx := t.Context()
	s := migrated(t, pgtest.Pool(t, nil), &pgstore.Options{TTL: 100 * time.Millisecond, SweepInterval: time.Hour})
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	st := chatstoretest.State("c")
	mid := st.Scopes[0].Memories[0]
	b := chatstore.NewBatch()
	if err := s.Memories().Update(chatstore.WithBatch(ctx, b), mid, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(ctx, st, l, b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // past the TTL
	if _, err := s.Load(ctx, "c"); !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("Load of an expired conversation = %v, want ErrConversationNotFound", err)
	}
	if err := s.Save(ctx, st, l, nil); !errors.Is(err, chatstore.ErrVersionConflict) || !errors.Is(err, chatstore.ErrConversationNotFound) {
		t.Fatalf("Save from the expired version = %v, want a conflict with ErrConversationNotFound", err)
	}
	fresh := chatstoretest.State("c")
	if err := s.Save(ctx, fresh, l, nil); err != nil {
		t.Fatalf("creating the conversation again: %v", err)
	}
	if msgs, err := s.Memories().Get(ctx, mid); err != nil || len(msgs) != 0 {
		t.Fatalf("the expired conversation's memory after a new one of the same id: %v, %v", msgs, err)
	}
}
