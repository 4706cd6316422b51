//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// typedPage uses the routes module the server generates from this
// package's routes, through the import map as a page written for newer
// Quarkus versions loads it.
const typedPage = `<!DOCTYPE html>
<html><head><script src="/_importmap/generated_importmap.js"></script></head>
<body><script type="module">
import { routes, defaultRoute, client, endpoint, builder, order } from "@quarkiverse/chat-scopes-api";
import { ChatFailure } from "@quarkiverse/chat-scopes";

window.testResult = (async () => {
    const log = [];
    log.push("default " + defaultRoute.name);
    log.push("endpoint " + (endpoint === "ws://" + location.host + "/_chat/routes"));
    log.push("builder " + routes.builder.params.join(",") + " " + routes.builder.events.join(","));
    log.push("stream streaming " + routes.stream.streaming + ", echo " + routes.echo.streaming);
    log.push("named export " + (builder === routes.builder));

    // The example of the issue.
    const session = await routes.builder.connect({
        onWeapon(w) { log.push("weapon " + w.name + "/" + w.damage); },
    });
    await session.send({ userMessage: "build bow", damage: 40 });
    await session.send({ userMessage: "bow", damage: 2 });

    // A session follows its conversation: the menu hands over to the
    // builder, whose weapon events reach the menu session's handlers.
    const menu = await defaultRoute.connect({
        onMessage(text) { log.push("menu message " + text); },
        onThinking(text) { log.push("menu thinking " + text); },
        onWeapon(w) { log.push("menu weapon " + w.name); },
    });
    await menu.send({ userMessage: "hello" });
    await menu.send({ userMessage: "build sword" });
    log.push("one connection, sessions " + client.sessions.size);

    // Parameters of every JSON shape.
    const o = await order.connect({
        onReceipt(r) {
            log.push("receipt " + r.total + " " + r.customer.city + " " + r.Counts.large + " " + r.lines[0].price + " " + r.at + " " + r.gift);
        },
    });
    await o.send({
        lines: [{ item: "bow", quantity: 2, size: "large", price: "150" }],
        customer: { name: "Ann", street: "Main", city: "Oslo", tags: null },
        due: "2026-01-02T03:04:05Z",
        gift: true,
        rate: 0.5,
    });

    // Quarkus' handler names, and eventHandlers by type.
    const echo = await routes.echo.connect({ messageHandler(text) { log.push("quarkus " + text); } });
    await echo.chat("hi");
    const stream = await routes.stream.connect({ eventHandlers: { Stream(c) { log.push("chunk " + c); } } });
    await stream.send({ userMessage: "a b" });

    // Bad data is refused by the server; a bad handler by the module.
    try {
        await session.send({ damage: "forty" });
    } catch (e) {
        log.push("bad damage " + (e instanceof ChatFailure) + " " + e.reason);
    }
    try {
        await routes.echo.connect({ onNothing() {} });
    } catch (e) {
        log.push("bad handler " + e.message.includes("onNothing"));
    }

    // The module reopens its client once it was closed.
    await client.close();
    const after = await routes.echo.connect({ onMessage(text) { log.push("reopened " + text); } });
    await after.chat("again");
    await client.close();
    return log;
})().then((log) => ({ ok: true, log }), (e) => ({ ok: false, error: String(e && e.stack || e) }));
</script></body></html>`

var typedWant = []string{
	"default menu",
	"endpoint true",
	"builder userMessage,damage weapon",
	"stream streaming true, echo false",
	"named export true",
	"weapon bow/40",
	"weapon bow/42",
	"menu message menu 1: hello",
	"menu thinking opening the builder",
	"menu weapon sword",
	"one connection, sessions 2",
	"receipt 4.5 Oslo 2 150 2026-01-02T03:04:05Z true",
	"quarkus hi",
	"chunk a",
	"chunk b",
	"bad damage true BadRequest",
	"bad handler true",
	"reopened again",
}

// TestTypedRoutesInBrowser drives the generated routes module in headless
// Chromium against a real server.
func TestTypedRoutesInBrowser(t *testing.T) {
	b := browsertest.Start(t)
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.DiscardHandler)}, Register())
	if err != nil {
		t.Fatal(err)
	}
	srv := ws.NewServer(r, nil)
	mux := http.NewServeMux()
	mux.Handle("/_chat/", srv)
	mux.Handle(ws.ImportMapPath, srv)
	mux.HandleFunc("/typed.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(typedPage))
	})
	hs := httptest.NewServer(mux)
	defer func() {
		hs.Close()
		_ = srv.Close()
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := b.Run(ctx, hs.URL+"/typed.html")
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
	if !slices.Equal(res.Log, typedWant) {
		t.Fatalf("log:\n%s\nwant:\n%s", strings.Join(res.Log, "\n"), strings.Join(typedWant, "\n"))
	}
	// Every session ended with the client.
	for i := 0; r.Stats().Conversations != 0; i++ {
		if i == 500 {
			t.Fatalf("conversations left: %+v", r.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
