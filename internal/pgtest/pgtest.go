// Package pgtest holds what the tests that use PostgreSQL share: a pool on
// a schema of the test's own in the PostgreSQL of the development and CI
// machines (dropped when the test ends), and a count of round trips.
//
// A test that needs the shared PostgreSQL fails under CI=true when it is
// unreachable, and is skipped otherwise.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// URL is the PostgreSQL of the development and CI machines (trust auth,
// database "test"); $CHATGEN_TEST_POSTGRES overrides it.
func URL() string {
	if u := os.Getenv("CHATGEN_TEST_POSTGRES"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// unavailable fails t under CI=true and skips it otherwise.
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// RoundTrips counts round trips: the writes of requests to the server (a
// pipeline is one write).
type RoundTrips struct{ n atomic.Int64 }

// N returns the count.
func (r *RoundTrips) N() int64 { return r.n.Load() }

type countingConn struct {
	net.Conn
	r *RoundTrips
}

func (c countingConn) Write(p []byte) (int, error) {
	c.r.n.Add(1)
	return c.Conn.Write(p)
}

// Pool returns a pool on a new schema of its own (first in the search
// path) in the PostgreSQL at [URL], with nothing in it; the schema is
// dropped and the pool closed when the test ends. With rt non-nil, it
// counts the round trips of the pool's connections.
func Pool(t testing.TB, rt *RoundTrips) *pgxpool.Pool {
	t.Helper()
	schema := Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, URL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	return PoolOn(t, schema, rt)
}

// Schema returns the name of a schema of the test's own in the
// PostgreSQL at [URL], which does not exist yet; it is dropped, if it
// exists then, when the test ends. The name needs no quoting.
func Schema(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, URL())
	if err != nil {
		unavailable(t, "PostgreSQL at "+URL()+" is unreachable ("+err.Error()+")")
	}
	admin.Close(ctx)
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "chatgen_test_" + hex.EncodeToString(b[:])
	DropAtEnd(t, schema)
	return schema
}

// DropAtEnd drops schema (an identifier, quoted if need be), if it
// exists, when the test ends.
func DropAtEnd(t testing.TB, schema string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, URL())
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
}

// PoolOn returns a pool in the PostgreSQL at [URL] whose connections'
// search_path is searchPath, closed when the test ends (before the
// schemas of [Schema] and [DropAtEnd] are dropped). With rt non-nil, it
// counts the round trips of the pool's connections.
func PoolOn(t testing.TB, searchPath string, rt *RoundTrips) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = searchPath
	if rt != nil {
		d := &net.Dialer{}
		cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{c, rt}, nil
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // runs before the drop: cleanups run last first
	return pool
}
