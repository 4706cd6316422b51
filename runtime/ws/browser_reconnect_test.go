//go:build unix

package ws

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

// reconnectPage loads the ES module and keeps what the steps of
// TestBrowserReconnects share in window.
const reconnectPage = `<!DOCTYPE html>
<html><head></head><body><script type="module">
import { ChatScopesClient } from "/_chat/javascript/chatscopes.mjs";
window.ChatScopesClient = ChatScopesClient;
window.log = [];
window.states = [];
window.pageReady = true;
</script></body></html>`

// openReconnecting starts the first step of a reconnect test: an async
// function, ended by the step, that waits for reconnectPage, opens a
// client with the reconnect option (window.client) and logs its states.
const openReconnecting = `(async () => {
    for (let i = 0; i < 3000 && !window.pageReady; i++) {
        await new Promise((r) => setTimeout(r, 10));
    }
    const client = new ChatScopesClient({ reconnect: { minDelay: 5, maxDelay: 50 } });
    client.onConnectionState((state) => states.push(state));
    await client.open();
    window.client = client;
`

// The steps of TestBrowserReconnects, evaluated in the page in turn; each
// returns a JSON string.
const (
	reconnectSetup = openReconnecting + `    window.menu = await client.builder()
        .messageHandler((m) => log.push("menu message " + m))
        .eventHandler("weapon", (w) => log.push("menu weapon " + w.name + "/" + w.damage))
        .connect();
    const top = menu.currentScope;
    window.nested = await menu.chat("build sword");
    window.tick = await client.builder()
        .messageHandler((m) => log.push("tick message " + m))
        .thinkingHandler((m) => log.push("tick thinking " + m))
        .eventHandler("Completed", (d, frame) => {
            if (frame.conversationId === undefined) { // not a Connect's
                log.push("tick completed replayed=" + (frame.replayed === true));
            }
        })
        .connect("tick");
    window.echo = await client.builder().connect("echo");
    return JSON.stringify({ nested: nested !== top, tick: tick.conversationId, echo: echo.conversationId, token: menu.resumeToken });
})()`

	// After the cut: a request made while the client reconnects waits
	// and runs in the nested scope of the resumed session.
	reconnectNested = `(async () => {
    for (let i = 0; i < 3000 && !states.includes("reconnecting"); i++) {
        await new Promise((r) => setTimeout(r, 5));
    }
    const scope = await menu.sendData({ userMessage: "sword", damage: 5 });
    return JSON.stringify({ same: scope === nested && menu.currentScope === nested, state: client.state, rotated: typeof menu.resumeToken === "string" });
})()`

	reconnectInflight = `window.inflight = tick.chat("once").then((s) => "resolved", (e) => "rejected " + e.reason); JSON.stringify("sent")`

	reconnectAnswered = `(async () => JSON.stringify(await window.inflight))()`

	reconnectNext = `(async () => {
    await tick.chat("next");
    return JSON.stringify("ok");
})()`

	// The echo conversation is gone from the store when the client comes
	// back: its resume is refused, its request rejects with the reason.
	reconnectRefused = `(async () => {
    const out = [];
    try {
        await echo.chat("hello?");
        out.push("echo resolved");
    } catch (e) {
        out.push("echo " + e.reason + " closed=" + echo.closed);
    }
    try {
        await echo.chat("again");
    } catch (e) {
        out.push("again " + e.reason);
    }
    out.push("sessions " + client.sessions.size + " " + client.state);
    await tick.chat("still");
    await client.close();
    out.push("after close " + client.state);
    return JSON.stringify({ out, log, states });
})()`
)

// openPage opens url in b and returns a function that evaluates a step's
// expression in the page, within 30 s of the opening, and decodes its
// JSON result into v; a failure ends the test, with the browser's console.
func openPage(t *testing.T, b *browsertest.Browser, url string) func(step, expr string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	page, err := b.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	return func(step, expr string, v any) {
		t.Helper()
		out, err := page.Eval(ctx, expr)
		if err != nil {
			t.Fatalf("%s: %v\nconsole:\n%s", step, err, b.ConsoleLog())
		}
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("%s: %s: %v", step, out, err)
		}
	}
}

// pageBehindProxy serves endpoint at /_chat/ and reconnectPage at
// /page.html behind a TCP proxy whose connections the test can cut; the
// server (returned: the proxy's target) closes when the test ends.
func pageBehindProxy(t *testing.T, endpoint http.Handler) (*testProxy, *testServer) {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/_chat/", endpoint)
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(reconnectPage))
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	front := &testServer{http: hs}
	return startProxy(t, front), front
}

