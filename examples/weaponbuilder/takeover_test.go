//go:build unix

package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/redisstore"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// TestTakeoverWhileAlive is issue 11's third test with real processes:
// two weaponbuilder servers share one Redis behind a TCP proxy, and node A
// is frozen (SIGSTOP), not killed, with a request of the client's sent to
// it and not answered. The proxy is switched to node B and the client's
// connection cut: the client resumes on B once A's lease has ended and
// sends the request again, which runs on B, in the same nested scope with
// the workbench and the memory A saved. A is then let go on (SIGCONT):
// whatever it does late is refused — the store holds B's version and
// state, A refuses a resume with the token it knew, and B keeps serving —
// and each turn the client got an answer for is in the memory exactly
// once.
func TestTakeoverWhileAlive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	prefix := redisPrefix(t)
	dir := t.TempDir()
	bin := buildProgram(t, dir)
	args := []string{"-redis", redistest.Addr, "-redis-prefix", prefix, "-lease", time.Second.String()}
	addrA, addrB := freeAddr(t), freeAddr(t)
	nodeA := startServer(t, bin, addrA, "", args...)
	nodeB := startServer(t, bin, addrB, "", args...)
	lb := newProxy(t, addrA)
	store, err := redisstore.New(redistest.Client(t), &redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	connected := make(chan struct{}, 8)
	c, err := ws.Dial(ctx, "ws://"+lb.addr()+"/_chat/routes", &ws.DialOptions{
		Reconnect: &ws.ReconnectOptions{MinDelay: 20 * time.Millisecond, MaxDelay: 200 * time.Millisecond},
		OnConnectionState: func(s ws.ConnectionState, _ error) {
			if s == ws.StateConnected {
				connected <- struct{}{}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	var answers []string
	text := func(s string) {
		mu.Lock()
		answers = append(answers, s)
		mu.Unlock()
	}
	session, err := c.Builder().OnMessage(text).OnStream(text).Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	stderrs := func() string {
		return "node A stderr:\n" + nodeA.stderrText() + "\nnode B stderr:\n" + nodeB.stderrText()
	}
	chatOnce := func(msg string) (string, error) {
		mu.Lock()
		answers = nil
		mu.Unlock()
		err := session.Chat(ctx, msg)
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(answers, ""), err
	}
	say := func(msg string) string {
		t.Helper()
		got, err := chatOnce(msg)
		if err != nil {
			t.Fatalf("%q: %v\n%s", msg, err, stderrs())
		}
		return got
	}
	say("I want to build an axe")
	say("call it Widowmaker")
	nested := session.ScopeID()
	id := session.ConversationID()
	tokenOnA := session.ResumeToken()
	if id == "" || tokenOnA == "" {
		t.Fatal("the conversation is not durable: no conversation id or resume token")
	}

	// A freezes; a request goes out to it and gets no answer; the balancer
	// then sends the client to B.
	if err := nodeA.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	continued := false
	defer func() {
		if !continued {
			_ = nodeA.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	type result struct {
		answer string
		err    error
	}
	inflight := make(chan result, 1)
	go func() {
		got, err := chatOnce("make it deal 30 damage")
		inflight <- result{got, err}
	}()
	// Give the request time to reach A's socket through the proxy. Nothing
	// below depends on it having arrived: had it not, B runs it all the same.
	time.Sleep(200 * time.Millisecond)
	lb.switchTo(addrB)
	select {
	case <-connected:
	case <-ctx.Done():
		t.Fatalf("the client did not reconnect to node B\n%s", stderrs())
	}
	r := <-inflight
	if r.err != nil {
		t.Fatalf("the request in flight when A froze: %v\n%s", r.err, stderrs())
	}
	if !strings.Contains(r.answer, "Widowmaker") || !strings.Contains(r.answer, "axe dealing 30 damage") {
		t.Fatalf("on node B the request in flight answered %q, want the axe Widowmaker dealing 30 damage", r.answer)
	}
	if got := session.ScopeID(); got != nested {
		t.Fatalf("on node B the session is in scope %s, want %s", got, nested)
	}
	if got := say("hmm"); !strings.Contains(got, "Widowmaker") {
		t.Fatalf("on node B the weapon builder answered %q: the memory was lost", got)
	}
	onB, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	// A goes on: it may still hold the request it got frozen with, and the
	// conversation as it was before the takeover.
	if err := nodeA.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	continued = true
	// A refuses to resume the conversation with the token it knew (B's
	// resume rotated it): it does not serve its stale copy.
	direct, err := ws.Dial(ctx, "ws://"+addrA+"/_chat/routes", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if s, err := direct.Builder().Resume(ctx, id, tokenOnA); !errors.Is(err, chat.ErrResumeRefused) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("node A resumed the conversation with its stale token: %v", err)
	}
	// Whatever A did late, the store holds what B saved.
	after, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Version != onB.Version || !sameScopes(after, onB) {
		t.Fatalf("after A went on the store holds version %d, scopes %+v; B saved version %d, scopes %+v\n%s",
			after.Version, after.Scopes, onB.Version, onB.Scopes, stderrs())
	}
	if strings.Contains(nodeA.stderrText(), "lets go of it") {
		t.Log("node A ran its late request and let go of the conversation when its save was refused")
	}

	// B goes on serving, in the same scope, and its saves still succeed.
	if got := say("make it deal 45 damage"); !strings.Contains(got, "axe dealing 45 damage") {
		t.Fatalf("on node B after A went on the weapon builder answered %q\n%s", got, stderrs())
	}
	final, err := store.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if final.Version != onB.Version+1 {
		t.Fatalf("after one more turn on B the store holds version %d, want %d", final.Version, onB.Version+1)
	}
	last := final.Scopes[len(final.Scopes)-1]
	if last.ID != nested {
		t.Fatalf("the stored conversation is in scope %s, want %s", last.ID, nested)
	}

	// Each turn the client got an answer for in the weapon builder is in
	// its memory exactly once.
	var msgs []llms.MessageContent
	for _, mid := range last.Memories {
		m, err := store.Memories().Get(ctx, mid)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m...)
	}
	for _, turn := range []string{"call it Widowmaker", "make it deal 30 damage", "hmm", "make it deal 45 damage"} {
		if n := countHuman(msgs, turn); n != 1 {
			t.Errorf("the weapon builder's memory holds the turn %q %d times, want once", turn, n)
		}
	}
}

// sameScopes reports whether a and b hold the same scopes, beans and
// memories.
func sameScopes(a, b *chatstore.ConversationState) bool {
	if len(a.Scopes) != len(b.Scopes) {
		return false
	}
	for i := range a.Scopes {
		x, y := a.Scopes[i], b.Scopes[i]
		if x.ID != y.ID || x.Route != y.Route || strings.Join(x.Memories, ",") != strings.Join(y.Memories, ",") || len(x.Beans) != len(y.Beans) {
			return false
		}
		for k, v := range x.Beans {
			if string(y.Beans[k]) != string(v) {
				return false
			}
		}
	}
	return true
}

// countHuman counts the human messages of msgs whose text is text.
func countHuman(msgs []llms.MessageContent, text string) int {
	n := 0
	for _, m := range msgs {
		if m.Role != llms.ChatMessageTypeHuman {
			continue
		}
		for _, p := range m.Parts {
			if tp, ok := p.(llms.TextContent); ok && tp.Text == text {
				n++
			}
		}
	}
	return n
}

// stderrText returns what the server wrote to its standard error so far,
// read under the lock its writer takes.
func (s *server) stderrText() string {
	lw := s.cmd.Stderr.(*lockedWriter)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.String()
}
