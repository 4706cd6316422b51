//go:build unix

package ws

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/e2e"
	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/redis/go-redis/v9"
)

// The environment of the child process of TestSecondSignalReleasesLeases:
// the Redis key prefix of its store.
const drainChildEnv = "CHATGEN_WS_DRAIN_CHILD_PREFIX"

// drainChildRoutes are the routes of the child: "stuck" ignores its
// context (a tool that never returns), "held" returns when its context
// ends. Each prints "started <route>" when it runs.
func drainChildRoutes() *chatimpl.Package {
	p := chatimpl.NewPackage("github.com/chatscopes/chatgen/runtime/ws/drainexittest")
	p.AddRoute(chatimpl.RouteSpec{Name: "stuck", Handle: func(ctx context.Context) error {
		fmt.Println("started stuck")
		select {} // ignores ctx: the drain cannot end this turn
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "held", Handle: func(ctx context.Context) error {
		fmt.Println("started held")
		<-ctx.Done()
		return ctx.Err()
	}})
	return p
}

// runDrainChild is the child's main: a node serving the routes over the
// Redis store until its signals (SIGTERM; a long drain timeout, so that
// only a second SIGTERM cuts the drain short), then exiting.
func runDrainChild(prefix string) {
	rc := redis.NewClient(&redis.Options{Addr: redistest.Addr})
	store, err := redisstore.New(rc, &redisstore.Options{Prefix: prefix})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: "exiting", Logger: quietLogger()},
		e2e.Register(), drainChildRoutes())
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	// The parent reads the drain's progress from the log.
	srv := NewServer(r, &ServerOptions{Logger: slog.New(slog.NewTextHandler(os.Stdout, nil))})
	mux := http.NewServeMux()
	mux.Handle("/", srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("addr", ln.Addr().String())
	err = srv.ServeUntilSignal(context.Background(), &http.Server{Handler: mux}, ln,
		&DrainOptions{Timeout: 5 * time.Minute, Signals: []os.Signal{syscall.SIGTERM}})
	fmt.Println("exit", err)
	os.Exit(0)
}

// TestSecondSignalReleasesLeases runs a node in a process of its own over
// Redis, with two durable conversations in turns that outlast the drain
// (one route ignores its context), and sends it SIGTERM, then SIGTERM
// again: the process exits at once, and both conversations can be taken
// over by another node at once, not after the lease's time to live.
func TestSecondSignalReleasesLeases(t *testing.T) {
	if prefix := os.Getenv(drainChildEnv); prefix != "" {
		runDrainChild(prefix)
		return
	}
	rc := redistest.Client(t)
	prefix := redistest.Prefix(t, rc, "ws-drain-exit")

	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondSignalReleasesLeases$")
	cmd.Env = append(os.Environ(), drainChildEnv+"="+prefix)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{}) // closed when the node has exited with exitErr
	var exitErr error
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, out)
		exitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range lines { // unblock the reader
		}
		<-exited
	})
	// next returns the rest of the next line the node prints that
	// contains what, after what.
	next := func(what string) string {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the node exited before printing %q", what)
				}
				if _, rest, ok := strings.Cut(l, what); ok {
					return rest
				}
			case <-time.After(time.Minute):
				t.Fatalf("the node did not print %q", what)
			}
		}
	}
	addr := next("addr ")

	c, err := Dial(context.Background(), "ws://"+addr+RoutesPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ids []string
	for _, route := range []string{"stuck", "held"} {
		var rec recorder
		s, err := rec.builder(c).Connect(context.Background(), route)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ConversationID())
		s.ChatAsync(context.Background(), "outlast the drain")
		next("started ")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The drain waits for both turns.
	next("closing the listener, finishing turns")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := next("exit "); !strings.Contains(got, "context canceled") {
		t.Fatalf("ServeUntilSignal returned %q, want the drain cut short", got)
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Fatalf("the node: %v", exitErr)
		}
	case <-time.After(time.Minute):
		t.Fatal("the node did not exit after the second SIGTERM")
	}

	// Another node takes both conversations over at once.
	store, err := redisstore.New(rc, &redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := store.Acquire(context.Background(), id, "other", time.Minute); err != nil {
			t.Errorf("conversation %s after the node exited: %v", id, err)
		}
	}
}
