package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
	"github.com/tmc/langchaingo/llms"
)

// The TestFailover tests change a Redis Cluster of their own under load,
// for seconds to minutes: they run with CHATGEN_FAILOVER=1 (make
// failover), and are skipped otherwise.
func requireFailoverRun(t *testing.T) {
	t.Helper()
	if os.Getenv("CHATGEN_FAILOVER") != "1" {
		t.Skip("changes a Redis Cluster under load: set CHATGEN_FAILOVER=1 (make failover)")
	}
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			msg := bin + " is not installed (apt-get install redis-server redis-tools): " + err.Error()
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
}

// A talker is one client's conversations, saved turn after turn while the
// cluster changes: each turn adds "turn N" to the conversation's memory,
// and every fourth turn writes a second memory, or stops listing it (its
// list is then dropped); every tenth turn renews the lease; every 30th
// turn deletes the conversation and starts another. It counts what the
// store answered.
type talker struct {
	s    *redisstore.Store
	name string
	// knownLen makes the turns tell the memory's length (memory.Change.Len).
	knownLen bool
	// slots, when not 0, keeps the conversations in the hash slots below
	// it.
	slots int

	n       int // conversations started
	ending  bool
	l       chatstore.Lease
	st      *chatstore.ConversationState
	extra   bool   // whether the state lists the second memory
	extraAt uint64 // the turn that last wrote it

	turns, refused, unknown atomic.Int64
	// failures are the errors that are neither a documented refusal
	// (ErrClusterChanging) nor a failed connection: a raw redirection, a
	// script's error. deleted are the conversations deleted.
	mu       sync.Mutex
	failures []error
	deleted  []string
}

func (v *talker) mem() string      { return v.st.ID + "#a" }
func (v *talker) extraMem() string { return v.st.ID + "#b" }

func (v *talker) fail(err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.failures = append(v.failures, err)
}

// check sorts err out: nil for none and for a documented refusal
// (counted), the error for a failure.
func (v *talker) check(what string, err error) (ok bool) {
	var ne net.Error
	switch {
	case err == nil:
		return true
	case errors.Is(err, context.Canceled):
		// The talk ended during the call.
	case errors.Is(err, redisstore.ErrClusterChanging):
		v.refused.Add(1)
	case errors.As(err, &ne), errors.Is(err, redisstore.ErrNotReplicated):
		v.unknown.Add(1)
	default:
		v.fail(fmt.Errorf("%s: %w", what, err))
	}
	return false
}

// start starts a new conversation.
func (v *talker) start(ctx context.Context) {
	v.n++
	id := fmt.Sprintf("%s-%d", v.name, v.n)
	for v.slots > 0 && redistest.KeySlot("{"+id+"}") >= v.slots {
		v.n++
		id = fmt.Sprintf("%s-%d", v.name, v.n)
	}
	v.st = &chatstore.ConversationState{ID: id, Scopes: []chatstore.ScopeState{{ID: id}}}
	v.extra, v.extraAt, v.ending = false, 0, false
	for ctx.Err() == nil {
		l, err := v.s.Acquire(ctx, id, "node-"+v.name, time.Hour)
		if v.check("Acquire", err) {
			v.l = l
			return
		}
	}
}

// sync learns from the store whether a save whose outcome is unknown
// happened, and whether one refused did not.
func (v *talker) sync(ctx context.Context, tried uint64, refused bool) {
	for ctx.Err() == nil {
		st, err := v.s.Load(ctx, v.st.ID)
		if errors.Is(err, chatstore.ErrConversationNotFound) && tried == 1 {
			return // the first save did not happen
		}
		if !v.check("Load", err) {
			continue
		}
		switch {
		case st.Version == tried && !refused:
			v.st.Version = tried
		case st.Version == tried-1:
		default:
			v.fail(fmt.Errorf("conversation %s is at version %d after a save of version %d that was refused (%v) or failed", v.st.ID, st.Version, tried, refused))
		}
		return
	}
}

// turn saves the conversation's next turn, until it is saved or ctx ends.
func (v *talker) turn(ctx context.Context) {
	k := v.st.Version + 1
	for ctx.Err() == nil {
		b := chatstore.NewBatch()
		bctx := chatstore.WithBatch(ctx, b)
		c := memory.Change{Tail: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprint("turn ", k))}}
		if v.knownLen {
			c.Len = int(k - 1)
		}
		if err := v.s.Memories().Apply(bctx, v.mem(), c); err != nil {
			if ctx.Err() != nil {
				return // the talk ended while staging: nothing was written
			}
			v.fail(fmt.Errorf("staging turn %d of %s: %w", k, v.st.ID, err))
			return
		}
		extra := v.extra
		if k%4 == 0 {
			extra = !extra
			if extra {
				if err := v.s.Memories().Update(bctx, v.extraMem(), c.Tail); err != nil {
					if ctx.Err() == nil {
						v.fail(err)
					}
					return
				}
			}
		}
		st := *v.st
		st.Principal = fmt.Sprint("turn ", k)
		st.Scopes = []chatstore.ScopeState{{ID: st.ID, Memories: []string{v.mem()}}}
		if extra {
			st.Scopes[0].Memories = append(st.Scopes[0].Memories, v.extraMem())
		}
		err := v.s.Save(ctx, &st, v.l, b)
		if v.check(fmt.Sprintf("Save of turn %d of %s", k, st.ID), err) {
			*v.st = st
			if extra != v.extra && extra {
				v.extraAt = k
			}
			v.extra = extra
			v.turns.Add(1)
			return
		}
		if ctx.Err() != nil {
			// The talk ended during the save: whether it happened, the
			// store tells.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			ctx = sctx
		}
		v.sync(ctx, k, errors.Is(err, redisstore.ErrClusterChanging))
		if v.st.Version == k {
			st.Version = k
			*v.st = st
			if extra != v.extra && extra {
				v.extraAt = k
			}
			v.extra = extra
			v.turns.Add(1)
			return
		}
	}
}

