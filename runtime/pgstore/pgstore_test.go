package pgstore_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/runtime/chat/conversationtest"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/jackc/pgx/v5/pgxpool"
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

func newStore(t *testing.T, ttl time.Duration) conversationtest.Store {
	s := migrated(t, pgtest.Pool(t, nil), &pgstore.Options{TTL: ttl, SweepInterval: 50 * time.Millisecond})
	return conversationtest.Store{Conversations: s, Memories: s.Memories()}
}

func TestConformance(t *testing.T) {
	conversationtest.Run(t, func(t *testing.T) conversationtest.Store { return newStore(t, time.Hour) })
}

func TestConformanceNoTTL(t *testing.T) {
	conversationtest.Run(t, func(t *testing.T) conversationtest.Store { return newStore(t, 0) })
}

func TestExpiry(t *testing.T) {
	conversationtest.RunExpiry(t, newStore)
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
