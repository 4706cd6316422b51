// Command fleetnode is a node of the fleet test (internal/fleet): the
// fleet application on a durable store (Redis or PostgreSQL), served as a
// replica's main() serves it: readiness at /readyz (failing while the
// store is unreachable), liveness at /livez, and a drain on SIGTERM
// (ws.Server.ServeUntilSignal).
//
//	fleetnode -addr 127.0.0.1:8081 -node n1 -redis /tmp/redis.sock -prefix fleet: -exec-log exec.log
//	fleetnode -addr 127.0.0.1:8081 -node n1 -postgres 'postgres://…?search_path=s' -exec-log exec.log
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/chatscopes/chatgen/internal/fleet"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/chatscopes/chatgen/runtime/ws"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "fleetnode:", err)
		os.Exit(1)
	}
}

// A store is a conversation store, its memories, a health check and what
// closes it.
type store struct {
	chatstore.ConversationStore
	memories memory.Store
	ping     ws.HealthCheck
	close    func()
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("fleetnode", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8081", "the address to listen on")
	node := fs.String("node", "", "the node's name (leases, the execution log)")
	redisAddr := fs.String("redis", "", "the Redis to keep conversations in: host:port, the path of a Unix socket, or a Redis Cluster's comma-separated seed addresses")
	prefix := fs.String("prefix", "fleet:", "the Redis store's key prefix")
	pgURL := fs.String("postgres", "", "the PostgreSQL to keep conversations in (a migrated schema), instead of Redis")
	execLog := fs.String("exec-log", "", "the file each execution of a turn is appended to")
	leaseTTL := fs.Duration("lease-ttl", 30*time.Second, "the conversations' lease time: how long a conversation of a killed node stays busy")
	turnTime := fs.Duration("turn-time", 0, "how much longer each turn takes (the model's time)")
	delay := fs.Duration("drain-delay", 0, "how long the node serves after readiness fails on SIGTERM")
	timeout := fs.Duration("drain-timeout", ws.DefaultDrainTimeout, "the bound of the drain on SIGTERM")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *node == "" || *execLog == "" || (*redisAddr == "") == (*pgURL == "") {
		return errors.New("-node, -exec-log and one of -redis and -postgres are required")
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})).With("node", *node)

	log, err := os.OpenFile(*execLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()

	var st *store
	if *pgURL != "" {
		st, err = openPostgres(ctx, *pgURL)
	} else {
		st, err = openRedis(*redisAddr, *prefix)
	}
	if err != nil {
		return err
	}
	defer st.close()

	app := fleet.NewApp(*node, st.memories, log, *turnTime)
	router, err := chat.NewRouter(&chat.RouterOptions{Store: st, Node: *node, Logger: logger, LeaseTTL: *leaseTTL}, app.Package())
	if err != nil {
		return err
	}
	srv := ws.NewServer(router, &ws.ServerOptions{Logger: logger})
	mux := http.NewServeMux()
	mux.Handle("/readyz", srv.ReadinessHandler(st.ping))
	mux.Handle("/livez", srv.LivenessHandler())
	mux.Handle("/", srv)
	hs := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	logger.Info("fleetnode: serving", "addr", *addr)
	return srv.ServeUntilSignal(ctx, hs, nil, &ws.DrainOptions{Delay: *delay, Timeout: *timeout})
}

func openRedis(addr, prefix string) (*store, error) {
	var c redis.UniversalClient
	if addrs := strings.Split(addr, ","); len(addrs) > 1 {
		// The seed nodes of a Redis Cluster.
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	} else {
		opts := &redis.Options{Addr: addr}
		if strings.HasPrefix(addr, "/") {
			opts.Network = "unix"
		}
		c = redis.NewClient(opts)
	}
	s, err := redisstore.New(c, &redisstore.Options{Prefix: prefix, TTL: time.Hour})
	if err != nil {
		c.Close()
		return nil, err
	}
	return &store{
		ConversationStore: s,
		memories:          s.Memories(),
		ping:              func(ctx context.Context) error { return c.Ping(ctx).Err() },
		close:             func() { c.Close() },
	}, nil
}

func openPostgres(ctx context.Context, url string) (*store, error) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return nil, err
	}
	s, err := pgstore.New(ctx, pool, &pgstore.Options{TTL: time.Hour})
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &store{
		ConversationStore: s,
		memories:          s.Memories(),
		ping:              pool.Ping,
		close:             func() { s.Close(); pool.Close() },
	}, nil
}
