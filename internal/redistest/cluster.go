package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Cluster is a Redis Cluster of the test's own: redis-server processes
// in cluster mode on free loopback ports, each in a directory of its own,
// with a short cluster-node-timeout (1 s) so that a replica takes over a
// killed master within seconds.
type Cluster struct {
	t     testing.TB
	dir   string
	nodes []*ClusterNode

	mu sync.Mutex
	// failedOver records when [Cluster.Failover] last moved a master's
	// slots to its replica, by that master.
	failedOver map[*ClusterNode]time.Time
}

// A ClusterNode is one redis-server of a [Cluster]. Its methods may be
// called from any goroutine.
type ClusterNode struct {
	// Addr is the node's host:port on loopback.
	Addr string
	// ID is the node's cluster node id.
	ID string
	// Master is the Addr of the master it was started as a replica of, ""
	// for a master (the roles change on a failover; [Cluster.Masters]
	// asks the cluster).
	Master string

	port int
	dir  string

	mu   sync.Mutex
	proc *process // nil when not running
}

// NodeTimeout is the cluster-node-timeout of a [Cluster]: how long a
// master may be unreachable before its replica starts a failover.
const NodeTimeout = time.Second

// StartCluster starts a cluster of masters masters, each with
// replicasPerMaster replicas, the slots spread evenly over the masters, and
// waits until every node reports cluster_state:ok and every replica is in
// sync with its master. The processes are killed when the test ends.
// Without the redis-server binary the test fails under CI=true and is
// skipped otherwise.
func StartCluster(t testing.TB, masters, replicasPerMaster int) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		unavailable(t, "redis-server is not installed (apt-get install redis-server): "+err.Error())
	}
	if masters < 1 || replicasPerMaster < 0 {
		t.Fatalf("redistest: a cluster of %d masters with %d replicas each", masters, replicasPerMaster)
	}
	dir, err := os.MkdirTemp("", "redistest-cluster")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, dir: dir}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			n.kill()
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing the cluster's directory: %v", err)
		}
	})
	total := masters * (1 + replicasPerMaster)
	for i := range total {
		c.nodes = append(c.nodes, c.startNode(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.form(ctx, masters, replicasPerMaster); err != nil {
		t.Fatalf("redistest: forming the cluster: %v\n%s", err, c.logs())
	}
	return c
}

// startNode starts node i on a free port, retrying when another process
// takes the port (or its cluster bus port, 10000 above) first.
func (c *Cluster) startNode(i int) *ClusterNode {
	c.t.Helper()
	var last error
	for attempt := range 10 {
		port, err := freeClusterPort()
		if err != nil {
			last = err
			continue
		}
		// A directory per attempt: a failed start may leave a
		// nodes.conf behind.
		n := &ClusterNode{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port: port,
			dir: filepath.Join(c.dir, fmt.Sprintf("%d-%d", i, attempt))}
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			c.t.Fatal(err)
		}
		if last = n.start(); last == nil {
			return n
		}
	}
	c.t.Fatalf("redistest: starting cluster node %d: %v", i, last)
	return nil
}

// freeClusterPort returns a loopback port that is free, as is the port
// 10000 above it (the cluster bus).
func freeClusterPort() (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if port+10000 > 65535 {
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		if err != nil {
			continue
		}
		bus.Close()
		return port, nil
	}
	return 0, errors.New("no free port pair found")
}

func (n *ClusterNode) logPath() string { return filepath.Join(n.dir, "redis.log") }

// start runs the node's process and waits until it answers PING.
func (n *ClusterNode) start() error {
	p, err := startProcess([]string{"--port", strconv.Itoa(n.port), "--bind", "127.0.0.1",
		"--dir", n.dir, "--save", "", "--appendonly", "no",
		"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(n.dir, "nodes.conf"),
		"--cluster-node-timeout", strconv.FormatInt(NodeTimeout.Milliseconds(), 10),
		// A replica takes over however long ago it last heard from its
		// master, and stays with it.
		"--cluster-replica-validity-factor", "0", "--cluster-allow-replica-migration", "no",
		// A replica's full sync starts at once (the default waits 5 s
		// for more replicas to share it).
		"--repl-diskless-sync-delay", "0"}, "tcp", n.Addr, n.logPath())
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.proc = p
	n.mu.Unlock()
	return nil
}

// kill stops the node's process with SIGKILL, if it runs.
func (n *ClusterNode) kill() {
	n.mu.Lock()
	p := n.proc
	n.proc = nil
	n.mu.Unlock()
	if p != nil {
		p.kill()
	}
}

// form assigns the slots, joins the nodes and attaches the replicas, then
// waits for the cluster to be ok.
func (c *Cluster) form(ctx context.Context, masters, replicasPerMaster int) error {
	clients := make([]*redis.Client, len(c.nodes))
	for i, n := range c.nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		defer clients[i].Close()
		id, err := clients[i].ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("CLUSTER MYID on %s: %w", n.Addr, err)
		}
		n.ID = id
	}
	for i := range masters {
		lo := i * 16384 / masters
		hi := (i+1)*16384/masters - 1
		if err := clients[i].ClusterAddSlotsRange(ctx, lo, hi).Err(); err != nil {
			return fmt.Errorf("CLUSTER ADDSLOTSRANGE on %s: %w", c.nodes[i].Addr, err)
		}
	}
	for i, n := range c.nodes[1:] {
		if err := clients[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(n.port)).Err(); err != nil {
			return fmt.Errorf("CLUSTER MEET %s: %w", c.nodes[i+1].Addr, err)
		}
	}
	// A replica can be attached once it knows its master.
	for i := masters; i < len(c.nodes); i++ {
		m := (i - masters) / replicasPerMaster
		c.nodes[i].Master = c.nodes[m].Addr
		for {
			err := clients[i].ClusterReplicate(ctx, c.nodes[m].ID).Err()
			if err == nil {
				break
			}
			if !strings.Contains(err.Error(), "Unknown node") {
				return fmt.Errorf("CLUSTER REPLICATE on %s: %w", c.nodes[i].Addr, err)
			}
			if err := sleep(ctx, 20*time.Millisecond); err != nil {
				return fmt.Errorf("%s does not know its master %s: %w", c.nodes[i].Addr, c.nodes[m].Addr, err)
			}
		}
	}
	return c.waitReady(ctx, masters, replicasPerMaster)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// waitReady waits until every running node reports cluster_state:ok and
