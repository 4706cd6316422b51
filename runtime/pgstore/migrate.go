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
const SchemaVersion = 2

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
// versions it applied (none when the schema was up to date) and an error.
// Concurrent calls on one database run one after the other. A database
// whose schema is newer than this package's is left as it is, with an
// error.
//
// When the first schema of the search_path (myapp in
// "?search_path=myapp") does not exist, Migrate creates it, so that the
// objects never land in a later schema of the path; a user who may not
// create it gets an error naming the schema and the statement that makes
// it. A search_path whose first entry is "$user" (PostgreSQL's default)
// is left to PostgreSQL: the objects go in the first schema of it that
// exists.
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
		if err := ensureSchema(ctx, tx); err != nil {
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

// ensureSchema creates the first schema of the search_path when it does
// not exist: PostgreSQL would create the objects in the next schema of
// the path that exists, or fail with "no schema has been selected to
// create in" when none does.
func ensureSchema(ctx context.Context, tx pgx.Tx) error {
	var (
		path, user, db string
		cur            *string
	)
	if err := tx.QueryRow(ctx, "SELECT current_setting('search_path'), current_schema(), current_user, current_database()").Scan(&path, &cur, &user, &db); err != nil {
		return err
	}
	first, ok := firstSchema(path)
	if !ok {
		if cur == nil {
			return fmt.Errorf(`no schema to create the tables in: no schema of the search_path %q exists; name one of your own in the connection's search_path ("?search_path=myapp" in the URL) and migrate again: it is created`, path)
		}
		return nil
	}
	if cur != nil && *cur == first {
		return nil
	}
	ident, role := pgx.Identifier{first}.Sanitize(), pgx.Identifier{user}.Sanitize()
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", first).Scan(&exists); err != nil {
		return err
	}
	if exists { // and the user may not use it: PostgreSQL skips it
		return fmt.Errorf("schema %s, the first of the search_path %q, exists but user %s may not use it: grant it (GRANT USAGE, CREATE ON SCHEMA %s TO %s)", ident, path, role, ident, role)
	}
	if _, err := tx.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		return fmt.Errorf("schema %s, the first of the search_path %q, does not exist, and creating it failed: %w (create it as a user who may, CREATE SCHEMA %s AUTHORIZATION %s, or let user %s create schemas, GRANT CREATE ON DATABASE %s TO %s)", ident, path, err, ident, role, role, pgx.Identifier{db}.Sanitize(), role)
	}
	return nil
}

// firstSchema returns the first schema of a search_path setting, as
// PostgreSQL reads it (unquoted names in lower case, "" in a quoted one
// a quote); not ok when the path is empty or its first entry is not a
// schema to create ($user, pg_temp, pg_catalog) or not a name.
func firstSchema(path string) (name string, ok bool) {
	s := strings.TrimLeft(path, " \t\n\r\f\v")
	if s == "" {
		return "", false
	}
	quoted := s[0] == '"'
	if quoted {
		var b strings.Builder
		for i := 1; ; i++ {
			if i >= len(s) {
				return "", false // no closing quote
			}
			if s[i] == '"' {
				if i+1 < len(s) && s[i+1] == '"' {
					b.WriteByte('"')
					i++
					continue
				}
				break
			}
			b.WriteByte(s[i])
		}
		name = b.String()
	} else {
		name, _, _ = strings.Cut(s, ",")
		// PostgreSQL folds only ASCII letters of an unquoted name.
		name = strings.Map(func(r rune) rune {
			if 'A' <= r && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return r
		}, strings.TrimRight(name, " \t\n\r\f\v"))
	}
	switch {
	case name == "" || name == "$user" || name == "pg_catalog" || strings.HasPrefix(name, "pg_temp"):
		return "", false
	case len(name) > 63: // PostgreSQL would cut it
		return "", false
	}
	return name, true
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
