package pgstore_test

import (
	"context"
	"log"
	"time"

	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/jackc/pgx/v5/pgxpool"
)

// A store shared by the replicas of a service. The schema was migrated
// when deploying (pgstore.Migrate, or the pgmigrate command); New only
// checks it. Conversations idle for a day expire with their memories.
func ExampleNew() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@db.internal/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	store, err := pgstore.New(ctx, pool, &pgstore.Options{TTL: 24 * time.Hour})
	if err != nil {
		log.Fatal(err) // errors.Is(err, pgstore.ErrSchemaNotReady): run the migrations
	}
	defer store.Close()
	_ = store            // the router's conversation store
	_ = store.Memories() // the memory.Store of the conversations' chat memories
}

// Migrating at deployment, from a program of your own.
func ExampleMigrate() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://admin@db.internal/app")
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	applied, err := pgstore.Migrate(ctx, pool)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("applied migrations %v", applied)
}
