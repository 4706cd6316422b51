//go:build unix

package ws

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/internal/leaktest"
)

// quarkusFlow uses only the Quarkus API of the client. The pages written
// for either form of the Quarkus client run it.
const quarkusFlow = `
window.testResult = (async () => {
    const log = [];
    const client = new ChatScopesClient();
    await client.open("ws://" + window.location.host + "/_chat/routes");
    const session = await client.builder()
        .messageHandler((m) => log.push("message " + m))
        .thinkingHandler((m) => log.push("thinking " + m))
        .eventHandler("weapon", (w) => log.push("weapon " + w.name + "/" + w.damage))
        .connect();
    const top = session.currentScope;
    await session.chat("hello");
    await session.chat("build bow");
    log.push("nested " + (session.currentScope !== top));
    await session.sendData({ userMessage: "bow", damage: 2 });
    await session.chat("done");
    log.push("back on top " + (session.currentScope === top));
    try {
        await client.builder().connect("nowhere");
        log.push("connected to nowhere");
    } catch (e) {
        log.push("connect failed " + e.message);
    }
    const shop = await client.builder().errorHandler((m) => log.push("error " + m)).connect("shop");
    try {
        await shop.chat("axe");
    } catch (e) {
        log.push("chat failed " + e.message);
    }
    await shop.chat("sword");
    return log;
})().then((log) => ({ ok: true, log }), (e) => ({ ok: false, error: String(e && e.stack || e) }));
`

// classicPage is written for the Quarkus JavaScript client: the classic
// script at the Quarkus URL.
const classicPage = `<!DOCTYPE html>
<html><head><script src="/_chat/javascript/chatscopes.js"></script></head>
<body><script>` + quarkusFlow + `</script></body></html>`

// importMapPage is written for newer Quarkus versions: the import map
// script of the web-dependency-locator, and the client imported as an ES
// module by its bare specifier.
const importMapPage = `<!DOCTYPE html>
<html><head><script src="/_importmap/generated_importmap.js"></script></head>
<body><script type="module">
import { ChatScopesClient } from "@quarkiverse/chat-scopes";
` + quarkusFlow + `</script></body></html>`

// bothFormsPage loads chatscopes.js twice, as a classic script and as a
// module: each gets its own form.
const bothFormsPage = `<!DOCTYPE html>
<html><head><script src="/_chat/javascript/chatscopes.js"></script>
<script>window.classicClient = ChatScopesClient;</script></head>
<body><script type="module">
import { ChatScopesClient, chatRoutesEndpoint } from "/_chat/javascript/chatscopes.js";
const forms = typeof window.classicClient === "function" && typeof ChatScopesClient === "function" &&
    window.classicClient !== ChatScopesClient && typeof chatRoutesEndpoint === "function";
` + quarkusFlow + `
window.testResult = window.testResult.then((r) => (r.ok && r.log.unshift("two forms " + forms), r));
</script></body></html>`

// quarkusAPIPage is written for the route module newer Quarkus versions
// generate: routes, defaultRoute, client, endpoint, with the handler names
// of the SessionBuilder. Routes registered by hand are in it too.
const quarkusAPIPage = `<!DOCTYPE html>
<html><head><script src="/_importmap/generated_importmap.js"></script></head>
<body><script type="module">
import { routes, defaultRoute, client, endpoint } from "@quarkiverse/chat-scopes-api";
import * as atQuarkusURL from "/_static/quarkus-chat-scopes-api/chatscopes-api.js";

window.testResult = (async () => {
    const log = [];
    log.push("default " + defaultRoute.name + ", endpoint " + (endpoint === "ws://" + location.host + "/_chat/routes"));
    log.push("same routes at the Quarkus URL " + (Object.keys(atQuarkusURL.routes).join() === Object.keys(routes).join()) +
        " " + (atQuarkusURL.endpoint === endpoint) + " " + (atQuarkusURL.routes === routes && atQuarkusURL.client === client));
    const session = await routes.events.connect({
        thinkingHandler: (m) => log.push("thinking " + m),
        consoleHandler: (m) => log.push("console " + m),
        objectHandler: (o) => log.push("object " + JSON.stringify(o)),
        streamHandler: (c) => log.push("stream " + c),
        messageHandler: (m) => log.push("message " + m),
        eventHandlers: { custom: (d) => log.push("custom " + JSON.stringify(d)) },
    });
    await session.chat("x");
    const count = await routes["count"].connect({ defaultHandler: (type, data) => log.push("default " + type + " " + JSON.stringify(data)) });
    await count.sendData({ count: 2, label: "x" });
    log.push("sessions " + client.sessions.size);
    await client.close();
    return log;
})().then((log) => ({ ok: true, log }), (e) => ({ ok: false, error: String(e && e.stack || e) }));
</script></body></html>`

