package jsontypes

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

// TestDeclarationsTypeCheck type-checks TypeScript against the
// declarations the server makes of these routes' awkward types:
// testdata/tsc/ok.ts compiles with tsc --strict, and each error of
// testdata/tsc/bad.ts is reported.
func TestDeclarationsTypeCheck(t *testing.T) {
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: slog.New(slog.DiscardHandler)}, Register(Deps{Clerk: clerkConfig()}))
	if err != nil {
		t.Fatal(err)
	}
	srv := ws.NewServer(r, nil)
	hs := httptest.NewServer(srv)
	defer srv.Close()
	defer hs.Close()
	get := func(path string) string {
		t.Helper()
		resp, err := http.Get(hs.URL + path)
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
