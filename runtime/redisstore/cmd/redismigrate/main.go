// Command redismigrate moves the conversations and memories that a
// chatgen older than the per-conversation hash tags wrote to Redis into
// redisstore's current key layout (see redisstore.Store.MigrateFrom):
//
//	go run github.com/chatscopes/chatgen/runtime/redisstore/cmd/redismigrate -addr 127.0.0.1:6379 -from 'chatgen:'
//	go run github.com/chatscopes/chatgen/runtime/redisstore/cmd/redismigrate -cluster -addr 10.0.0.1:6379,10.0.0.2:6379 -from '{chatgen}:'
//
// Run it once when upgrading, after stopping the nodes of the older
// version and before starting the new one. It is safe to run again.
// -prefix is the prefix the new version's store uses (default "chatgen:");
// -from the prefix the old one used (default: the same). -ttl is the
// store's time to live (Options.TTL): the memories' home pointers live
// twice as long. Connection settings: -addr (comma-separated for a
// cluster, with -cluster), and REDIS_USERNAME and REDIS_PASSWORD from the
// environment.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "the Redis address (host:port); comma-separated addresses with -cluster")
	cluster := flag.Bool("cluster", false, "connect to a Redis Cluster")
	prefix := flag.String("prefix", "chatgen:", "the key prefix of the new version's store (redisstore.Options.Prefix)")
	from := flag.String("from", "", "the key prefix the old version used (default: -prefix)")
	ttl := flag.Duration("ttl", 0, "the time to live of the new version's store (redisstore.Options.TTL)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	client := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs: strings.Split(*addr, ","), IsClusterMode: *cluster,
		Username: os.Getenv("REDIS_USERNAME"), Password: os.Getenv("REDIS_PASSWORD"),
	})
	defer client.Close()
	if err := run(ctx, client, *prefix, *from, *ttl); err != nil {
		fmt.Fprintln(os.Stderr, "redismigrate:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, client redis.UniversalClient, prefix, from string, ttl time.Duration) error {
	if from == "" {
		from = prefix
	}
	s, err := redisstore.New(client, &redisstore.Options{Prefix: prefix, TTL: ttl})
	if err != nil {
		return err
	}
	mig, err := s.MigrateFrom(ctx, from)
	fmt.Printf("moved %d conversations with %d memories, %d memories of no conversation; %d conversations were there already\n",
		mig.Conversations, mig.Memories, mig.Solo, mig.Existing)
	return err
}
