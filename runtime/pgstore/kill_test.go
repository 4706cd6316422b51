package pgstore_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tmc/langchaingo/llms"
)

// server is a PostgreSQL server of a test's own, in a temporary directory,
// that the test may kill.
type server struct {
	t    *testing.T
	bin  string
	dir  string
	port int
	cred *syscall.Credential
	cmd  *exec.Cmd
	args []string // more arguments of the postgres command
}

// newServer initialises a cluster (initdb) in a temporary directory. As
// root, the server runs as the user postgres, since PostgreSQL refuses to
// run as root. The test fails under CI=true when the binaries are missing,
// and is skipped otherwise.
func newServer(t *testing.T) *server {
	t.Helper()
	s := emptyServer(t)
	cmd := s.command("initdb", "-D", s.data(), "-U", "postgres", "--auth=trust", "-E", "UTF8")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	return s
}

// newStandby makes a streaming standby of primary, which runs, with
// pg_basebackup: started, it follows primary until promoted.
func newStandby(t *testing.T, primary *server) *server {
	t.Helper()
	s := emptyServer(t)
	cmd := s.command("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", "postgres",
		"-D", s.data(), "-R", "-X", "stream", "-c", "fast")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	return s
}

// emptyServer returns a server of a free port and an empty temporary
// directory, with no cluster in it.
func emptyServer(t *testing.T) *server {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		msg := "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	s := &server{t: t, bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "pgstore-kill-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root and no user postgres to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	return s
}

func (s *server) data() string { return filepath.Join(s.dir, "data") }

func (s *server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: s.cred}
	return cmd
}

// start starts the server (recovering from a crash if need be) and
// returns a pool on it, once it accepts connections.
func (s *server) start() *pgxpool.Pool {
	s.t.Helper()
	s.run()
	pool, err := pgxpool.New(context.Background(), s.url())
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(pool.Close)
	return pool
}

