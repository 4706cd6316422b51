package redisstore_test

import (
	"log"
	"time"

	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
)

// A store shared by the replicas of a service. Conversations idle for a
// day expire with their memories.
func ExampleNew() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer client.Close()
	store, err := redisstore.New(client, &redisstore.Options{Prefix: "myapp:", TTL: 24 * time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	_ = store            // the router's conversation store
	_ = store.Memories() // the memory.Store of the conversations' chat memories
}