// knows every node, and the masters have their replicas online.
func (c *Cluster) waitReady(ctx context.Context, masters, replicasPerMaster int) error {
	for _, n := range c.nodes {
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		err := func() error {
			defer cl.Close()
			for {
				info, err := cl.ClusterInfo(ctx).Result()
				ok := err == nil && strings.Contains(info, "cluster_state:ok") &&
					strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.nodes))+"\r")
				if ok {
					repl, err := cl.Info(ctx, "replication").Result()
					switch {
					case err != nil:
						ok = false
					case strings.Contains(repl, "role:master"):
						ok = strings.Contains(repl, "connected_slaves:"+strconv.Itoa(replicasPerMaster)+"\r") &&
							strings.Count(repl, "state=online") == replicasPerMaster
					default:
						ok = strings.Contains(repl, "master_link_status:up")
					}
				}
				if ok {
					return nil
				}
				if err := sleep(ctx, 20*time.Millisecond); err != nil {
					return fmt.Errorf("%s is not ready: %v (last answer %q)", n.Addr, err, info)
				}
			}
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// logs returns the nodes' log files, for a failure message.
func (c *Cluster) logs() string {
	var b strings.Builder
	for _, n := range c.nodes {
		log, _ := os.ReadFile(n.logPath())
		fmt.Fprintf(&b, "--- %s\n%s", n.Addr, log)
	}
	return b.String()
}

// Nodes returns the cluster's nodes, the masters first as started.
func (c *Cluster) Nodes() []*ClusterNode { return c.nodes }

