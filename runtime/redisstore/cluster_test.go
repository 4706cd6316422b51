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
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
)

// TestCluster runs the store on a Redis Cluster of three masters with a
// replica each, started by the test: the conformance suite, the spread of
// conversations over the masters, the round trips of a turn, and last the
// failover of a master killed in the middle of a conversation.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Redis Cluster")
	}
	cl := redistest.StartCluster(t, 3, 1)
	cc := cl.Client(t)
	newClusterStore := func(t testing.TB, ttl time.Duration, waitReplicas int) *redisstore.Store {
		t.Helper()
		s, err := redisstore.New(cc, &redisstore.Options{Prefix: redistest.Prefix(t, cc, "chatgen-test"), TTL: ttl, WaitReplicas: waitReplicas})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	t.Run("Conformance", func(t *testing.T) {
		chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store { return pair(newClusterStore(t, time.Hour, 0)) })
	})
	t.Run("ConformanceWaitReplicas", func(t *testing.T) {
		chatstoretest.Run(t, func(t *testing.T) chatstoretest.Store { return pair(newClusterStore(t, 0, 1)) })
	})
	t.Run("Expiry", func(t *testing.T) {
		chatstoretest.RunExpiry(t, func(t *testing.T, ttl time.Duration) chatstoretest.Store {
			return pair(newClusterStore(t, ttl, 0))
		})
	})

	t.Run("Spread", func(t *testing.T) {
		ctx := t.Context()
		s := newClusterStore(t, time.Hour, 0)
		const n = 1000
		for i := range n {
			id := fmt.Sprintf("conv-%04d", i)
			l, err := s.Acquire(ctx, id, "node", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			st := chatstoretest.State(id)
			b := chatstore.NewBatch()
			if err := s.Memories().Update(chatstore.WithBatch(ctx, b), st.Scopes[1].Memories[0], turnMessages(2)); err != nil {
				t.Fatal(err)
			}
			if err := s.Save(ctx, st, l, b); err != nil {
				t.Fatal(err)
			}
		}
		// Count the conversations, and the memories, each master holds.
		masters, err := cl.Masters(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var counts []string
		for addr := range masters {
			c := cl.Node(addr).Client(t)
			var convs, mems int
			for _, k := range redistest.Keys(t, c, s.Prefix()) {
				switch {
				case strings.HasSuffix(k, "}:conv"):
					convs++
				case strings.Contains(k, "}:mem:"):
					mems++
				}
			}
			counts = append(counts, fmt.Sprintf("%s: %d conversations, %d memories", addr, convs, mems))
			// 1,000 conversations over 3 masters: 333 each on average, with
			// a standard deviation of 15.
			if convs < n/6 || mems != convs {
				t.Errorf("master %s holds %d conversations and %d memories of %d", addr, convs, mems, n)
			}
		}
		slices.Sort(counts)
		t.Logf("%d conversations over %d masters:\n%s", n, len(masters), strings.Join(counts, "\n"))
	})

	t.Run("RoundTrips", func(t *testing.T) {
		for _, wait := range []int{0, 1} {
			t.Run(fmt.Sprint("WaitReplicas=", wait), func(t *testing.T) {
				// Each command and pipeline a node client sends is one
				// round trip: the store's WAIT pipeline goes to the node
				// directly, past the cluster client's own hooks.
				var cnt redistest.RoundTrips
				c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
				c.OnNewNode(func(n *redis.Client) { n.AddHook(&cnt) })
				t.Cleanup(func() { c.Close() })
				s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(t, c, "chatgen-test"), TTL: time.Hour, WaitReplicas: wait})
				if err != nil {
					t.Fatal(err)
				}
				requireTurnRoundTrips(t, s, &cnt)
			})
		}
	})

	t.Run("Migrate", func(t *testing.T) {
		// Older versions asked a cluster for a hash tag on the prefix: all
		// their keys are in one slot.
		p := redistest.Prefix(t, cc, "chatgen-test")
		old := "{" + strings.TrimSuffix(p, ":") + "}:"
		t.Cleanup(func() { redistest.DeleteKeys(t, cc, old) })
		testMigrate(t, cc, old, p)
	})

	t.Run("Failover", func(t *testing.T) { testFailover(t, cl, newClusterStore(t, time.Hour, 1)) })
}

