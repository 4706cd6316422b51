package main

import (
	"errors"
	"net/url"
	"testing"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/runtime/pgstore"
)

// TestRun migrates a schema of its own: -check reports it behind, a run
// migrates it, -check then passes.
func TestRun(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t, nil)
	u, err := url.Parse(pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", pool.Config().ConnConfig.RuntimeParams["search_path"])
	u.RawQuery = q.Encode()
	database := u.String()
	if err := run(ctx, database, true); !errors.Is(err, pgstore.ErrSchemaNotReady) {
		t.Fatalf("-check on an empty schema = %v, want ErrSchemaNotReady", err)
	}
	if err := run(ctx, database, false); err != nil {
		t.Fatalf("migrating: %v", err)
	}
	if v, err := pgstore.Version(ctx, pool); err != nil || v != pgstore.SchemaVersion {
		t.Fatalf("schema version after pgmigrate = %d, %v; want %d", v, err, pgstore.SchemaVersion)
	}
	if err := run(ctx, database, true); err != nil {
		t.Fatalf("-check after migrating: %v", err)
	}
}

// TestRunCreatesSchema migrates into "?search_path=" a schema that does
// not exist: pgmigrate creates it.
func TestRunCreatesSchema(t *testing.T) {
	ctx := t.Context()
	schema := pgtest.Schema(t)
	u, err := url.Parse(pgtest.URL())
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	if err := run(ctx, u.String(), false); err != nil {
		t.Fatalf("migrating into a schema that does not exist: %v", err)
	}
	if v, err := pgstore.Version(ctx, pgtest.PoolOn(t, schema, nil)); err != nil || v != pgstore.SchemaVersion {
		t.Fatalf("schema version after pgmigrate = %d, %v; want %d", v, err, pgstore.SchemaVersion)
	}
}
