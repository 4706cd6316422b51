package ws

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/leaktest"
)

// freezeProxy is a TCP proxy between a client and the server that can
// stop forwarding without closing anything: the server then sees a peer
// that vanished without a FIN, as when a laptop is closed or a NAT drops
// the flow.
type freezeProxy struct {
	ln     net.Listener
	target string
	frozen chan struct{} // closed: forwarding stops
	once   sync.Once
	up     atomic.Int64 // bytes forwarded client → server
	down   atomic.Int64 // bytes forwarded server → client

	mu    sync.Mutex
	conns []net.Conn
}

func startFreezeProxy(t *testing.T, target string) *freezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &freezeProxy{ln: ln, target: target, frozen: make(chan struct{})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); p.forward(server, client, &p.up) }()
			go func() { defer wg.Done(); p.forward(client, server, &p.down) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.freeze()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	})
	return p
}

// forward copies src to dst until either fails; once frozen, what it
// reads is held back forever.
func (p *freezeProxy) forward(dst, src net.Conn, n *atomic.Int64) {
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			select {
			case <-p.frozen:
				return // drop it, and read no more: the sockets stay open
			default:
			}
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return
			}
			n.Add(int64(k))
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			return
		}
	}
}

func (p *freezeProxy) freeze() { p.once.Do(func() { close(p.frozen) }) }

// A client that answers the server's pings keeps its connection, however
// long it is idle, and the pongs do not keep a worker blocked; once the
// path to it stops forwarding (no FIN, no RST), the server notices within
// PingInterval + WriteTimeout and ends the connection and its sessions.
func TestKeepaliveNoticesAVanishedPeer(t *testing.T) {
	leaktest.Check(t)
	var logs lockedBuffer
	ts := startServer(t, &ServerOptions{
		PingInterval: 20 * time.Millisecond,
		WriteTimeout: 2 * time.Second, // generous: a loaded machine must not fail a healthy client

		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	proxy := startFreezeProxy(t, ts.http.Listener.Addr().String())
	c := dialRaw(t, "ws://"+proxy.ln.Addr().String()+RoutesPath, nil)
	scope := c.connect("s", "echo")
	// coder/websocket answers pings while it reads.
	frames := make(chan frame, 16)
	readErr := make(chan error, 1)
	go func() {
		for {
			f, err := c.readErr(time.Minute)
			if err != nil {
				readErr <- err
				return
			}
			frames <- f
		}
	}()

	// Idle, answered pings: the bytes going up are pongs only.
	sc := serverConn(t, ts)
	up := proxy.up.Load()
	deadline := time.Now().Add(10 * time.Second)
	for proxy.up.Load() < up+5*7 { // five pongs (masked, 1-byte payloads at least)
		if time.Now().After(deadline) {
			t.Fatalf("no pongs: %d bytes up", proxy.up.Load()-up)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The read role is back with the connection's waiter: no worker stays
	// blocked in coder/websocket's Reader after a pong.
	for {
		sc.rmu.Lock()
		idle := !sc.reading && sc.waiting
		sc.rmu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a worker holds the read role of an idle connection")
		}
		time.Sleep(time.Millisecond)
	}
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": scope, "data": map[string]any{"userMessage": "still here"}})
	if f := recv(t, frames); f.text() != "still here" {
		t.Fatalf("got %v", f)
	}
	recv(t, frames) // Completed

	proxy.freeze()
	deadline = time.Now().Add(10 * time.Second)
	for ts.router.Stats().Conversations != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the session of the vanished peer is still open: %+v", ts.router.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for ts.Connections() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the connection to the vanished peer is still open")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if out := logs.String(); !strings.Contains(out, "did not answer a ping") {
		t.Fatalf("log:\n%s", out)
	}
	c.ws.CloseNow()
	<-readErr
}

// A ping from the client is answered, and the worker that read it gives
// the read role back.
func TestClientPingIsAnswered(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, &ServerOptions{PingInterval: -1})
	c := dialRaw(t, ts.url, nil)
	c.connect("s", "echo")
	sc := serverConn(t, ts)
	readErr := make(chan error, 1)
	go func() {
		_, err := c.readErr(time.Minute) // reads the pongs
		readErr <- err
	}()
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := c.ws.Ping(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		sc.rmu.Lock()
		idle := !sc.reading && sc.waiting
		sc.rmu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a worker holds the read role of an idle connection")
		}
		time.Sleep(time.Millisecond)
	}
	c.ws.CloseNow()
	<-readErr
}
