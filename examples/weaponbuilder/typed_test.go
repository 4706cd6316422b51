package main

import (
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/internal/tsctest"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// TestTypedRoutesTypeCheck type-checks a page's TypeScript against the
// declarations the example's server generates from its routes:
// testdata/tsc/ok.ts must compile with tsc --strict, and each error of
// testdata/tsc/bad.ts (a wrong parameter type, a parameter the route does
// not take, event data used wrongly, a kind that is not one) must be
// reported.
func TestTypedRoutesTypeCheck(t *testing.T) {
	srv := serveOffline(t)
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
		}
		return string(b)
	}
	files := tsctest.ReadFiles(t, "testdata/tsc/ok.ts", "testdata/tsc/bad.ts")
	files["routes.d.ts"] = get(ws.RoutesTypeScriptPath)
	files["chatscopes.d.ts"] = get(ws.TypeScriptPath)
	res := tsctest.Check(t, files, map[string]string{"@quarkiverse/chat-scopes-api": "routes.d.ts"})
	if errs := res.Errors("ok.ts"); len(errs) > 0 {
		t.Errorf("ok.ts does not compile:\n%s", res.Output)
	}
	res.ExpectErrors(t, "bad.ts", files["bad.ts"])
}

// TestBrowserDocShowsTheDeclarations checks that the TypeScript that
// docs/browser.md shows as generated for this example is what its server
// generates: every line of the doc's ts blocks is a line of routes.d.ts.
func TestBrowserDocShowsTheDeclarations(t *testing.T) {
	doc, err := os.ReadFile("../../docs/browser.md")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveOffline(t)
	resp, err := http.Get(srv.URL + ws.RoutesTypeScriptPath)
	if err != nil {
		t.Fatal(err)
	}
	dts, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]bool{}
	for _, l := range strings.Split(string(dts), "\n") {
		lines[strings.TrimSpace(l)] = true
	}
	blocks := regexp.MustCompile("(?s)```ts\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	if len(blocks) == 0 {
		t.Fatal("docs/browser.md has no ts block")
	}
	for _, b := range blocks {
		for _, l := range strings.Split(b[1], "\n") {
			if l = strings.TrimSpace(l); l != "" && !lines[l] {
				t.Errorf("docs/browser.md shows %q, which routes.d.ts does not have", l)
			}
		}
	}
}
