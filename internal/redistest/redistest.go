// Package redistest holds what the tests that use Redis share: a client of
// the Redis of the development and CI machines, key prefixes of their own
// that are cleaned up, a redis-server of a test's own that it may kill,
// freeze and restart, a Redis Cluster of a test's own (StartCluster) whose
// masters it may kill or fail over (Cluster.Failover) and whose hash slots
// it may move, step by step (Cluster.StartSlotMove) or with redis-cli
// --cluster reshard (Cluster.Reshard), and a hook counting round trips.
//
// A test that needs the shared Redis fails under CI=true when it is
// unreachable, and is skipped otherwise; likewise for the redis-server
// binary.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Addr is the Redis of the development and CI machines.
const Addr = "127.0.0.1:6379"

// unavailable fails t under CI=true and skips it otherwise.
func unavailable(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// Client returns a client of the Redis at [Addr], closed when the test
// ends; the test fails under CI=true when that Redis is unreachable, and is
// skipped otherwise.
func Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: Addr})
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		unavailable(t, "Redis at "+Addr+" is unreachable ("+err.Error()+"); start it with "+
			`redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no`)
	}
	return c
}

// Prefix returns a key prefix "<name>:<random>:" no other test uses, and
// deletes its keys when the test ends.
func Prefix(t testing.TB, c redis.UniversalClient, name string) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	p := name + ":" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() { DeleteKeys(t, c, p) })
	return p
}

// Keys lists the keys that start with prefix (a SCAN pattern: escape
// its glob characters), on every master of a cluster.
func Keys(t testing.TB, c redis.UniversalClient, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, c redis.UniversalClient) error {
		it := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys = append(keys, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, c)
	}
	if err != nil {
		t.Errorf("listing the keys of %s*: %v", prefix, err)
	}
	return keys
}

// DeleteKeys deletes the keys that start with prefix (one DEL per key, so
// that the keys of a cluster may be in any slot).
func DeleteKeys(t testing.TB, c redis.UniversalClient, prefix string) {
	t.Helper()
	keys := Keys(t, c, prefix)
	if len(keys) == 0 {
		return
	}
	_, err := c.Pipelined(context.Background(), func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(context.Background(), k)
		}
		return nil
	})
	if err != nil {
		t.Errorf("deleting the keys of %s*: %v", prefix, err)
	}
}

// RoundTrips is a redis.Hook that counts round trips: a command or a
// pipeline sent is one.
type RoundTrips struct{ n atomic.Int64 }

// N returns the round trips counted so far.
func (c *RoundTrips) N() int64 { return c.n.Load() }

// Reset sets the count back to zero.
func (c *RoundTrips) Reset() { c.n.Store(0) }

// DialHook implements redis.Hook.
func (c *RoundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (c *RoundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (c *RoundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// A Server is a redis-server of the test's own, listening on a Unix
// socket in a directory of its own and persisting there to an append-only
// file synced on every write, so that a restart finds what it
// acknowledged. The socket is the server's alone: no other process can
// take its address while it is down, as one could take a TCP port.
type Server struct {
	t    testing.TB
	dir  string
	sock string
	proc *process // nil when not running
}

// StartServer starts a Server, killed when the test ends. Without the
// redis-server binary the test fails under CI=true and is skipped
// otherwise.
func StartServer(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		unavailable(t, "redis-server is not installed (apt-get install redis-server): "+err.Error())
	}
	// A socket's path is at most 107 bytes: t.TempDir's can be longer.
	dir, err := os.MkdirTemp("", "redistest")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, dir: dir, sock: filepath.Join(dir, "redis.sock")}
	t.Cleanup(func() {
		s.Kill()
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing the redis-server's directory: %v", err)
		}
	})
	s.Start()
	return s
}

// Network is the network of [Server.Addr], for redis.Options.Network:
// "unix".
func (s *Server) Network() string { return "unix" }

// Addr is the path of the server's socket, for redis.Options.Addr with
// [Server.Network].
func (s *Server) Addr() string { return s.sock }

// Start starts the server (again, after Kill) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	p, err := startProcess([]string{"--port", "0", "--unixsocket", s.sock, "--unixsocketperm", "700",
		"--dir", s.dir, "--save", "", "--appendonly", "yes", "--appendfsync", "always"},
		s.Network(), s.Addr(), filepath.Join(s.dir, "redis.log"))
	if err != nil {
		s.t.Fatal(err)
	}
	s.proc = p
}

// Kill stops the server with SIGKILL (a frozen one too): no shutdown, no
// last write.
func (s *Server) Kill() {
	if s.proc != nil {
		s.proc.kill()
		s.proc = nil
	}
}

// Signal sends sig to the server (SIGSTOP freezes it, SIGCONT thaws it).
func (s *Server) Signal(sig syscall.Signal) {
	s.t.Helper()
	if err := s.proc.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}