// Addrs returns the addresses of the nodes, for redis.ClusterOptions.Addrs.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Client returns a client of the cluster, closed when the test ends. It
// routes reads to masters only.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// Node returns the node at addr, nil when there is none.
func (c *Cluster) Node(addr string) *ClusterNode {
	for _, n := range c.nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// MasterOf returns the node that serves the slot of key now, as a running
// node reports it.
func (c *Cluster) MasterOf(ctx context.Context, key string) (*ClusterNode, error) {
	return c.masterOfSlot(ctx, KeySlot(key))
}

func (c *Cluster) masterOfSlot(ctx context.Context, slot int) (*ClusterNode, error) {
	slots, err := c.slots(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range slots {
		if s.Start <= slot && slot <= s.End && len(s.Nodes) > 0 {
			if m := c.Node(s.Nodes[0].Addr); m != nil {
				return m, nil
			}
		}
	}
	return nil, fmt.Errorf("no node serves slot %d", slot)
}

// slots returns the slot ranges and their nodes, master first, as the
// first running node that answers reports them.
func (c *Cluster) slots(ctx context.Context) ([]redis.ClusterSlot, error) {
	var last error
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		slots, err := nodeSlots(ctx, n.Addr)
		if err == nil {
			return slots, nil
		}
		last = err
	}
	return nil, fmt.Errorf("no running node answers: %v", last)
}

// nodeSlots returns the slot ranges and their nodes as the node at addr
// reports them.
func nodeSlots(ctx context.Context, addr string) ([]redis.ClusterSlot, error) {
	cl := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer cl.Close()
	//lint:ignore SA1019 CLUSTER SLOTS answers on every Redis of the 7 series; CLUSTER SHARDS of 7.0 misreports failed-over nodes.
	return cl.ClusterSlots(ctx).Result()
}

// Masters returns the addresses of the nodes that are masters now, as a
// running node reports them, with the slots they serve.
func (c *Cluster) Masters(ctx context.Context) (map[string][]redis.ClusterSlot, error) {
	slots, err := c.slots(ctx)
	if err != nil {
		return nil, err
	}
	m := map[string][]redis.ClusterSlot{}
	for _, s := range slots {
		if len(s.Nodes) > 0 {
			m[s.Nodes[0].Addr] = append(m[s.Nodes[0].Addr], s)
		}
	}
	return m, nil
}

// Running reports whether the node's process runs.
func (n *ClusterNode) Running() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc != nil
}

// Kill stops the node with SIGKILL: no shutdown, no last write, no
// goodbye to the other nodes.
func (n *ClusterNode) Kill() { n.kill() }

// Restart starts a killed node again, on its address, with its cluster
// configuration file, and waits until it answers: it rejoins the cluster
// (a master whose replica took over while it was down comes back as that
// replica's replica). It may be called from any goroutine.
func (n *ClusterNode) Restart() error {
	if n.Running() {
		return fmt.Errorf("redistest: restarting %s, which runs", n.Addr)
	}
	if err := n.start(); err != nil {
		return fmt.Errorf("redistest: restarting %s: %w", n.Addr, err)
	}
	return nil
}

// WaitReplica waits until n is a replica in sync with a master, or ctx
// ends.
func (c *Cluster) WaitReplica(ctx context.Context, n *ClusterNode) error {
	cl := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
	defer cl.Close()
	for {
		repl, err := cl.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(repl, "role:slave") && strings.Contains(repl, "master_link_status:up") &&
			strings.Contains(repl, "master_sync_in_progress:0") {
			return nil
		}
		if e := sleep(ctx, 20*time.Millisecond); e != nil {
			return fmt.Errorf("%s is not an in-sync replica: %w (last: %v, %q)", n.Addr, e, err, repl)
		}
	}
}

// WaitOK waits until every running node reports cluster_state:ok and
// serves every slot from a running node (after a failover: the replica of
// a killed master has taken its slots over), or ctx ends.
func (c *Cluster) WaitOK(ctx context.Context) error {
	for {
		err := c.ok(ctx)
		if err == nil {
			return nil
		}
		if e := sleep(ctx, 20*time.Millisecond); e != nil {
			return fmt.Errorf("the cluster is not ok: %w (last: %v)", e, err)
		}
	}
}