var quarkusAPIWant = []string{
	"default menu, endpoint true",
	"same routes at the Quarkus URL true true true",
	"thinking thinking about x",
	"console console line",
	`object {"n":1,"text":"x"}`,
	"stream one",
	"stream two",
	"stream three",
	"custom [1,2,3]",
	"message done: x",
	`default Object {"double":4,"label":"x"}`,
	"sessions 2",
}

var classicWant = []string{
	"message menu 1: hello",
	"thinking opening the builder",
	"weapon bow/0",
	"nested true",
	"weapon bow/2",
	"message saved bow",
	"back on top true",
	"connect failed RouteNotFound",
	"chat failed ServerError",
	"error sorry, no sword",
}

// modulePage uses the ES module and what this client adds: queued
// requests, ChatFailure rejections, two sessions on one socket, close and
// connection loss.
const modulePage = `<!DOCTYPE html>
<html><head></head><body>
<script type="module">
import { ChatScopesClient, ChatFailure, chatRoutesEndpoint } from "/_chat/javascript/chatscopes.mjs";

async function stats() {
    return (await fetch("/stats")).json();
}

async function waitConversations(n) {
    for (let i = 0; i < 500; i++) {
        if ((await stats()).Conversations === n) return true;
        await new Promise((r) => setTimeout(r, 10));
    }
    return false;
}

window.testResult = (async () => {
    const log = [];
    const base = (await stats()).Conversations; // the other pages' sessions
    const client = new ChatScopesClient();
    const opened = await client.open(chatRoutesEndpoint());
    log.push("open resolves with the client " + (opened === client));

    const menu = await client.builder()
        .messageHandler((m) => log.push("A message " + m))
        .thinkingHandler((m) => log.push("A thinking " + m))
        .eventHandler("weapon", (w) => log.push("A weapon " + w.name + "/" + w.damage))
        .connect(null);
    const top = menu.currentScope;
    const scope = await menu.chat("build sword");
    log.push("chat resolves with the new scope " + (scope === menu.currentScope && scope !== top));
    await menu.sendData({ userMessage: "sword", damage: 5 });
    await menu.chat("done");
    log.push("popped " + (menu.currentScope === top));

    const builder = client.builder()
        .thinkingHandler((m) => log.push("B thinking " + m))
        .consoleHandler((m) => log.push("B console " + m))
        .objectHandler((o) => log.push("B object " + JSON.stringify(o)))
        .streamHandler((c) => log.push("B stream " + c))
        .messageHandler((m) => log.push("B message " + m))
        .defaultHandler((type, data) => log.push("B default " + type + " " + JSON.stringify(data)));
    const events = await builder.connect("events");
    await events.chat("x");

    // Requests are queued per session; each promise settles with its own
    // terminator; two sessions share the socket.
    const echo = await builder.connect("echo");
    const results = await Promise.all([
        menu.chat("q1"), menu.chat("q2"), echo.chat("e1"), menu.chat("q3"), echo.chat("e2"),
    ]);
    log.push("all settled " + results.every((r) => typeof r === "string"));
    log.push("pending " + menu.pending + " " + echo.pending);

    // Failed rejects with a ChatFailure carrying the reason.
    try {
        await client.builder().connect("nowhere");
    } catch (e) {
        log.push("connect rejected " + (e instanceof ChatFailure) + " " + (e instanceof Error) + " " + e.reason);
    }
    const admin = await client.builder().connect("admin");
    const outcomes = await Promise.allSettled([admin.chat("a"), admin.chat("b")]);
    log.push("admin " + outcomes.map((o) => o.status + " " + (o.reason && o.reason.reason)).join(", "));
    const panicky = await client.builder().connect("panic");
    const queued = [panicky.chat("1"), panicky.chat("2"), panicky.chat("3")];
    const settled = await Promise.allSettled(queued);
    log.push("panic " + settled.map((o) => o.reason.message).join(" "));

    // Closing a session sends Disconnect; it cannot be used after.
    const before = (await stats()).Conversations;
    echo.close();
    log.push("disconnected " + await waitConversations(before - 1));
    try {
        await echo.chat("after close");
    } catch (e) {
        log.push("after close " + e.reason);
    }

    // Closing a session with a request in progress rejects it at once: the
    // server cancels the request and answers nothing more.
    const busy = (await stats()).Conversations;
    const held = await client.builder().connect("gate");
    const inflight = held.chat("held");
    const waiting = held.chat("waiting");
    held.close();
    const closed = await Promise.allSettled([inflight, waiting]);
    log.push("close in flight " + closed.map((o) => o.status + " " + (o.reason && o.reason.reason)).join(", "));
    log.push("in flight disconnected " + await waitConversations(busy));

    // Closing the client ends every session on the server.
    await client.close();
    log.push("client closed " + await waitConversations(base));
    try {
        await menu.chat("closed");
    } catch (e) {
        log.push("after client close " + e.reason);
    }

    // Losing the connection rejects what is pending.
    const other = new ChatScopesClient();
    let closeCode = 0;
    other.closeHandler((ev) => { closeCode = ev.code; });
    await other.open();
    const gate = await other.builder().connect("gate");
    const pending = gate.chat("hold");
    const queuedToo = gate.chat("queued");
    await fetch("/kill");
    for (const p of [pending, queuedToo]) {
        try {
            await p;
            log.push("resolved after loss");
        } catch (e) {
            log.push("lost " + e.reason);
        }
    }
    log.push("close code " + closeCode);
    return log;
})().then((log) => ({ ok: true, log }), (e) => ({ ok: false, error: String(e && e.stack || e) }));
</script></body></html>`