// TestBrowserReconnects runs the JavaScript client with the reconnect
// option in headless Chromium against a durable server behind a TCP proxy
// whose connections the test cuts.
func TestBrowserReconnects(t *testing.T) {
	leaktest.Check(t)
	b := browsertest.Start(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	proxy, front := pageBehindProxy(t, a.Server)

	eval := openPage(t, b, "http://"+proxy.ln.Addr().String()+"/page.html")

	var setup struct {
		Nested     bool
		Tick, Echo string
		Token      string
	}
	eval("setup", reconnectSetup, &setup)
	if !setup.Nested || setup.Tick == "" || setup.Echo == "" || setup.Token == "" {
		t.Fatalf("setup: %+v", setup)
	}

	// 1. The connection is cut: the client reconnects by itself, resumes,
	// and the next request runs in the same nested scope.
	proxy.cut()
	var nested struct {
		Same    bool
		State   string
		Rotated bool
	}
	eval("nested", reconnectNested, &nested)
	if !nested.Same || nested.State != "connected" || !nested.Rotated {
		t.Fatalf("after the cut: %+v", nested)
	}

	// 2. A request in flight when the cut happens: its answer is lost on
	// the way (the route ran, the state is saved), the client re-sends it
	// after resuming and gets the saved answer, once.
	proxy.setBlackhole(true)
	var sent string
	eval("inflight", reconnectInflight, &sent)
	waitFor(t, "the answer to be saved", func() bool {
		st, err := nodes.store.Load(context.Background(), setup.Tick)
		return err == nil && strings.Contains(string(st.Extra[replayKey]), "tick 1")
	})
	proxy.setBlackhole(false)
	proxy.cut()
	var answered string
	eval("answered", reconnectAnswered, &answered)
	if answered != "resolved" {
		t.Fatalf("the request in flight: %s", answered)
	}
	if n := nodes.ticks.Load(); n != 1 {
		t.Fatalf("the route ran %d times for one request", n)
	}
	var ok string
	eval("next", reconnectNext, &ok)
	if n := nodes.ticks.Load(); n != 2 {
		t.Fatalf("the route ran %d times for two requests", n)
	}

	// 3. The echo conversation expires while the client is away.
	dead := nodes.start(t, "dead", nil)
	dead.http.Close()
	proxy.switchTo(dead)
	proxy.cut()
	waitFor(t, "node a to let go", func() bool { return a.router.Stats().Conversations == 0 })
	if err := nodes.store.Delete(context.Background(), setup.Echo); err != nil {
		t.Fatal(err)
	}
	proxy.switchTo(front)
	var res struct {
		Out, Log, States []string
	}
	eval("refused", reconnectRefused, &res)
	checkLog(t, res.Out, []string{
		"echo ResumeRefused closed=true",
		"again ResumeRefused",
		"sessions 2 connected",
		"after close closed",
	})
	checkLog(t, res.Log, []string{
		"menu weapon sword/0",
		"menu weapon sword/5",
		"tick thinking ticking",
		"tick message tick 1: once",
		"tick completed replayed=true",
		"tick thinking ticking",
		"tick message tick 2: next",
		"tick completed replayed=false",
		"tick thinking ticking",
		"tick message tick 3: still",
		"tick completed replayed=false",
	})
	checkLog(t, res.States, []string{"connecting", "connected", "reconnecting", "connected", "reconnecting", "connected", "reconnecting", "connected", "closed"})
	waitNoConversations(t, a.router)
}

// reconnectPlain runs in a page of a server that keeps no conversations:
// with the reconnect option, a session cannot be resumed, its request in
// progress rejects with ConnectionLost, and the client reconnects for new
// sessions.
const reconnectPlain = `(async () => {
    for (let i = 0; i < 3000 && !window.pageReady; i++) {
        await new Promise((r) => setTimeout(r, 10));
    }
    const out = [];
    const client = new ChatScopesClient();
    client.autoReconnect({ minDelay: 5, maxDelay: 50 });
    client.onConnectionState((state) => out.push("state " + state));
    let closes = 0;
    client.closeHandler(() => closes++);
    await client.open();
    const gate = await client.builder().connect("gate");
    out.push("durable " + (gate.resumeToken !== undefined));
    const held = gate.chat("hold");
    fetch("/cut").catch(() => {}); // its response may be cut too
    try {
        await held;
        out.push("resolved");
    } catch (e) {
        out.push("lost " + e.reason + " closed=" + gate.closed);
    }
    const echo = await client.builder().connect("echo");
    await echo.chat("hi");
    out.push("new session works, close handler called " + closes);
    await client.close();
    out.push("close handler called " + closes);
    return JSON.stringify(out);
})()`

func TestBrowserReconnectsToAPlainServer(t *testing.T) {
	leaktest.Check(t)
	b := browsertest.Start(t)
	ts := startServer(t, nil)
	var proxy *testProxy
	mux := http.NewServeMux()
	mux.Handle("/_chat/", ts.Server)
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(reconnectPage))
	})
	var cut atomic.Bool
	mux.HandleFunc("/cut", func(w http.ResponseWriter, r *http.Request) {
		if cut.Swap(true) {
			return // the browser retries a request whose connection was cut
		}
		// The gate route holds the request: it is in progress.
		select {
		case <-ts.routes.entered:
		case <-time.After(10 * time.Second):
			t.Error("the gate route did not start")
		}
		proxy.cut()
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()
	proxy = startProxy(t, &testServer{http: hs})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	page, err := b.Open(ctx, "http://"+proxy.ln.Addr().String()+"/page.html")
	if err != nil {
		t.Fatal(err)
	}
	out, err := page.Eval(ctx, reconnectPlain)
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, b.ConsoleLog())
	}
	var got []string
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	checkLog(t, got, []string{
		"state connecting",
		"state connected",
		"durable false",
		"state reconnecting",
		"lost ConnectionLost closed=true",
		"state connected",
		"new session works, close handler called 0",
		"state closed",
		"close handler called 1",
	})
	waitNoConversations(t, ts.router)
}

