//go:build unix

package ws

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// reloadCounter counts the loads of the page in its tab (sessionStorage
// outlives a reload): the steps of TestBrowserReloadResumes wait for the
// load they are for.
const reloadCounter = `
window.pageLoads = Number(sessionStorage.getItem("loads") || 0) + 1;
sessionStorage.setItem("loads", String(window.pageLoads));
window.pageReady = true;
`

// The pages of TestBrowserReloadResumes: the client as a classic script
// and as an ES module.
const (
	reloadClassicPage = `<!DOCTYPE html>
<html><head><script src="/_chat/javascript/chatscopes.js"></script></head>
<body><script>` + reloadCounter + `</script></body></html>`

	reloadModulePage = `<!DOCTYPE html>
<html><head></head><body><script type="module">
import { ChatScopesClient } from "/_chat/javascript/chatscopes.mjs";
window.ChatScopesClient = ChatScopesClient;
` + reloadCounter + `</script></body></html>`
)

// The steps of TestBrowserReloadResumes.
const (
	// The first load: one message, and the conversation kept in
	// sessionStorage, as a page that resumes after a reload does.
	reloadFirst = `(async () => {
    for (let i = 0; i < 3000 && !(window.pageReady && window.pageLoads === 1); i++) {
        await new Promise((r) => setTimeout(r, 10));
    }
    const log = [];
    const client = new ChatScopesClient();
    await client.open();
    const s = await client.builder().messageHandler((m) => log.push(m)).connect("tick");
    await s.chat("hello");
    sessionStorage.setItem("conversation", JSON.stringify({ id: s.conversationId, token: s.resumeToken }));
    return JSON.stringify(log);
})()`

	reloadNow = `setTimeout(() => location.reload(), 0); JSON.stringify("reloading")`

	// The reloaded page resumes the conversation with a new client: its
	// first message runs.
	reloadSecond = `(async () => {
    for (let i = 0; i < 3000 && !(window.pageReady && window.pageLoads === 2); i++) {
        await new Promise((r) => setTimeout(r, 10));
    }
    const saved = JSON.parse(sessionStorage.getItem("conversation"));
    const log = [];
    const client = new ChatScopesClient();
    await client.open();
    const s = await client.builder()
        .messageHandler((m) => log.push(m))
        .eventHandler("Completed", (d, frame) => {
            if (frame.conversationId === undefined) { // not the resume's
                log.push("completed replayed=" + (frame.replayed === true));
            }
        })
        .resume(saved.id, saved.token);
    await s.chat("hello"); // the same message again: a new one all the same
    await client.close();
    return JSON.stringify(log);
})()`
)

// TestBrowserReloadResumes reloads a page, in headless Chromium, after one
// message, and resumes its conversation with the reloaded page's new
// client, for each form of the client: the first message of the new
// client runs (it used to be answered with the old message's answer,
// replayed: both clients numbered their requests from 1).
func TestBrowserReloadResumes(t *testing.T) {
	leaktest.Check(t)
	b := browsertest.Start(t)
	for _, form := range []struct{ name, page string }{
		{"classic", reloadClassicPage},
		{"module", reloadModulePage},
	} {
		t.Run(form.name, func(t *testing.T) {
			nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
			a := nodes.start(t, "a", nil)
			mux := http.NewServeMux()
			mux.Handle("/_chat/", a.Server)
			mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				_, _ = w.Write([]byte(form.page))
			})
			hs := httptest.NewServer(mux)
			defer hs.Close()

			eval := openPage(t, b, hs.URL+"/page.html")
			var first []string
			eval("first", reloadFirst, &first)
			checkLog(t, first, []string{"tick 1: hello"})
			var reloading string
			eval("reload", reloadNow, &reloading)
			var second []string
			eval("after the reload", reloadSecond, &second)
			checkLog(t, second, []string{"tick 2: hello", "completed replayed=false"})
			if n := nodes.ticks.Load(); n != 2 {
				t.Fatalf("the route ran %d times for two messages", n)
			}
			waitNoConversations(t, a.router)
		})
	}
}

// The steps of TestBrowserReSendsItsCutRequest.
const (
	resendSetup = openReconnecting + `    window.tick = await client.builder()
        .messageHandler((m) => log.push("message " + m))
        .eventHandler("Completed", (d, frame) => {
            if (frame.conversationId === undefined) { // not a Connect's
                log.push("completed replayed=" + (frame.replayed === true));
            }
        })
        .connect("tick");
    return JSON.stringify(tick.conversationId);
})()`

	// The page changes the object it sent once sent: what is sent again
	// is what was sent first.
	resendInflight = `window.form = { userMessage: "once" };
window.inflight = tick.sendData(form).then(() => "resolved", (e) => "rejected " + e.reason);
form.userMessage = "changed";
JSON.stringify("sent")`

	// Then data that is not JSON fails its request alone.
	resendAnswered = `(async () => {
    const result = await window.inflight;
    const cycle = {};
    cycle.self = cycle;
    try {
        await tick.sendData(cycle);
        log.push("a cycle sent");
    } catch (e) {
        log.push("a cycle: " + e.name);
    }
    await tick.chat("after");
    await client.close();
    return JSON.stringify({ result, log });
})()`
)

// TestBrowserReSendsItsCutRequest: the JavaScript client's request whose
// answer the connection lost is sent again after the reconnect with its
// requestId and its data as first sent (the page changed the object
// meanwhile), and answered from what the server saved: replayed, the
// route ran once. Data that cannot be sent as JSON fails its request and
// the session goes on.
func TestBrowserReSendsItsCutRequest(t *testing.T) {
	leaktest.Check(t)
	b := browsertest.Start(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	proxy, _ := pageBehindProxy(t, a.Server)

	eval := openPage(t, b, "http://"+proxy.ln.Addr().String()+"/page.html")
	var id string
	eval("setup", resendSetup, &id)
	proxy.setBlackhole(true)
	var sent string
	eval("inflight", resendInflight, &sent)
	waitFor(t, "the answer to be saved", func() bool {
		st, err := nodes.store.Load(context.Background(), id)
		return err == nil && strings.Contains(string(st.Extra[replayKey]), "tick 1: once")
	})
	proxy.setBlackhole(false)
	proxy.cut()
	var res struct {
		Result string
		Log    []string
	}
	eval("answered", resendAnswered, &res)
	if res.Result != "resolved" {
		t.Fatalf("the request cut by the drop: %s", res.Result)
	}
	checkLog(t, res.Log, []string{"message tick 1: once", "completed replayed=true", "a cycle: TypeError", "message tick 2: after", "completed replayed=false"})
	if n := nodes.ticks.Load(); n != 2 {
		t.Fatalf("the route ran %d times for two requests", n)
	}
	waitNoConversations(t, a.router)
}
