//go:build unix

package ws

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
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
	checkGoroutines(t)
	b := browsertest.Start(t)
	ts := startClientToolNode(t, nil, "")
	mux := http.NewServeMux()
	mux.Handle("/_chat/", ts.Server)
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(clientToolPage))
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := b.Run(ctx, hs.URL+"/page.html")
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, b.ConsoleLog())
	}
	var res struct {
		OK    bool
		Error string
		Log   []string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if !res.OK {
		t.Fatalf("the page failed: %s\nconsole:\n%s", res.Error, b.ConsoleLog())
	}
	checkLog(t, res.Log, []string{
		`locate {"precision":"city"} deadline true aborted false`,
		`message tool said: {"city":"Lyon"}`,
		"call locate",
		"message tool said: error: the client could not run this call: the user said no",
		"call locate",
		"cancel Cancelled",
		"message re: hello",
	})
}
