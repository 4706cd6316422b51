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

// A store on a Redis Cluster: each conversation's keys carry its id as
// hash tag, so the conversations spread over the masters. Each save waits
// until the master's replica has it, so that a failover loses no turn a
// client was told is saved.
func ExampleNew_cluster() {
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}})
	defer client.Close()
	store, err := redisstore.New(client, &redisstore.Options{Prefix: "myapp:", TTL: 24 * time.Hour, WaitReplicas: 1})
	if err != nil {
		log.Fatal(err)
	}
	_ = store
}
