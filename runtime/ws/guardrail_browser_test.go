//go:build unix

package ws

import (
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// guardrailModulePage uses the ES module client with a retractHandler: the
// text it shows is what the guardrails accepted.
const guardrailModulePage = `<!DOCTYPE html>
<html><body><script type="module">
import { ChatScopesClient } from "/_chat/javascript/chatscopes.js";
window.testResult = (async () => {
    const log = [];
    let shown = "";
    const client = new ChatScopesClient();
    await client.open("ws://" + location.host + "/_chat/routes");
    const session = await client.builder()
        .streamHandler((chunk) => { shown += chunk; })
        .retractHandler((r) => { log.push("retract " + r.reason + " of " + JSON.stringify(shown)); shown = ""; })
        .errorHandler((m) => log.push("error " + m))
        .connect("stream");
    await session.chat("rewrite");
    log.push("shown " + shown); shown = "";
    await session.chat("reprompt");
    log.push("shown " + shown); shown = "";
    try {
        await session.chat("fail");
        log.push("fail completed");
    } catch (e) {
        log.push("failed " + e.message + ", shown " + JSON.stringify(shown));
    }
    await client.close();
    return log;
})().then((log) => ({ ok: true, log }), (e) => ({ ok: false, error: String(e && e.stack || e) }));
</script></body></html>`

// guardrailQuarkusPage is written for the Quarkus client: it knows nothing
// of Retract and sees a refused answer fail with GuardrailFailed.
const guardrailQuarkusPage = `<!DOCTYPE html>
<html><head><script src="/_chat/javascript/chatscopes.js"></script></head>
<body><script>
window.testResult = (async () => {
    const log = [];
    const client = new ChatScopesClient();
    await client.open("ws://" + location.host + "/_chat/routes");
    const session = await client.builder()
        .streamHandler((chunk) => log.push("stream " + chunk))
        .errorHandler((m) => log.push("error " + m))
        .connect("stream");
    try {
        await session.chat("fail");
        log.push("completed");
    } catch (e) {
        log.push("failed " + e.message);
    }
    await session.chat("pass");
    log.push("then completed");
    await client.close();
    return log;
})().then((log) => ({ ok: true, log }), (e) => ({ ok: false, error: String(e && e.stack || e) }));
</script></body></html>`

func TestBrowserGuardrailRetract(t *testing.T) {
	leaktest.Check(t)
	b := browsertest.Start(t)
	ts, _ := guardedStream(t,
		// The module page.
		llmtest.Reply{Chunks: []string{"bad ", "words"}},  // rewrite
		llmtest.Reply{Chunks: []string{"rude"}},           // reprompt
		llmtest.Reply{Chunks: []string{"kind ", "words"}}, // accepted
		llmtest.Reply{Chunks: []string{"awful"}},          // fail
		// The Quarkus page.
		llmtest.Reply{Chunks: []string{"awful ", "words"}}, // fail
		llmtest.Reply{Chunks: []string{"fine"}},            // pass
	)
	hs := servePages(t, ts.Server, map[string]string{
		"/module.html":  guardrailModulePage,
		"/quarkus.html": guardrailQuarkusPage,
	})
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/module.html", []string{
			`retract rewrite of "bad words"`,
			"shown A safe answer.",
			`retract reprompt of "rude"`,
			"shown kind words",
			`retract fail of "awful"`,
			"error That answer was withheld.",
			`failed GuardrailFailed, shown ""`,
		}},
		{"/quarkus.html", []string{
			"stream awful ",
			"stream words",
			"error That answer was withheld.",
			"failed GuardrailFailed",
			"stream fine",
			"then completed",
		}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			checkLog(t, runPageLog(t, b, hs.URL+tc.path, 20*time.Second), tc.want)
		})
	}
}