var moduleWant = []string{
	"open resolves with the client true",
	"A thinking opening the builder",
	"A weapon sword/0",
	"chat resolves with the new scope true",
	"A weapon sword/5",
	"A message saved sword",
	"popped true",
	"B thinking thinking about x",
	"B console console line",
	`B object {"n":1,"text":"x"}`,
	"B stream one",
	"B stream two",
	"B stream three",
	"B default custom [1,2,3]",
	"B message done: x",
	// Sessions run independently: only each session's own order is fixed.
	"*A message menu 2: q1",
	"*A message menu 3: q2",
	"*A message menu 4: q3",
	"*B message e1",
	"*B message e2",
	"all settled true",
	"pending 0 0",
	"connect rejected true true RouteNotFound",
	"admin rejected Forbidden, rejected Forbidden",
	"panic ServerError ServerError ServerError",
	"disconnected true",
	"after close SessionClosed",
	"close in flight rejected SessionClosed, rejected SessionClosed",
	"in flight disconnected true",
	"client closed true",
	"after client close SessionClosed",
	"lost ConnectionLost",
	"lost ConnectionLost",
	"close code 1006", // Server.Close drops connections without a close handshake
}

// checkLog compares a page's log with want; lines of want starting with
// "*" may come in any order among the neighbouring "*" lines, but the
// lines of one session keep their order.
func checkLog(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := 0; i < len(want); {
		if !strings.HasPrefix(want[i], "*") {
			if got[i] != want[i] {
				t.Fatalf("line %d: %q, want %q\nlog:\n%s", i, got[i], want[i], strings.Join(got, "\n"))
			}
			i++
			continue
		}
		j := i
		for j < len(want) && strings.HasPrefix(want[j], "*") {
			j++
		}
		// Per session prefix ("A ", "B "), the order must be kept.
		bySession := map[string][]string{}
		for _, w := range want[i:j] {
			w = w[1:]
			bySession[w[:2]] = append(bySession[w[:2]], w)
		}
		for _, g := range got[i:j] {
			q := bySession[g[:2]]
			if len(q) == 0 || q[0] != g {
				t.Fatalf("line %q out of order; log:\n%s", g, strings.Join(got, "\n"))
			}
			bySession[g[:2]] = q[1:]
		}
		i = j
	}
}

// htmlPage serves one HTML page.
func htmlPage(html string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(html))
	}
}

// servePages serves the endpoint at /_chat/ and each page at its path;
// the server closes with the test.
func servePages(t *testing.T, endpoint http.Handler, pages map[string]string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/_chat/", endpoint)
	for path, html := range pages {
		mux.Handle(path, htmlPage(html))
	}
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return hs
}

// runPageLog runs the page at url in b, within timeout, and returns the
// log it resolved with ({ok, error, log}); a page that failed fails the
// test with the browser's console.
func runPageLog(t *testing.T, b *browsertest.Browser, url string, timeout time.Duration) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := b.Run(ctx, url)
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
	return res.Log
}

func TestBrowser(t *testing.T) {
	leaktest.Check(t)
	b := browsertest.Start(t)
	ts := startServer(t, nil)
	mux := http.NewServeMux()
	mux.Handle("/_chat/", ts.Server)
	mux.Handle(ImportMapPath, ts.Server)
	mux.Handle("/_static/quarkus-chat-scopes-api/", ts.Server)
	mux.Handle("/classic.html", htmlPage(classicPage))
	mux.Handle("/module.html", htmlPage(modulePage))
	mux.Handle("/importmap.html", htmlPage(importMapPage))
	mux.Handle("/both.html", htmlPage(bothFormsPage))
	mux.Handle("/api.html", htmlPage(quarkusAPIPage))
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(ts.router.Stats())
	})
	mux.HandleFunc("/kill", func(w http.ResponseWriter, r *http.Request) {
		_ = ts.Server.Close() // every connection goes away
	})
	hs := httptest.NewServer(mux)
	defer hs.Close()

	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"quarkus page, classic script", "/classic.html", classicWant},
		{"newer quarkus page, import map", "/importmap.html", classicWant},
		{"classic script and module from one URL", "/both.html", append([]string{"two forms true"}, classicWant...)},
		{"newer quarkus route module", "/api.html", quarkusAPIWant},
		// Last: it closes the server.
		{"module", "/module.html", moduleWant},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkLog(t, runPageLog(t, b, hs.URL+tc.path, 20*time.Second), tc.want)
		})
	}
	waitNoConversations(t, ts.router)
}
