package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// tablesIn returns how many of pgstore's tables schema holds.
func tablesIn(t *testing.T, pool *pgxpool.Pool, schema string) int {
	t.Helper()
	var n int
	err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'chatgen\_%'`, schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMigrateCreatesSchema migrates into a search_path whose first schema
// does not exist: Migrate creates it and puts the tables there, not in a
// later schema of the path, and the store works.
func TestMigrateCreatesSchema(t *testing.T) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	quoted := "Chatgen Test " + hex.EncodeToString(b[:])
	for _, tc := range []struct {
		name string
		path func(t *testing.T) (searchPath, first string, later []string)
	}{
		{"one schema", func(t *testing.T) (string, string, []string) {
			s := pgtest.Schema(t)
			return s, s, nil
		}},
		{"a later schema exists", func(t *testing.T) (string, string, []string) {
			s, later := pgtest.Schema(t), pgtest.Schema(t)
			admin, err := pgx.Connect(t.Context(), pgtest.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(context.Background())
			if _, err := admin.Exec(t.Context(), "CREATE SCHEMA "+later); err != nil {
				t.Fatal(err)
			}
			return s + ", " + later, s, []string{later}
		}},
		{"a quoted name", func(t *testing.T) (string, string, []string) {
			ident := pgx.Identifier{quoted}.Sanitize()
			pgtest.DropAtEnd(t, ident)
			return ident, quoted, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			path, first, later := tc.path(t)
			pool := pgtest.PoolOn(t, path, nil)
			if _, err := pgstore.New(ctx, pool, nil); err == nil {
				t.Fatal("New before the migration succeeded")
			}
			if _, err := pgstore.Migrate(ctx, pool); err != nil {
				t.Fatalf("migrating into search_path %s: %v", path, err)
			}
			if n := tablesIn(t, pool, first); n != 6 {
				t.Fatalf("schema %q holds %d of pgstore's 6 tables", first, n)
			}
			for _, l := range later {
				if n := tablesIn(t, pool, l); n != 0 {
					t.Fatalf("schema %q, later in the search_path, holds %d of pgstore's tables", l, n)
				}
			}
			s, err := pgstore.New(ctx, pool, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			l, err := s.Acquire(ctx, "c", "node", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Save(ctx, chatstoretest.State("c"), l, nil); err != nil {
				t.Fatal(err)
			}
			if applied, err := pgstore.Migrate(ctx, pool); err != nil || len(applied) != 0 {
				t.Fatalf("migrating again = %v, %v; want nothing applied", applied, err)
			}
		})
	}
}

// TestMigrateSchemaNotCreatable migrates, as a user who may not create
// schemas, into a search_path whose schema does not exist: the error names
// the schema and says how to make it.
func TestMigrateSchemaNotCreatable(t *testing.T) {
	ctx := t.Context()
	schema := pgtest.Schema(t)
	admin, err := pgx.Connect(ctx, pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	role := schema + "_user"
	if _, err := admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the pool closes
		c, err := pgx.Connect(context.Background(), pgtest.URL())
		if err == nil {
			defer c.Close(context.Background())
			_, err = c.Exec(context.Background(), "DROP ROLE "+role)
		}
		if err != nil {
			t.Errorf("dropping role %s: %v", role, err)
		}
	})
	cfg, err := pgxpool.ParseConfig(pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.User = role
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	_, err = pgstore.Migrate(ctx, pool)
	if err == nil {
		t.Fatal("a user who may not create schemas migrated into a schema that does not exist")
	}
	ident, user := pgx.Identifier{schema}.Sanitize(), pgx.Identifier{role}.Sanitize()
	for _, want := range []string{ident, "does not exist", "CREATE SCHEMA " + ident + " AUTHORIZATION " + user, "GRANT CREATE ON DATABASE " + pgx.Identifier{cfg.ConnConfig.Database}.Sanitize() + " TO " + user} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
}
