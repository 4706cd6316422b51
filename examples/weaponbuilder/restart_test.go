//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// server is the weaponbuilder program running as a process of its own.
type server struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
}

// startServer runs bin on addr with the data file data and waits until it
// serves.
func startServer(t *testing.T, bin, addr, data string, args ...string) *server {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"-addr", addr, "-data", data}, args...)...)
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=") // the offline armorer
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, stderr: &strings.Builder{}}
	cmd.Stderr = &lockedWriter{w: s.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if strings.Contains(lines.Text(), "open http://") {
			go func() {
				for lines.Scan() {
				}
			}()
			return s
		}
	}
	_ = cmd.Wait()
	t.Fatalf("the server ended before serving: %v\nstderr:\n%s", lines.Err(), s.stderr)
	return nil
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// buildProgram builds this package's program into dir.
func buildProgram(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "weaponbuilder")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// kill9 kills the server with SIGKILL: no shutdown, no release of leases,
// nothing flushed but what bbolt committed.
func (s *server) kill9(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Wait()
}

// TestRestartResumesConversation is issue 11's first test with real
// processes: the weaponbuilder program, built from this package, serves a
// Go client (ws.Dial with Reconnect) into the enchantment conversation —
// two scopes deep, with the workbench and the runes (durable beans) and
// the weapon builder's chat memory — and is killed with SIGKILL. Started
// again on the same port and data file, it is found by the client by
// itself, which resumes the conversation: the next message runs in the
// same nested route with the beans' state and the memory intact.
func TestRestartResumesConversation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	dir := t.TempDir()
	bin := buildProgram(t, dir)
	data := filepath.Join(dir, "chat.db")
	addr := freeAddr(t)

	srv := startServer(t, bin, addr, data)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var states []ws.ConnectionState
	connected := make(chan struct{}, 8)
	c, err := ws.Dial(ctx, "ws://"+addr+"/_chat/routes", &ws.DialOptions{
		Reconnect: &ws.ReconnectOptions{MinDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond},
		OnConnectionState: func(s ws.ConnectionState, _ error) {
			mu.Lock()
			states = append(states, s)
			mu.Unlock()
			if s == ws.StateConnected {
				connected <- struct{}{}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var answers []string
	var weapons []Weapon
	text := func(s string) {
		mu.Lock()
		answers = append(answers, s)
		mu.Unlock()
	}
	session, err := c.Builder().
		OnMessage(text).
		OnStream(text).
		On("weapon", func(e chat.Event) {
			var w Weapon
			if err := e.Decode(&w); err == nil {
				mu.Lock()
				weapons = append(weapons, w)
				mu.Unlock()
			}
		}).
		Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	say := func(msg string) string {
		t.Helper()
		mu.Lock()
		answers = nil
		mu.Unlock()
		if err := session.Chat(ctx, msg); err != nil {
			t.Fatalf("%q: %v\nserver stderr:\n%s", msg, err, srv.stderr)
		}
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(answers, "")
	}
	// restart kills the server with SIGKILL, starts it again on the same
	// port and data, and waits for the client to have resumed by itself
	// (in the scope it was in); it logs how long each step took.
	restart := func(scope string) {
		t.Helper()
		srv.kill9(t)
		restarted := time.Now()
		srv = startServer(t, bin, addr, data)
		serving := time.Now()
		select {
		case <-connected:
		case <-ctx.Done():
			t.Fatal("the client did not reconnect")
		}
		t.Logf("restart: process start to serving %v, serving to resumed %v",
			serving.Sub(restarted).Round(time.Millisecond), time.Since(serving).Round(time.Millisecond))
		if got := session.ScopeID(); got != scope {
			t.Fatalf("after the restart the session is in scope %s, want %s", got, scope)
		}
	}
	lastWeapon := func() Weapon {
		mu.Lock()
		defer mu.Unlock()
		if len(weapons) == 0 {
			return Weapon{}
		}
		return weapons[len(weapons)-1]
	}

	top := session.ScopeID()
	say("I want to build a sword")
	say("call it Dawnbreaker")
	weaponScope := session.ScopeID()
	if weaponScope == top {
		t.Fatal("the weapon builder did not start a nested scope")
	}

	// 1. Killed in the weapon builder: its chat memory and the workbench
	// (a durable bean) come through.
	restart(weaponScope)
	// With no tool to call, the armorer asks its next question from the
	// last weapon its memory shows (the zero weapon, "What kind of weapon",
	// were the memory lost).
	if got := say("hmm"); !strings.Contains(got, "Dawnbreaker") || !strings.Contains(got, "worthy name") {
		t.Fatalf("after the restart the weapon builder answered %q: its memory was lost", got)
	}
	start := time.Now()
	say("make it deal 40 damage")
	t.Logf("restart: a turn after the resume took %v", time.Since(start).Round(time.Millisecond))
	if w := lastWeapon(); w.Name != "Dawnbreaker" || w.Kind != Sword || w.Damage != 40 {
		t.Fatalf("the weapon after the restart: %+v, want Dawnbreaker, a sword, 40 damage", w)
	}
	if got := session.ScopeID(); got != weaponScope {
		t.Fatalf("the turn after the restart left the weapon builder: scope %s, want %s", got, weaponScope)
	}

	// 2. Killed in the enchanter, two scopes deep: the runes (a durable
	// per-chat bean) and the workbench of the scope above come through.
	say("yes, enchant it")
	if got := say("fire"); !strings.Contains(got, "How strong") {
		t.Fatalf("in the enchanter, %q answered %q", "fire", got)
	}
	enchantScope := session.ScopeID()
	if enchantScope == weaponScope || enchantScope == top {
		t.Fatalf("not in the enchanter's scope: %s", enchantScope)
	}
	restart(enchantScope)
	if got := say("power 7"); !strings.Contains(got, "fire at power 7") {
		t.Fatalf("after the restart, %q answered %q, want the fire runes at power 7", "power 7", got)
	}
	say("bind")
	if w := lastWeapon(); w.Name != "Dawnbreaker" || w.Damage != 40 || w.Enchantment == nil || *w.Enchantment != (Enchantment{Element: Fire, Power: 7}) {
		t.Fatalf("the weapon after binding: %+v, want Dawnbreaker, 40 damage, fire at power 7", w)
	}
	if got := session.ScopeID(); got != weaponScope {
		t.Fatalf("after binding the session is in scope %s, want the weapon builder's %s", got, weaponScope)
	}
	if got := say("finish"); !strings.Contains(got, "Dawnbreaker") {
		t.Fatalf("finish answered %q", got)
	}
	if got := session.ScopeID(); got != top {
		t.Fatalf("after finishing the session is in scope %s, want the main menu's %s", got, top)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(states) != "[Reconnecting Connected Reconnecting Connected]" {
		t.Errorf("connection states %v, want [Reconnecting Connected Reconnecting Connected]", states)
	}
}