// run talks until ctx ends.
func (v *talker) run(ctx context.Context) {
	v.start(ctx)
	for ctx.Err() == nil {
		v.turn(ctx)
		switch k := v.st.Version; {
		case k > 0 && k%30 == 0:
			v.ending = true // until the delete is known to have happened
			for ctx.Err() == nil {
				if v.check("Delete", v.s.Delete(ctx, v.st.ID)) {
					v.mu.Lock()
					v.deleted = append(v.deleted, v.st.ID)
					v.mu.Unlock()
					v.start(ctx)
					break
				}
			}
		case k > 0 && k%10 == 0:
			l, err := v.s.Acquire(ctx, v.st.ID, v.l.Owner, time.Hour)
			if v.check("Acquire", err) && l.Token != v.l.Token {
				v.fail(fmt.Errorf("renewing the lease on %s: token %d, want %d", v.st.ID, l.Token, v.l.Token))
			}
		}
	}
}

// requireWhole checks that the conversation is whole: its state and
// memories those of its last turn, every turn in order.
func (v *talker) requireWhole(t *testing.T, ctx context.Context) {
	t.Helper()
	st, err := v.s.Load(ctx, v.st.ID)
	if (v.st.Version == 0 || v.ending) && errors.Is(err, chatstore.ErrConversationNotFound) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != v.st.Version || st.Principal != fmt.Sprint("turn ", st.Version) {
		t.Fatalf("conversation %s is at version %d (%q), its client saved %d", v.st.ID, st.Version, st.Principal, v.st.Version)
	}
	m, err := v.s.Memories().Get(ctx, v.mem())
	if err != nil {
		t.Fatal(err)
	}
	for i, msg := range m {
		if got, want := msg.Parts[0].(llms.TextContent).Text, fmt.Sprint("turn ", i+1); got != want {
			t.Fatalf("message %d of %d of conversation %s is %q, want %q", i, len(m), v.st.ID, got, want)
		}
	}
	if len(m) != int(st.Version) {
		t.Fatalf("conversation %s at version %d has %d turns in its memory", v.st.ID, st.Version, len(m))
	}
	extra, err := v.s.Memories().Get(ctx, v.extraMem())
	if err != nil {
		t.Fatal(err)
	}
	listed := slices.Contains(st.Scopes[0].Memories, v.extraMem())
	switch {
	case listed != v.extra:
		t.Fatalf("conversation %s lists its second memory: %v, its client saved %v", v.st.ID, listed, v.extra)
	case !listed && len(extra) != 0:
		t.Fatalf("the second memory of conversation %s, dropped, holds %d messages", v.st.ID, len(extra))
	case listed && (len(extra) != 1 || extra[0].Parts[0].(llms.TextContent).Text != fmt.Sprint("turn ", v.extraAt)):
		t.Fatalf("the second memory of conversation %s at version %d holds %v, want turn %d", v.st.ID, st.Version, extra, v.extraAt)
	}
}

// redirects counts the answers of nodes that tell a command did not run
// there, by their first word (TRYAGAIN, ASK, MOVED, CLUSTERDOWN, ...): a
// redis.Hook of the node clients of a cluster client.
type redirects struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *redirects) count(cmds ...redis.Cmder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			var re redis.Error
			if word, _, _ := strings.Cut(err.Error(), " "); errors.As(err, &re) && word == strings.ToUpper(word) && word != "ERR" {
				if r.n == nil {
					r.n = map[string]int{}
				}
				r.n[word]++
			}
		}
	}
}

func (r *redirects) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return fmt.Sprint(r.n)
}

func (r *redirects) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *redirects) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		r.count(cmd)
		return err
	}
}

func (r *redirects) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		r.count(cmds...)
		return err
	}
}