func (c *Cluster) ok(ctx context.Context) error {
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		cl := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
		info, err := cl.ClusterInfo(ctx).Result()
		cl.Close()
		var slots []redis.ClusterSlot
		if err == nil {
			slots, err = nodeSlots(ctx, n.Addr)
		}
		if err != nil {
			return err
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("%s: cluster_state is not ok", n.Addr)
		}
		covered := 0
		for _, s := range slots {
			if len(s.Nodes) == 0 {
				continue
			}
			if m := c.Node(s.Nodes[0].Addr); m == nil || !m.Running() {
				return fmt.Errorf("%s: slots %d-%d are served by %s, which is down", n.Addr, s.Start, s.End, s.Nodes[0].Addr)
			}
			covered += s.End - s.Start + 1
		}
		if covered != 16384 {
			return fmt.Errorf("%s: %d slots served", n.Addr, covered)
		}
	}
	return nil
}

// KeySlot returns the hash slot of key, as Redis Cluster computes it: the
// CRC16 of its hash tag (the part between the first "{" and the next "}",
// when not empty) or else of the whole key, modulo 16384.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

// Client returns a client of this node alone, closed when the test ends.
func (n *ClusterNode) Client(t testing.TB) *redis.Client {
	t.Helper()
	cl := redis.NewClient(&redis.Options{Addr: n.Addr})
	t.Cleanup(func() { cl.Close() })
	return cl
}

// A SlotMove is the move of one hash slot from the master that serves it
// to another, made step by step as redis-cli --cluster reshard makes it:
// [Cluster.StartSlotMove] marks the slot importing on the target and
// migrating on the source (CLUSTER SETSLOT), [SlotMove.MoveKeys] moves
// some of its keys (MIGRATE), [SlotMove.Finish] moves the rest and gives
// the slot to the target. Between the first and the last, the source
// serves the slot's keys it still holds and redirects the others (ASK),
// and refuses a command over several keys of which it holds only some
// (TRYAGAIN), as does the target.
type SlotMove struct {
	c        *Cluster
	Slot     int
	From, To *ClusterNode
}

// StartSlotMove starts the move of slot from the master that serves it to
// to.
func (c *Cluster) StartSlotMove(ctx context.Context, slot int, to *ClusterNode) (*SlotMove, error) {
	from, err := c.masterOfSlot(ctx, slot)
	if err != nil {
		return nil, err
	}
	if from == to {
		return nil, fmt.Errorf("redistest: slot %d is on %s already", slot, to.Addr)
	}
	m := &SlotMove{c: c, Slot: slot, From: from, To: to}
	if err := m.setSlot(ctx, to, "IMPORTING", from.ID); err != nil {
		return nil, err
	}
	if err := m.setSlot(ctx, from, "MIGRATING", to.ID); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *SlotMove) setSlot(ctx context.Context, n *ClusterNode, args ...any) error {
	cl := redis.NewClient(&redis.Options{Addr: n.Addr, MaxRetries: -1})
	defer cl.Close()
	cmd := append([]any{"CLUSTER", "SETSLOT", m.Slot}, args...)
	if err := cl.Do(ctx, cmd...).Err(); err != nil {
		return fmt.Errorf("redistest: %v on %s: %w", cmd, n.Addr, err)
	}
	return nil
}

// MoveKeys moves keys, which must be in the slot, from the source to the
// target (MIGRATE, which fails with BUSYKEY when the target holds one of
// them already).
func (m *SlotMove) MoveKeys(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	cl := redis.NewClient(&redis.Options{Addr: m.From.Addr, MaxRetries: -1})
	defer cl.Close()
	args := []any{"MIGRATE", "127.0.0.1", m.To.port, "", 0, 10000, "KEYS"}
	for _, k := range keys {
		if slot := KeySlot(k); slot != m.Slot {
			return fmt.Errorf("redistest: key %q is in slot %d, not %d", k, slot, m.Slot)
		}
		args = append(args, k)
	}
	if err := cl.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("redistest: migrating %q from %s to %s: %w", keys, m.From.Addr, m.To.Addr, err)
	}
	return nil
}

