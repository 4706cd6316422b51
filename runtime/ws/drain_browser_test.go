//go:build unix

package ws

import (
	"testing"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// The steps of TestBrowserResumesAfterDrain.
const (
	drainSetup = openReconnecting + `    window.held = await client.builder().messageHandler((m) => log.push("held " + m)).connect("held");
    window.tick = await client.builder().messageHandler((m) => log.push("tick " + m)).connect("tick");
    window.long = held.chat("long").then(() => "resolved", (e) => "rejected " + e.reason);
    return JSON.stringify("sent");
})()`

	drainDuring = `window.during = tick.chat("during the drain").then(() => "resolved", (e) => "rejected " + e.reason); JSON.stringify("sent")`

	drainAnswered = `(async () => {
    const out = [await window.long, await window.during];
    await held.chat("again");
    await tick.chat("next");
    await client.close();
    return JSON.stringify({ out, log, states });
})()`
)

// TestBrowserResumesAfterDrain drains the node of a page's JavaScript
// client (with the reconnect option) while a turn runs: the turn's answer
// reaches the page, a request sent during the drain is left for the client,
// which, told 1001, reconnects through the proxy to the other node,
// resumes both conversations and re-sends it there; every turn runs once.
func TestBrowserResumesAfterDrain(t *testing.T) {
	startSignalWatcher()
	leaktest.Check(t)
	b := browsertest.Start(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	g := newGateRoute()
	handedOver := make(chan struct{}, 1)
	a := nodes.serve(t, "a", g, nil, handedOver, 0)
	rb, routes := nodes.router(t, "b", g, 0)
	nb := startServerFor(t, rb, routes, nil)
	proxy := startProxy(t, nb)
	proxy.switchToAddr(a.addr)

	eval := openPage(t, b, "http://"+proxy.ln.Addr().String()+"/page.html")
	var sent string
	eval("setup", drainSetup, &sent)
	recv(t, g.started)
	proxy.switchTo(nb)
	a.stop() // the drain starts
	waitFor(t, "the connection to drain", func() bool { return anyDraining(a.srv) })
	eval("during", drainDuring, &sent)
	recv(t, handedOver)
	close(g.release)
	if err := a.wait(t); err != nil {
		t.Fatalf("ServeUntilSignal: %v", err)
	}
	var res struct {
		Out, Log, States []string
	}
	eval("answered", drainAnswered, &res)
	checkLog(t, res.Out, []string{"resolved", "resolved"})
	checkLog(t, res.Log, []string{
		"held held 1: long",
		"tick tick 1: during the drain",
		"held held 2: again",
		"tick tick 2: next",
	})
	checkLog(t, res.States, []string{"connecting", "connected", "reconnecting", "connected", "closed"})
	if g.runs.Load() != 2 || nodes.ticks.Load() != 2 {
		t.Fatalf("held ran %d times, tick %d times; want 2 and 2", g.runs.Load(), nodes.ticks.Load())
	}
}
