package redisstore_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
)

// TestClusterRedirect fails a Redis Cluster of the test's own over (CLUSTER
// FAILOVER on the replica: it becomes the master, the master its replica)
// under clients that learnt the cluster's layout before and do not follow
// redirections themselves (MaxRedirects -1: go-redis follows up to
// MaxRedirects of them, 3 by default, within milliseconds, which the
// layouts a failover goes through in seconds can exhaust), then calls
// each method of the store once, each on a client of its own: each call
// is first answered MOVED by the old master, which the store retries once
// the client learnt the new layout, and never returns.
func TestClusterRedirect(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	cl := redistest.StartCluster(t, 1, 1)
	ctx := t.Context()
	p := redistest.Prefix(t, cl.Client(t), "chatgen-test")
	newStore := func(opts redisstore.Options) *redisstore.Store {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRedirects: -1})
		t.Cleanup(func() { cc.Close() })
		opts.Prefix, opts.TTL = p, time.Hour
		s, err := redisstore.New(cc, &opts)
		if err != nil {
			t.Fatal(err)
		}
		// The client learns the layout.
		if _, err := s.Load(ctx, "c"); err != nil && !errors.Is(err, chatstore.ErrConversationNotFound) {
			t.Fatal(err)
		}
		return s
	}
	v := startSaver(t, newStore(redisstore.Options{}))
	type call struct {
		name string
		call func(s *redisstore.Store) error
	}
	calls := []call{
		{"Acquire", func(s *redisstore.Store) error {
			l, err := s.Acquire(ctx, "c", v.l.Owner, time.Hour)
			if err == nil && l.Token != v.l.Token {
				err = fmt.Errorf("the renewed lease has token %d, want %d", l.Token, v.l.Token)
			}
			return err
		}},
		{"Save", func(s *redisstore.Store) error {
			v.s = s
			return v.turn(ctx)
		}},
		{"Load", func(s *redisstore.Store) error {
			st, err := s.Load(ctx, "c")
			if err == nil && st.Version != v.st.Version {
				err = fmt.Errorf("version %d, want %d", st.Version, v.st.Version)
			}
			return err
		}},
		{"MemoryGet", func(s *redisstore.Store) error {
			m, err := s.Memories().Get(ctx, v.mem)
			if err == nil && len(m) != int(v.st.Version) {
				err = fmt.Errorf("%d messages, want %d", len(m), v.st.Version)
			}
			return err
		}},
		{"MemoryApply", func(s *redisstore.Store) error {
			// Outside a request: the change is written at once.
			return s.Memories().Apply(ctx, v.mem, memory.Change{Drop: 1, Head: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "turn 1")}})
		}},
		{"Release", func(s *redisstore.Store) error { return s.Release(ctx, "c", v.l) }},
		{"Delete", func(s *redisstore.Store) error { return s.Delete(ctx, "c") }},
	}
	stores := make([]*redisstore.Store, len(calls))
	for i := range calls {
		stores[i] = newStore(redisstore.Options{})
	}
	// The replica that was the master a moment ago may take a while to be
	// in sync again: a save waits for it.
	waiting := newStore(redisstore.Options{WaitReplicas: 1, WaitTimeout: time.Minute})
	calls = slices.Insert(calls, 2, call{"SaveWaitReplicas", func(*redisstore.Store) error {
		v.s = waiting
		return v.turn(ctx)
	}})
	stores = slices.Insert(stores, 2, waiting)

	master, err := cl.MasterOf(ctx, p+"c{c}:conv")
	if err != nil {
		t.Fatal(err)
	}
	replica, err := cl.ReplicaOf(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Failover(ctx, replica); err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		if err := c.call(stores[i]); err != nil {
			t.Fatalf("%s after a failover: %v", c.name, err)
		}
	}
	for _, k := range redistest.Keys(t, cl.Client(t), p) {
		if !strings.HasSuffix(k, "}:home") {
			t.Errorf("key %s is left after Delete", k)
		}
	}
}
