//go:build unix

package ws

import (
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/internal/leaktest"
)

// stopPage stops requests from the JavaScript client in Chromium: with an
// AbortSignal, with Session.stop() (the Stop button) and with an
// interrupting request; it counts the events of a stopped request that
// reach a handler after its promise rejected (none may).
const stopPage = `<!DOCTYPE html>
<html><head></head><body>
<script type="module">
import { ChatScopesClient, ChatFailure } from "/_chat/javascript/chatscopes.mjs";

window.testResult = (async () => {
    const log = [];
    const client = new ChatScopesClient();
    await client.open("ws://" + window.location.host + "/_chat/routes");
    const outcome = (p) => p.then((scope) => "completed", (e) => (e instanceof ChatFailure ? "failed " + e.reason : "error " + e));

    // An AbortSignal.
    let partial;
    const hold = await client.builder()
        .messageHandler((m) => { if (m === "partial" && partial) partial(); else log.push("message " + m); })
        .connect("hold");
    let entered = new Promise((r) => (partial = r));
    const controller = new AbortController();
    const first = outcome(hold.chat("long", { signal: controller.signal }));
    await entered;
    partial = undefined;
    controller.abort();
    log.push("signal: " + (await first));
    log.push("next: " + (await outcome(hold.chat("quick"))));
    log.push("aborted before: " + (await outcome(hold.chat("quick", { signal: AbortSignal.abort() }))));

    // Session.stop(), three times, on a route that sends until it is
    // stopped. A request is sent once the one before was answered, so the
    // events of a stopped request arrive before those of the next: the
    // first event of round n+1 comes after every late event of round n.
    let late = 0;
    let current, stoppedIds = new Set();
    let dripped;
    const drip = await client.builder()
        .messageHandler((m, frame) => {
            if (stoppedIds.has(frame.requestId)) late++;
            current = frame.requestId;
            if (dripped) { dripped(); dripped = undefined; }
        })
        .connect("drip");
    for (let round = 0; round < 3; round++) {
        entered = new Promise((r) => (dripped = r));
        const p = drip.chat("drip");
        await entered;
        const n = drip.stop();
        stoppedIds.add(current);
        log.push("stop: " + n + " " + (await outcome(p)));
    }
    log.push("late events " + late);

    // Steer: an interrupting request.
    entered = new Promise((r) => (partial = r));
    const running = outcome(hold.chat("first"));
    await entered;
    partial = undefined;
    const queued = outcome(hold.chat("second"));
    log.push("interrupting: " + (await outcome(hold.chat("quick", { interrupt: true }))));
    log.push("interrupted: " + (await running) + ", " + (await queued));
    await client.close();
    return log;
})().then((log) => ({ ok: true, log }), (e) => ({ ok: false, error: String(e && e.stack || e) }));
</script></body></html>`

func TestBrowserStop(t *testing.T) {
	leaktest.Check(t)
	b := browsertest.Start(t)
	ts := startServer(t, nil)
	hs := servePages(t, ts.Server, map[string]string{"/stop.html": stopPage})
	checkLog(t, runPageLog(t, b, hs.URL+"/stop.html", 30*time.Second), []string{
		"signal: failed Cancelled",
		"message quick answer",
		"next: completed",
		"aborted before: failed Cancelled",
		"stop: 1 failed Cancelled",
		"stop: 1 failed Cancelled",
		"stop: 1 failed Cancelled",
		"late events 0",
		"message quick answer",
		"interrupting: completed",
		"interrupted: failed Cancelled, failed Cancelled",
	})
	// The server's routes saw stops: the signal's, three stop()s, the interrupt.
	for i := range 5 {
		if end := recv(t, ts.routes.held); !end.stopped {
			t.Fatalf("stop %d: the route's context ended with %+v", i, end)
		}
	}
	waitNoConversations(t, ts.router)
}
