package e2e

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chatscopes/chatgen/internal/tsctest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// typedServer serves the routes of this package with ws.
func typedServer(t *testing.T) (*httptest.Server, *chat.Router) {
	t.Helper()
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.DiscardHandler)}, Register())
	if err != nil {
		t.Fatal(err)
	}
	srv := ws.NewServer(r, nil)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		_ = srv.Close()
	})
	return hs, r
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// TestTypedRoutesTypeCheck type-checks TypeScript against the declarations
// the server generates from this package's routes: testdata/tsc/ok.ts must
// compile with tsc --strict, and each error of testdata/tsc/bad.ts (a
// wrong parameter type, an unknown key, a misspelt handler, a wrong enum
// value, a handler using its data wrongly) must be reported.
func TestTypedRoutesTypeCheck(t *testing.T) {
	hs, _ := typedServer(t)
	files := tsctest.ReadFiles(t, "testdata/tsc/ok.ts", "testdata/tsc/bad.ts")
	files["routes.d.ts"] = get(t, hs.URL+ws.RoutesTypeScriptPath)
	files["chatscopes.d.ts"] = get(t, hs.URL+ws.TypeScriptPath)
	res := tsctest.Check(t, files, map[string]string{
		"@quarkiverse/chat-scopes-api": "routes.d.ts",
		"@quarkiverse/chat-scopes":     "chatscopes.d.ts",
	})
	if errs := res.Errors("ok.ts"); len(errs) > 0 {
		t.Errorf("ok.ts does not compile:\n%s", res.Output)
	}
	res.ExpectErrors(t, "bad.ts", files["bad.ts"])
}