// failoverStores returns the stores of the talk: one that saves as is,
// one that waits for a replica, over a client of cl whose node clients
// count the answers r.
func failoverStores(t *testing.T, cl *redistest.Cluster, r *redirects) (*redis.ClusterClient, []*redisstore.Store) {
	t.Helper()
	cc := cl.Client(t)
	cc.OnNewNode(func(n *redis.Client) { n.AddHook(r) })
	p := redistest.Prefix(t, cc, "chatgen-test")
	plain, err := redisstore.New(cc, &redisstore.Options{Prefix: p, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := redisstore.New(cc, &redisstore.Options{Prefix: p, TTL: time.Hour, WaitReplicas: 1, WaitTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return cc, []*redisstore.Store{plain, waiting}
}

// talk runs talkers on stores while change changes the cluster, then
// checks every conversation, and that nothing is left of those deleted.
// Their conversations are in the hash slots below slots (0: in any).
func talk(t *testing.T, stores []*redisstore.Store, c redis.UniversalClient, r *redirects, slots int, change func(ctx context.Context) error) {
	ctx := t.Context()
	var talkers []*talker
	for i := range 24 {
		talkers = append(talkers, &talker{s: stores[i%len(stores)], name: fmt.Sprint("conv-", i), knownLen: i%3 != 0, slots: slots})
	}
	tctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, v := range talkers {
		wg.Go(func() { v.run(tctx) })
	}
	// Let the talk start before the cluster changes.
	for _, v := range talkers {
		for v.turns.Load() < 3 && tctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
	}
	start := time.Now()
	err := change(ctx)
	took := time.Since(start)
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	var turns, refused, unknown int64
	var failures []error
	for _, v := range talkers {
		turns += v.turns.Load()
		refused += v.refused.Load()
		unknown += v.unknown.Load()
		failures = append(failures, v.failures...)
	}
	for i, err := range failures {
		if i == 10 {
			t.Errorf("... and %d more", len(failures)-10)
			break
		}
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	for _, v := range talkers {
		v.requireWhole(t, ctx)
	}
	// Nothing is left of the conversations deleted (but home pointers,
	// which may outlive their conversation: a save does not wait to clear
	// one).
	var deleted []string
	for _, v := range talkers {
		deleted = append(deleted, v.deleted...)
	}
	for _, k := range redistest.Keys(t, c, stores[0].Prefix()) {
		if strings.HasSuffix(k, "}:home") {
			continue
		}
		for _, id := range deleted {
			if strings.Contains(k, "{"+id+"}") || strings.Contains(k, "{"+id+"#") {
				t.Errorf("key %s of deleted conversation %s is left", k, id)
			}
		}
	}
	t.Logf("%d conversations saved %d turns in %v while the cluster changed (%d deleted); the nodes answered %v; %d saves, loads, leases or deletes were refused (ErrClusterChanging) and made again, %d failed with their outcome unknown",
		len(talkers), turns, took.Round(time.Millisecond), len(deleted), r, refused, unknown)
}

// TestFailoverReshard moves hash slots of a Redis Cluster of the test's
// own, three masters with a replica each, from master to master with
// redis-cli --cluster reshard, twelve times, while 24 conversations in
// those slots save turns (half of them waiting for a replica,
// WaitReplicas 1), renew their leases, and are deleted and started again.
// No reshard fails (a save that wrote a memory's list on the target while
// the slot's other keys were on the source makes the MIGRATE of the list
// fail with BUSYKEY), no call returns a raw redirection or a script's
// error, every refused call is refused whole, and every conversation ends
// whole: its state and memories those of its last turn, every turn in
// order.
func TestFailoverReshard(t *testing.T) {
	requireFailoverRun(t)
	cl := redistest.StartCluster(t, 3, 1)
	var r redirects
	cc, stores := failoverStores(t, cl, &r)
	// redis-cli moves the first slots of the source: the first 200 of the
	// first master, then of the master that has them.
	const slots = 200
	talk(t, stores, cc, &r, slots, func(ctx context.Context) error {
		nodes := cl.Nodes()[:3] // the masters, as started
		for i := range 12 {
			from, to := nodes[i%3], nodes[(i+1)%3]
			start := time.Now()
			if _, err := cl.Reshard(ctx, from, to, slots); err != nil {
				return err
			}
			t.Logf("moved %d slots from %s to %s in %v", slots, from.Addr, to.Addr, time.Since(start).Round(time.Millisecond))
		}
		return nil
	})
}

// TestFailoverManual fails each master of a Redis Cluster of the test's
// own over to its replica (CLUSTER FAILOVER), twice, while 24
// conversations save turns as in TestFailoverReshard: no call returns a
// raw redirection (MOVED from a node that is a replica now) or a script's
// error, and every conversation ends whole.
func TestFailoverManual(t *testing.T) {
	requireFailoverRun(t)
	cl := redistest.StartCluster(t, 3, 1)
	var r redirects
	cc, stores := failoverStores(t, cl, &r)
	talk(t, stores, cc, &r, 0, func(ctx context.Context) error {
		for range 2 {
			masters, err := cl.Masters(ctx)
			if err != nil {
				return err
			}
			for addr := range masters {
				r, err := cl.ReplicaOf(ctx, cl.Node(addr))
				if err != nil {
					return err
				}
				start := time.Now()
				if err := cl.Failover(ctx, r); err != nil {
					return err
				}
				t.Logf("failed %s over to %s in %v", addr, r.Addr, time.Since(start).Round(time.Millisecond))
			}
		}
		return nil
	})
}
