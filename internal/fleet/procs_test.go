package fleet

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The processes of the fleet test: the nodes, their Redis, the load
// balancers.

// freePort returns a TCP port on loopback free right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// buildNode builds cmd/fleetnode into dir and returns its path.
func buildNode(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "fleetnode")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/fleetnode").CombinedOutput()
	if err != nil {
		t.Fatalf("building fleetnode: %v\n%s", err, out)
	}
	return bin
}

// A proc is a process the test started, its output in a file.
type proc struct {
	name   string
	cmd    *exec.Cmd
	out    string // the file of its stdout and stderr
	exited chan struct{}
	err    error // once exited is closed
}

// start starts name's process, its output in dir/name.log.
func start(t *testing.T, dir, name string, argv ...string) *proc {
	t.Helper()
	p := &proc{name: name, out: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	f, err := os.Create(p.out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

// kill kills the process (SIGKILL) and waits for it.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// stop sends sig and waits for the process to exit, for at most wait;
// it returns the process's error (nil: exit status 0).
func (p *proc) stop(sig syscall.Signal, wait time.Duration) error {
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(wait):
		p.kill()
		return fmt.Errorf("%s did not exit within %v of %v", p.name, wait, sig)
	}
}

// tail returns the last lines of the process's output.
func (p *proc) tail() string {
	b, _ := os.ReadFile(p.out)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// waitUntil polls cond until it holds, p exits (an error), or a minute
// passes (a loaded machine may be slow to start a process).
func (p *proc) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		select {
		case <-p.exited:
			t.Fatalf("%s exited (%v) before %s:\n%s", p.name, p.err, what, p.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: timed out waiting for %s:\n%s", p.name, what, p.tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// httpOK reports whether GET url answers 200.
func httpOK(url string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startRedis starts a redis-server of the test's own on a free port,
// keeping nothing on disk, and returns its address.
func startRedis(t *testing.T, dir string) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server is not installed (apt-get install redis-server): %v", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	_, port, _ := net.SplitHostPort(addr)
	p := start(t, dir, "redis", "redis-server", "--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--maxclients", "10000")
	p.waitUntil(t, "redis to answer", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return false
		}
		buf := make([]byte, 7)
		n, _ := c.Read(buf)
		return bytes.HasPrefix(buf[:n], []byte("+PONG"))
	})
	return addr
}

// A balancer is a load balancer of the test: its configuration from
// docs/deploy, with the test's addresses.
type balancer struct {
	name string
	// config is the file of docs/deploy.
	config string
	// listen and backends are the strings of config replaced by the
	// balancer's address (in listenAs) and the nodes'.
	listen   string
	listenAs string
	backends []string
	// run starts the balancer's binary bin with conf, the configuration
	// with the test's addresses, written in dir.
	run func(t *testing.T, dir, bin, conf string) *proc
}

var balancers = map[string]balancer{
	"nginx": {
		name:     "nginx",
		config:   "../../docs/deploy/nginx.conf",
		listen:   "listen 8080;",
		listenAs: "listen %s;",
		backends: []string{"127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083"},
		run:      runNginx,
	},
	"haproxy": {
		name:     "haproxy",
		config:   "../../docs/deploy/haproxy.cfg",
		listen:   "bind :8080",
		listenAs: "bind %s",
		backends: []string{"127.0.0.1:8081", "127.0.0.1:8082", "127.0.0.1:8083"},
		run:      runHAProxy,
	},
}

// lookPath finds the binary name, in PATH or in /usr/sbin (where Debian
// puts nginx and haproxy, outside a user's PATH).
func lookPath(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed (apt-get install nginx haproxy)", name)
	}
	return p
}

// start writes the configuration with the balancer listening on lbAddr
// and the nodes at nodes, starts the balancer and waits until it serves.
func (b balancer) start(t *testing.T, dir, lbAddr string, nodes []string) *proc {
	t.Helper()
	raw, err := os.ReadFile(b.config)
	if err != nil {
		t.Fatal(err)
	}
	conf := string(raw)
	replace := func(old, new string) {
		if n := strings.Count(conf, old); n != 1 {
			t.Fatalf("%s holds %q %d times, want once: the test's substitutions no longer fit it", b.config, old, n)
		}
		conf = strings.Replace(conf, old, new, 1)
	}
	replace(b.listen, fmt.Sprintf(b.listenAs, lbAddr))
	for i, backend := range b.backends {
		replace(backend, nodes[i])
	}
	p := b.run(t, dir, lookPath(t, b.name), conf)
	p.waitUntil(t, b.name+" to serve", func() bool {
		return httpOK("http://" + lbAddr + "/readyz")
	})
	return p
}

// runNginx runs nginx in the foreground with conf included in a main
// configuration of the test's (pid file, temporary files, logs in dir).
func runNginx(t *testing.T, dir, bin, conf string) *proc {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "chatgen.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n" // the workers reach the temporary directory
	}
	main := user + `worker_processes 1;
worker_rlimit_nofile 16384;
pid ` + dir + `/nginx.pid;
error_log stderr warn;
events { worker_connections 8192; }
http {
    access_log off;
    client_body_temp_path ` + dir + `/client_body;
    proxy_temp_path ` + dir + `/proxy;
    fastcgi_temp_path ` + dir + `/fastcgi;
    uwsgi_temp_path ` + dir + `/uwsgi;
    scgi_temp_path ` + dir + `/scgi;
    include ` + dir + `/chatgen.conf;
}
`
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-t", "-e", "stderr", "-p", dir, "-c", path).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	return start(t, dir, "nginx", bin, "-e", "stderr", "-p", dir, "-c", path, "-g", "daemon off;")
}

// runHAProxy runs HAProxy in the foreground with a global section of the
// test's, then conf.
func runHAProxy(t *testing.T, dir, bin, conf string) *proc {
	t.Helper()
	global := filepath.Join(dir, "global.cfg")
	if err := os.WriteFile(global, []byte("global\n    maxconn 8192\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", global, "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	return start(t, dir, "haproxy", bin, "-db", "-f", global, "-f", path)
}

// established counts the established TCP connections whose local port is
// port (/proc/net/tcp): the connections a node accepted and holds.
func established(port string) int {
	p, err := strconv.Atoi(port)
	if err != nil {
		return -1
	}
	want := fmt.Sprintf(":%04X", p)
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			fields := strings.Fields(line)
			// sl local_address rem_address st …; 01 is ESTABLISHED.
			if len(fields) > 3 && strings.HasSuffix(fields[1], want) && fields[3] == "01" {
				n++
			}
		}
	}
	return n
}
