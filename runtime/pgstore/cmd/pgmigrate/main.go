// Command pgmigrate applies pgstore's migrations to a PostgreSQL database:
//
//	go run github.com/chatscopes/chatgen/runtime/pgstore/cmd/pgmigrate -database "postgres://user@host/db"
//
// -database defaults to $DATABASE_URL; connection settings may also come
// from the PG* environment variables pgx reads. The objects are created in
// the first schema of the connection's search_path (set it with
// "?search_path=name" in the URL), which pgmigrate creates when it does
// not exist. With -check, pgmigrate only reports the schema's version and
// exits with status 1 when it needs migrating.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/jackc/pgx/v5/pgxpool"
)

func main() {
	database := flag.String("database", os.Getenv("DATABASE_URL"), "the database's URL or key=value connection string (default $DATABASE_URL)")
	check := flag.Bool("check", false, "only report the schema's version; exit 1 when it needs migrating")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *database, *check); err != nil {
		fmt.Fprintln(os.Stderr, "pgmigrate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, database string, check bool) error {
	pool, err := pgxpool.New(ctx, database)
	if err != nil {
		return err
	}
	defer pool.Close()
	if check {
		v, err := pgstore.Version(ctx, pool)
		if err != nil {
			return err
		}
		fmt.Printf("schema version %d, this chatgen needs %d\n", v, pgstore.SchemaVersion)
		if v < pgstore.SchemaVersion {
			return pgstore.ErrSchemaNotReady
		}
		return nil
	}
	applied, err := pgstore.Migrate(ctx, pool)
	for _, v := range applied {
		fmt.Printf("applied migration %d\n", v)
	}
	if err != nil {
		return err
	}
	fmt.Printf("schema at version %d\n", pgstore.SchemaVersion)
	return nil
}