// Finish moves the keys of the slot that the source still holds, then
// gives the slot to the target, on the target, the source and every other
// master, as redis-cli does.
func (m *SlotMove) Finish(ctx context.Context) error {
	cl := redis.NewClient(&redis.Options{Addr: m.From.Addr, MaxRetries: -1})
	defer cl.Close()
	for {
		keys, err := cl.ClusterGetKeysInSlot(ctx, m.Slot, 100).Result()
		if err != nil {
			return fmt.Errorf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %w", m.Slot, m.From.Addr, err)
		}
		if len(keys) == 0 {
			break
		}
		if err := m.MoveKeys(ctx, keys...); err != nil {
			return err
		}
	}
	if err := m.setSlot(ctx, m.To, "NODE", m.To.ID); err != nil {
		return err
	}
	if err := m.setSlot(ctx, m.From, "NODE", m.To.ID); err != nil {
		return err
	}
	masters, err := m.c.Masters(ctx)
	if err != nil {
		return err
	}
	for addr := range masters {
		if n := m.c.Node(addr); n != nil && n != m.From && n != m.To {
			if err := m.setSlot(ctx, n, "NODE", m.To.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// Reshard moves slots hash slots from the master from to the master to
// with redis-cli --cluster reshard, which moves them one after the
// other, each as a [SlotMove] does, while the cluster serves. It returns
// redis-cli's output. Without the redis-cli binary the test fails under
// CI=true and is skipped otherwise.
func (c *Cluster) Reshard(ctx context.Context, from, to *ClusterNode, slots int) (string, error) {
	c.t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		unavailable(c.t, "redis-cli is not installed (apt-get install redis-tools): "+err.Error())
	}
	// redis-cli refuses to start while the nodes disagree on the slots'
	// owners, as they do for moments after a reshard or a failover.
	if err := c.waitAgreed(ctx); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "redis-cli", "--cluster", "reshard", from.Addr,
		"--cluster-from", from.ID, "--cluster-to", to.ID, "--cluster-slots", strconv.Itoa(slots),
		"--cluster-yes")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redistest: redis-cli --cluster reshard from %s to %s: %w\n%s", from.Addr, to.Addr, err, out)
	}
	return string(out), c.waitAgreed(ctx)
}

// waitAgreed waits until every running node reports the same masters for
// the same slots, or ctx ends.
func (c *Cluster) waitAgreed(ctx context.Context) error {
	for {
		err := c.agreed(ctx)
		if err == nil {
			return nil
		}
		if e := sleep(ctx, 20*time.Millisecond); e != nil {
			return fmt.Errorf("redistest: the nodes do not agree on the slots: %w (last: %v)", e, err)
		}
	}
}

func (c *Cluster) agreed(ctx context.Context) error {
	var first, firstAddr string
	for _, n := range c.nodes {
		if !n.Running() {
			continue
		}
		slots, err := nodeSlots(ctx, n.Addr)
		if err != nil {
			return err
		}
		ranges := make([]string, 0, len(slots))
		for _, s := range slots {
			owner := ""
			if len(s.Nodes) > 0 {
				owner = s.Nodes[0].Addr
			}
			ranges = append(ranges, fmt.Sprintf("%d-%d:%s", s.Start, s.End, owner))
		}
		slices.Sort(ranges)
		sig := strings.Join(ranges, ",")
		if firstAddr == "" {
			first, firstAddr = sig, n.Addr
		} else if sig != first {
			return fmt.Errorf("%s and %s disagree", firstAddr, n.Addr)
		}
	}
	return nil
}

// ReplicaOf returns a running replica of master, as master reports its
// replicas, waiting until it reports one (after a failover, the old master
// becomes the new one's replica within moments), or ctx ends.
func (c *Cluster) ReplicaOf(ctx context.Context, master *ClusterNode) (*ClusterNode, error) {
	for {
		replicas, err := c.replicas(ctx, master)
		for _, n := range replicas {
			if n.Running() {
				return n, nil
			}
		}
		if err == nil {
			err = errors.New("no running replica")
		}
		if e := sleep(ctx, 20*time.Millisecond); e != nil {
			return nil, fmt.Errorf("redistest: the replicas of %s: %w (last: %v)", master.Addr, e, err)
		}
	}
}

// replicas returns the replicas of master, as it reports them.
func (c *Cluster) replicas(ctx context.Context, master *ClusterNode) ([]*ClusterNode, error) {
	cl := redis.NewClient(&redis.Options{Addr: master.Addr, MaxRetries: -1})
	defer cl.Close()
	lines, err := cl.Do(ctx, "CLUSTER", "REPLICAS", master.ID).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER REPLICAS on %s: %w", master.Addr, err)
	}
	var out []*ClusterNode
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 0 {
			for _, n := range c.nodes {
				if n.ID == f[0] {
					out = append(out, n)
				}
			}
		}
	}
	return out, nil
}