// The steps of TestBrowserDropMidTurn.
const (
	dropSetup = openReconnecting + `    window.session = await client.builder()
        .messageHandler((m) => log.push("message " + m))
        .connect("answerfirst");
    window.call = session.chat("hello").then(() => "resolved", (e) => "rejected " + e.reason);
    for (let i = 0; i < 3000 && log.length === 0; i++) {
        await new Promise((r) => setTimeout(r, 5));
    }
    return JSON.stringify(log);
})()`

	dropAnswered = `(async () => {
    const result = await window.call;
    await session.chat("next");
    await client.close();
    return JSON.stringify({ result, log, states });
})()`
)

// TestBrowserDropMidTurn cuts the connection of the JavaScript client
// (with the reconnect option) while its request runs, after its answer
// reached the page and before its terminator, on each store: the turn
// goes on without its connection, and the re-sent request is answered
// from it — the route ran once, and the page got the answer once.
func TestBrowserDropMidTurn(t *testing.T) {
	leaktest.Check(t)
	b := browsertest.Start(t)
	for _, st := range []struct {
		name  string
		store func(t *testing.T) chatstore.ConversationStore
	}{
		{"inmemory", func(*testing.T) chatstore.ConversationStore { return chat.NewInMemoryConversationStore(nil) }},
		{"bolt", func(t *testing.T) chatstore.ConversationStore {
			s, err := boltstore.Open(filepath.Join(t.TempDir(), "chat.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"redis", func(t *testing.T) chatstore.ConversationStore {
			c := redistest.Client(t)
			s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(t, c, "chatgen-ws-browser")})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(st.name, func(t *testing.T) { browserDropMidTurn(t, b, st.store(t)) })
	}
}

func browserDropMidTurn(t *testing.T, b *browsertest.Browser, store chatstore.ConversationStore) {
	g := newGate()
	a := startGated(t, store, "a", g, nil)
	proxy, _ := pageBehindProxy(t, a.Server)

	eval := openPage(t, b, "http://"+proxy.ln.Addr().String()+"/page.html")
	var first []string
	eval("setup", dropSetup, &first)
	checkLog(t, first, []string{"message answer 1: hello"})
	recv(t, g.started)
	s := onlySession(t, a)
	proxy.cut()
	waitLost(t, s)
	close(g.release)
	var res struct {
		Result      string
		Log, States []string
	}
	eval("answered", dropAnswered, &res)
	if res.Result != "resolved" {
		t.Fatalf("the request cut by the drop: %s", res.Result)
	}
	checkLog(t, res.Log, []string{"message answer 1: hello", "message answer 2: next"})
	checkLog(t, res.States, []string{"connecting", "connected", "reconnecting", "connected", "closed"})
	if n := g.runs.Load(); n != 2 {
		t.Fatalf("the route ran %d times for two requests", n)
	}
	waitNoConversations(t, a.router)
}
