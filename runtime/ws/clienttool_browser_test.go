//go:build unix

package ws

import (
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/internal/leaktest"
)

// clientToolPage runs the client tool locate in the page: on its own
// (clientTool), by hand with an error (clientToolHandler), and cancels a
// paused turn.
const clientToolPage = `<!DOCTYPE html>
<html><body><script type="module">
import { ChatScopesClient } from "/_chat/javascript/chatscopes.js";
window.testResult = (async () => {
    const log = [];
    const client = new ChatScopesClient();
    await client.open("ws://" + location.host + "/_chat/routes");
    let answered;
    const next = () => new Promise((resolve) => { answered = resolve; });
    let message = next();
    const auto = await client.builder()
        .messageHandler((m) => { log.push("message " + m); answered(); })
        .clientTool("locate", async (args, { signal, call }) => {
            log.push("locate " + JSON.stringify(args) + " deadline " + (call.deadline instanceof Date) + " aborted " + signal.aborted);
            return { city: "Lyon" };
        })
        .connect();
    await auto.chat("where");
    await message;

    let pending;
    const byHand = await client.builder()
        .messageHandler((m) => { log.push("message " + m); answered(); })
        .clientToolHandler((call) => { pending = call; log.push("call " + call.tool); })
        .connect();
    message = next();
    await byHand.chat("where");
    await pending.fail("the user said no");
    await message;

    await byHand.chat("where");
    try {
        await pending.cancel();
        log.push("cancel completed");
    } catch (e) {
        log.push("cancel " + e.message);
    }
    message = next();
    await byHand.chat("hello");
    await message;
    await client.close();
    return log;
})().then((log) => ({ ok: true, log }), (e) => ({ ok: false, error: String(e && e.stack || e) }));
</script></body></html>`

func TestBrowserClientTool(t *testing.T) {
	leaktest.Check(t)
	b := browsertest.Start(t)
	ts := startClientToolNode(t, nil, "")
	hs := servePages(t, ts.Server, map[string]string{"/page.html": clientToolPage})
	checkLog(t, runPageLog(t, b, hs.URL+"/page.html", 20*time.Second), []string{
		`locate {"precision":"city"} deadline true aborted false`,
		`message tool said: {"city":"Lyon"}`,
		"call locate",
		"message tool said: error: the client could not run this call: the user said no",
		"call locate",
		"cancel Cancelled",
		"message re: hello",
	})
}