// Failover makes replica the master of its master's slots with CLUSTER
// FAILOVER (a manual failover: the master stops serving writes, the
// replica catches up with it and takes over; the old master becomes its
// replica), and waits until every running node serves the slots from
// replica and the cluster is ok, or ctx ends. A manual failover needs the
// replica in sync with a master that knows it, and the masters refuse to
// vote for the failover of a master twice within two node timeouts:
// Failover waits for all that first, and starts the failover again when
// one times out.
func (c *Cluster) Failover(ctx context.Context, replica *ClusterNode) error {
	cl := redis.NewClient(&redis.Options{Addr: replica.Addr, MaxRetries: -1})
	defer cl.Close()
	for {
		master, err := c.masterOfReplica(ctx, cl)
		if err != nil {
			return err
		}
		c.mu.Lock()
		last := c.failedOver[master]
		c.mu.Unlock()
		if wait := time.Until(last.Add(2*NodeTimeout + 100*time.Millisecond)); wait > 0 {
			if err := sleep(ctx, wait); err != nil {
				return fmt.Errorf("redistest: failing %s over: %w", master.Addr, err)
			}
		}
		for {
			replicas, err := c.replicas(ctx, master)
			if err == nil && slices.Contains(replicas, replica) {
				break
			}
			if e := sleep(ctx, 20*time.Millisecond); e != nil {
				return fmt.Errorf("redistest: %s does not know its replica %s: %w (last: %v)", master.Addr, replica.Addr, e, err)
			}
		}
		if err := c.WaitReplica(ctx, replica); err != nil {
			return err
		}
		if err := cl.Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
			return fmt.Errorf("redistest: CLUSTER FAILOVER on %s: %w", replica.Addr, err)
		}
		// A manual failover that does not end within 5 s is abandoned
		// by the nodes.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			err = c.servesAll(ctx, replica)
			if err == nil {
				err = c.ok(ctx)
			}
			if err == nil {
				c.mu.Lock()
				if c.failedOver == nil {
					c.failedOver = map[*ClusterNode]time.Time{}
				}
				c.failedOver[master] = time.Now()
				c.mu.Unlock()
				return nil
			}
			if e := sleep(ctx, 20*time.Millisecond); e != nil {
				return fmt.Errorf("redistest: the failover to %s did not end: %w (last: %v)", replica.Addr, e, err)
			}
		}
	}
}

// masterOfReplica returns the master the node of cl replicates, as it
// reports it (ROLE).
func (c *Cluster) masterOfReplica(ctx context.Context, cl *redis.Client) (*ClusterNode, error) {
	role, err := cl.Do(ctx, "ROLE").Slice()
	if err != nil {
		return nil, fmt.Errorf("redistest: ROLE on %s: %w", cl.Options().Addr, err)
	}
	if len(role) < 3 || role[0] != "slave" {
		return nil, fmt.Errorf("redistest: %s is not a replica: ROLE %v", cl.Options().Addr, role)
	}
	addr := net.JoinHostPort(fmt.Sprint(role[1]), fmt.Sprint(role[2]))
	m := c.Node(addr)
	if m == nil {
		return nil, fmt.Errorf("redistest: %s replicates %s, not a node of the cluster", cl.Options().Addr, addr)
	}
	return m, nil
}

// servesAll returns nil when every running node reports n a master that
// serves slots.
func (c *Cluster) servesAll(ctx context.Context, n *ClusterNode) error {
	for _, o := range c.nodes {
		if !o.Running() {
			continue
		}
		slots, err := nodeSlots(ctx, o.Addr)
		if err != nil {
			return err
		}
		serves := false
		for _, s := range slots {
			if len(s.Nodes) > 0 && s.Nodes[0].Addr == n.Addr {
				serves = true
			}
		}
		if !serves {
			return fmt.Errorf("%s does not report %s a master", o.Addr, n.Addr)
		}
	}
	return nil
}
