package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// TestServesEveryBrowserFile fetches, from the example's own handler (what
// `make demo` serves), every file a page may load: the page, both forms
// of the client, the routes module at both of its URLs, the declarations
// and the import map script of pages written for newer Quarkus.
func TestServesEveryBrowserFile(t *testing.T) {
	srv := serveOffline(t)
	for _, tc := range []struct{ path, contentType, body string }{
		{"/", "text/html", "<script"},
		{"/favicon.ico", "image/svg+xml", "<svg"}, // browsers ask for it: no 404 in the console
		{"/app.js", "text/javascript", "ChatScopesClient"},
		{ws.ScriptPath, "text/javascript", "class ChatScopesClient"},
		{ws.ModulePath, "text/javascript", "export class ChatScopesClient"},
		{ws.TypeScriptPath, "application/typescript", "export class ChatScopesClient"},
		{ws.RoutesModulePath, "text/javascript", `export const defaultRoute = routes["menu"];`},
		{ws.RoutesTypeScriptPath, "application/typescript", "export interface Weapon {"},
		{ws.QuarkusAPIPath, "text/javascript", `export * from "../../_chat/javascript/routes.mjs";`},
		{ws.ImportMapPath, "text/javascript", `"@quarkiverse/chat-scopes-api"`},
	} {
		resp, err := http.Get(srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", tc.path, resp.Status)
			continue
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
			t.Errorf("GET %s: Content-Type %q, want %s", tc.path, ct, tc.contentType)
		}
		if !strings.Contains(string(b), tc.body) {
			t.Errorf("GET %s: the body lacks %s", tc.path, tc.body)
		}
	}
}

// newerQuarkusPage is a page written for newer Quarkus versions: the
// import map script, then the route module by its bare name, and the
// route module at the URL Quarkus serves it on.
const newerQuarkusPage = `<!DOCTYPE html>
<html><head><script src="/_importmap/generated_importmap.js"></script></head>
<body><script type="module">
import { ChatScopesClient } from "@quarkiverse/chat-scopes";
import { routes, defaultRoute, client, endpoint } from "@quarkiverse/chat-scopes-api";
import * as atQuarkusURL from "/_static/quarkus-chat-scopes-api/chatscopes-api.js";

window.testResult = (async () => {
    const log = [];
    log.push("default " + defaultRoute.name + " " + (client instanceof ChatScopesClient) + " " +
        (endpoint === "ws://" + location.host + "/_chat/routes") + " " + (atQuarkusURL.client === client));
    const session = await defaultRoute.connect({
        streamHandler: (chunk, frame) => { if (frame.html !== undefined) log.push("rendered " + frame.html.startsWith("<p>")); },
    });
    await session.chat("hello");
    log.push("routes " + Object.keys(routes).join(","));
    await client.close();
    return log;
})().then((log) => ({ ok: true, log }), (e) => ({ ok: false, error: String(e && e.stack || e) }));
</script></body></html>`

// TestNewerQuarkusPage runs a page written for newer Quarkus versions on
// the example's handler in headless Chromium: the import map script and
// both URLs of the route module must be served.
func TestNewerQuarkusPage(t *testing.T) {
	b := browsertest.Start(t)
	a := newOfflineApp(t)
	h, chatServer, err := a.handler(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/quarkus.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, newerQuarkusPage)
	})
	mux.Handle("/", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer chatServer.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := b.Run(ctx, srv.URL+"/quarkus.html")
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
	want := []string{"default menu true true true", "rendered true", "routes armor,enchant,menu,weapon"}
	if strings.Join(res.Log, "\n") != strings.Join(want, "\n") {
		t.Errorf("the page logged\n%s\nwant\n%s", strings.Join(res.Log, "\n"), strings.Join(want, "\n"))
	}
}