// requireTurnRoundTrips counts the round trips of turns as the runtime
// makes them: a memory that gets the user's message and the AI's answer
// (and, once full, evicts the oldest messages), staged in the request's
// batch, then the save.
func requireTurnRoundTrips(t *testing.T, s *redisstore.Store, cnt *redistest.RoundTrips) {
	t.Helper()
	ctx := t.Context()
	l, err := s.Acquire(ctx, "c", "node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	st := chatstoretest.State("c")
	mem := st.Scopes[1].Memories[0]
	mw, err := memory.Window(10, nil).New(ctx, s.Memories(), mem)
	if err != nil {
		t.Fatal(err)
	}
	if err := mw.Add(ctx, llms.TextParts(llms.ChatMessageTypeSystem, "You build weapons.")); err != nil {
		t.Fatal(err)
	}
	turn := func() int64 {
		b := chatstore.NewBatch()
		bctx := chatstore.WithBatch(ctx, b)
		before := cnt.N()
		if err := mw.Add(bctx, turnMessages(2)...); err != nil {
			t.Fatal(err)
		}
		if err := s.Save(ctx, st, l, b); err != nil {
			t.Fatal(err)
		}
		return cnt.N() - before
	}
	// The first turn loads the scripts into Redis (EVALSHA fails, EVAL
	// runs) and sets the memories' home pointers.
	turn()
	// The window holds 10 messages: the system message and 2 per turn.
	for i := range 3 {
		if n := turn(); n != 1 {
			t.Fatalf("turn %d, memory not full: %d round trips, want 1", i, n)
		}
	}
	// Now the window is full: each turn evicts two messages. The window
	// knows the memory's length (memory.Change.Len), so nothing is read
	// first: the save checks the length the eviction counted on.
	for i := range 4 {
		if n := turn(); n != 1 {
			t.Fatalf("turn %d, evicting: %d round trips, want 1", i, n)
		}
	}
	// The store holds what the window holds (which may be fewer than 10
	// messages: a window evicts whole turns).
	got, err := s.Memories().Get(ctx, mem)
	if err != nil {
		t.Fatal(err)
	}
	want, err := mw.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) < 8 {
		t.Fatalf("memory after the turns: %d messages, the window's %d", len(got), len(want))
	}
	for i := range got {
		if g, w := got[i].Parts[0].(llms.TextContent).Text, want[i].Parts[0].(llms.TextContent).Text; g != w {
			t.Fatalf("message %d of the memory is %q, the window's %q", i, g, w)
		}
	}
	loads := cnt.N()
	if _, err := s.Load(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if n := cnt.N() - loads; n != 1 {
		t.Fatalf("Load: %d round trips, want 1", n)
	}
}

// testFailover saves turns of a conversation, each waiting for a replica
// (WaitReplicas 1), and kills the master of the conversation's slot with
// SIGKILL in the middle: its replica takes over. Every turn whose save
// returned nil is in the conversation afterwards; a save that failed told
// its caller, who loads the conversation to learn whether it happened.
func testFailover(t *testing.T, cl *redistest.Cluster, s *redisstore.Store) {
	ctx := t.Context()
	v := startSaver(t, s)
	master, err := cl.MasterOf(ctx, s.Prefix()+"c{c}:conv")
	if err != nil {
		t.Fatal(err)
	}

	// Once the replica took over, the killed master is started again: it
	// comes back as the new master's replica, which a save waits for.
	restarted := make(chan error, 1)
	var tookOver time.Duration // from the kill to the cluster's being ok again
	var acked uint64           // the last turn whose save returned nil
	var failures []error
	killed, back := false, false
	var killedAt time.Time
	var stall time.Duration // from the kill to the first save acknowledged after it
	afterBack := 0
	deadline := time.Now().Add(2 * time.Minute)
	for turns := 0; afterBack < 10; turns++ {
		if time.Now().After(deadline) {
			t.Fatalf("the conversation did not go on within 2 minutes of the kill; %d errors, the last: %v", len(failures), failures[len(failures)-1])
		}
		if turns == 20 {
			master.Kill()
			killed, killedAt = true, time.Now()
			t.Logf("killed master %s after turn %d", master.Addr, acked)
			go func() {
				if err := cl.WaitOK(ctx); err != nil {
					restarted <- err
					return
				}
				tookOver = time.Since(killedAt)
				if err := master.Restart(); err != nil {
					restarted <- err
					return
				}
				restarted <- cl.WaitReplica(ctx, master)
			}()
		}
		if killed && !back {
			select {
			case err := <-restarted:
				if err != nil {
					t.Fatal(err)
				}
				back = true
			default:
			}
		}
		err := v.turn(ctx)
		if err == nil {
			acked = v.st.Version
			if killed && stall == 0 {
				stall = time.Since(killedAt)
			}
			if back {
				afterBack++
			}
			continue
		}
		if !killed {
			t.Fatalf("turn %d failed before the kill: %v", turns, err)
		}
		failures = append(failures, err)
		// The caller was told: it learns from a Load whether the save
		// happened, once the cluster answers again.
		for {
			st, lerr := s.Load(ctx, "c")
			if lerr == nil {
				if st.Version < acked {
					t.Fatalf("after a failed save, the conversation is at version %d, but turn %d was acknowledged", st.Version, acked)
				}
				v.st = st
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Load after the kill: %v", lerr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if err := cl.WaitOK(ctx); err != nil {
		t.Fatal(err)
	}
	newMaster, err := cl.MasterOf(ctx, s.Prefix()+"c{c}:conv")
	if err != nil {
		t.Fatal(err)
	}
	if newMaster == master {
		t.Fatalf("%s still serves the conversation's slot", master.Addr)
	}
	st := requireConsistent(t, s, v.mem, acked)
	// Every turn is there, in order: none acknowledged was lost.
	m, err := s.Memories().Get(ctx, v.mem)
	if err != nil {
		t.Fatal(err)
	}
	for i, msg := range m {
		if got, want := msg.Parts[0].(llms.TextContent).Text, fmt.Sprint("turn ", i+1); got != want {
			t.Fatalf("message %d is %q, want %q", i, got, want)
		}
	}
	if len(failures) == 0 {
		t.Fatal("no save failed when the master was killed")
	}
	notReplicated := 0
	for _, err := range failures {
		if errors.Is(err, redisstore.ErrNotReplicated) {
			notReplicated++
		}
	}
	t.Logf("replica %s took over from %s %v after the kill; the first save acknowledged after the kill came %v after it; %d saves failed meanwhile (%d not acknowledged by a replica; first: %v); the conversation is at turn %d",
		newMaster.Addr, master.Addr, tookOver.Round(time.Millisecond), stall.Round(time.Millisecond), len(failures), notReplicated, failures[0], st.Version)
}