// url is the server's database postgres.
func (s *server) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// run starts the server (recovering from a crash if need be) and returns
// once it accepts connections.
func (s *server) run() {
	s.t.Helper()
	log, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		s.t.Fatal(err)
	}
	defer log.Close()
	s.cmd = s.command("postgres", append([]string{"-D", s.data(), "-p", strconv.Itoa(s.port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c", "synchronous_commit=on"}, s.args...)...)
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	cmd := s.cmd
	s.t.Cleanup(func() {
		if cmd.ProcessState == nil {
			// A fast shutdown: it ends the backends and waits for them.
			cmd.Process.Signal(syscall.SIGINT)
			cmd.Wait()
		}
	})
	deadline := time.Now().Add(2 * time.Minute) // generous: recovery on a loaded machine
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c, err := pgx.Connect(ctx, s.url())
		if err == nil {
			err = c.Ping(ctx)
			c.Close(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		if !alive(s.cmd.Process.Pid) || time.Now().After(deadline) { // exited, or a zombie
			out, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
			s.t.Fatalf("the server did not come up: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop shuts the server down and returns once it has exited: with
// SIGINT a fast shutdown (each backend ends its session with SQLSTATE
// 57P01, admin_shutdown), with SIGQUIT an immediate one (the backends
// exit at once; the next start recovers from the WAL).
func (s *server) stop(sig syscall.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
	s.cmd.Wait()
}

// kill kills the server and all its backends with SIGKILL, as a crash of
// the machine would stop them. Backends lead process groups of their own,
// so they are found by their parent, which is stopped first so that it
// starts no new one; kill returns once every one of them is gone (a
// backend left alive would keep the old shared memory, and the restarted
// server would refuse to start).
func (s *server) kill() {
	s.t.Helper()
	pid := s.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		s.t.Fatal(err)
	}
	var killed []int
	deadline := time.Now().Add(time.Minute)
	for kids := children(pid); len(kids) > 0; kids = children(pid) {
		for _, child := range kids {
			syscall.Kill(child, syscall.SIGKILL)
		}
		killed = append(killed, kids...)
		if time.Now().After(deadline) {
			s.t.Fatalf("backends %v of the server outlive SIGKILL", kids)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		s.t.Fatal(err)
	}
	s.cmd.Wait()
	for _, child := range killed { // reaped by init now that their parent is gone
		for alive(child) {
			if time.Now().After(deadline) {
				s.t.Fatalf("backend %d of the killed server is still there", child)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// children returns the pids of the live (not zombie) processes whose
// parent is pid.
func children(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, f := range stats {
		if state, ppid, ok := procStat(f); ok && ppid == pid && state != "Z" {
			if c, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	state, _, ok := procStat(fmt.Sprintf("/proc/%d/stat", pid))
	return ok && state != "Z"
}

// procStat reads the state and the parent's pid from a /proc/<pid>/stat.
func procStat(path string) (state string, ppid int, ok bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", 0, false
	}
	// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return fields[0], ppid, err == nil
}

// TestKillMidSave kills the server with SIGKILL while a conversation saves
// turn after turn, restarts it, and checks that what it recovered is a
// whole number of turns, state and memory alike, and no fewer than were
// acknowledged.
func TestKillMidSave(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	srv := newServer(t)
	pool := srv.start()
	ctx := t.Context()
	if _, err := pgstore.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := s.Acquire(ctx, "c", "node", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	st := chatstoretest.State("c")
	mid := st.Scopes[0].Memories[0]
	big := strings.Repeat("x", 20_000) // a save of some length, so that kills land inside one

	acked := make(chan uint64, 1000)
	done := make(chan error, 1)
	go func() {
		for {
			n := st.Version + 1
			b := chatstore.NewBatch()
			change := memory.Change{Tail: []llms.MessageContent{
				llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("turn %d", n)),
				llms.TextParts(llms.ChatMessageTypeAI, fmt.Sprintf("answer %d %s", n, big)),
			}}
			if err := s.Memories().Apply(chatstore.WithBatch(ctx, b), mid, change); err != nil {
				done <- err
				return
			}
			st.Scopes[0].Beans["turn"] = []byte(strconv.FormatUint(n, 10))
			if err := s.Save(ctx, st, l, b); err != nil {
				done <- err // the kill
				return
			}
			select {
			case acked <- st.Version:
			default:
			}
		}
	}()
	var last uint64
	for last < 30 { // let some turns commit, then kill in the middle of the stream
		select {
		case last = <-acked:
		case err := <-done:
			t.Fatalf("saving before the kill: %v", err)
		}
	}
	srv.kill()
	err = <-done
	for len(acked) > 0 {
		last = <-acked
	}
	t.Logf("killed after %d acknowledged saves; the save in flight failed with: %v", last, err)
	if err == nil {
		t.Fatal("a save succeeded without a server")
	}

	pool = srv.start()
	s2, err := pgstore.New(ctx, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if got.Version < last {
		t.Fatalf("recovered version %d, but %d saves were acknowledged", got.Version, last)
	}
	if turn := string(got.Scopes[0].Beans["turn"]); turn != strconv.FormatUint(got.Version, 10) {
		t.Fatalf("state at version %d records turn %s: not a whole turn", got.Version, turn)
	}
	msgs, err := s2.Memories().Get(ctx, mid)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(msgs)) != 2*got.Version {
		t.Fatalf("state at version %d, memory of %d messages: want %d", got.Version, len(msgs), 2*got.Version)
	}
	for i := range got.Version {
		want := fmt.Sprintf("turn %d", i+1)
		if txt := msgs[2*i].Parts[0].(llms.TextContent).Text; txt != want {
			t.Fatalf("message %d is %q, want %q", 2*i, txt, want)
		}
	}
	// The store goes on where it stopped.
	if err := s2.Save(ctx, got, l, nil); err != nil {
		t.Fatalf("saving after the restart: %v", err)
	}
}
