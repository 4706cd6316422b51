package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// SchemaVersion is the version of the schema this package needs: the
// number of the last of its migrations.
const SchemaVersion = 1

// ErrSchemaNotReady reports that the database's schema is missing or
// older than [SchemaVersion]: run [Migrate] (or the pgmigrate command).
var ErrSchemaNotReady = errors.New("pgstore: the database schema is missing or out of date (run pgstore.Migrate or go run github.com/chatscopes/chatgen/runtime/pgstore/cmd/pgmigrate)")

// migrationsTable records the migrations applied, one row each.
const migrationsTable = "chatgen_schema_migrations"

// migrationLock is the key of the advisory lock Migrate holds, so that
// concurrent migrations of one database run one after the other.
const migrationLock = 0x63686174676e // "chatgn"

type migration struct {
	version int
	name    string
	sql     string
}

func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v != len(ms)+1 {
			return nil, fmt.Errorf("pgstore: migration file %s is not numbered %03d", e.Name(), len(ms)+1)
		}
		data, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(data)})
	}
	return ms, nil
}

// Migrate brings the schema of the database pool reaches (in the first
// schema of its search_path) to [SchemaVersion], applying the migrations
// it lacks in order, each in a transaction of its own, and returns the
// versions it applied. Concurrent calls on one database run one after the
// other. A database whose schema is newer than this package's is left as
// it is, with an error.
//
// Nothing calls Migrate by itself: run it (or the pgmigrate command) when
// deploying, before [New].
func Migrate(ctx context.Context, pool *pgxpool.Pool) ([]int, error) {
	ms, err := migrations()
	if err != nil {
		return nil, err
	}
	r := retrier{pool: pool, timeout: DefaultRetryTimeout, log: slog.Default()}
	var applied []int
	for {
		var (
			v    int
			done bool
		)
		// Sent again, a migration that committed is found applied.
		err := r.do(ctx, "migration", true, func() (err error) {
			v, done, err = migrateOne(ctx, pool, ms)
			return err
		})
		if err != nil {
			return applied, err
		}
		if done {
			return applied, nil
		}
		applied = append(applied, v)
	}
}

// migrateOne applies the first migration the database lacks, if any.
func migrateOne(ctx context.Context, pool *pgxpool.Pool, ms []migration) (applied int, done bool, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+migrationsTable+
			" (version int PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+migrationsTable).Scan(&cur); err != nil {
			return err
		}
		if cur > len(ms) {
			return fmt.Errorf("the database's schema is at version %d, newer than this chatgen's %d", cur, len(ms))
		}
		if cur == len(ms) {
			done = true
			return nil
		}
		m := ms[cur]
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO "+migrationsTable+" (version, name) VALUES ($1, $2)", m.version, m.name); err != nil {
			return err
		}
		applied = m.version
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("pgstore: migrating: %w", err)
	}
	return applied, done, nil
}

// Version returns the version of the database's schema: 0 when pgstore's
// migrations were never applied to it. Like the store's operations, it is
// tried again on another connection when its connection fails, for up to
// [DefaultRetryTimeout].
func Version(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	return retrier{pool: pool, timeout: DefaultRetryTimeout, log: slog.Default()}.version(ctx)
}

func (r retrier) version(ctx context.Context) (int, error) {
	var v int
	err := r.do(ctx, "schema version", true, func() error {
		return r.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+migrationsTable).Scan(&v)
	})
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && pgErr.Code == "42P01" { // undefined_table
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("pgstore: reading the schema version: %w", err)
	}
	return v, nil
}
