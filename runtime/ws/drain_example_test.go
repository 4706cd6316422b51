package ws_test

import (
	"context"
	"log"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// The main() of a replica behind a load balancer or in Kubernetes
// (docs/deploy.md): conversations in Redis, so that any replica serves any
// of them; readiness and liveness probes; on SIGTERM a drain that fits
// Kubernetes' default 30 s grace period (readiness fails, 5 s for the
// endpoints to be updated, then the running turns finish and the clients
// are told to resume elsewhere).
func ExampleServer_ServeUntilSignal() {
	rdb := redis.NewClient(&redis.Options{Addr: "redis.internal:6379"})
	defer rdb.Close()
	store, err := redisstore.New(rdb, &redisstore.Options{TTL: 24 * time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	router, err := chat.NewRouter(&chat.RouterOptions{Store: store}, newRouterPackage())
	if err != nil {
		log.Fatal(err)
	}
	srv := ws.NewServer(router, nil)

	mux := http.NewServeMux()
	mux.Handle("/_chat/", srv)
	mux.Handle("/readyz", srv.ReadinessHandler(func(ctx context.Context) error { return rdb.Ping(ctx).Err() }))
	mux.Handle("/livez", srv.LivenessHandler())
	hs := &http.Server{Addr: ":8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	err = srv.ServeUntilSignal(context.Background(), hs, nil, &ws.DrainOptions{
		Delay:   5 * time.Second,  // Kubernetes takes a few seconds to stop sending connections
		Timeout: 25 * time.Second, // terminationGracePeriodSeconds: 30
	})
	if err != nil {
		log.Fatal(err)
	}
}

// newRouterPackage is the application's package; chatgen generates its
// registration from //chat:route methods.
func newRouterPackage() *chatimpl.Package {
	p := chatimpl.NewPackage("example.com/replica")
	p.AddRoute(chatimpl.RouteSpec{Name: "echo", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		return chat.SendValue(ctx, req.UserMessage())
	}})
	return p
}
