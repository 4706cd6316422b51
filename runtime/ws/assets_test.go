package ws

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptForms checks that /_chat/javascript/chatscopes.js is the
// classic script for a classic <script> (no-cors) and the ES module for a
// module script (cors), with Vary so that caches keep them apart.
func TestScriptForms(t *testing.T) {
	ts := startServer(t, nil)
	fetch := func(mode, dest, etag string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.http.URL+ScriptPath, nil)
		if mode != "" {
			req.Header.Set("Sec-Fetch-Mode", mode)
			req.Header.Set("Sec-Fetch-Dest", dest)
		}
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	body := func(resp *http.Response) []byte {
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	classic := fetch("no-cors", "script", "")
	if b := body(classic); !bytes.Equal(b, scriptSource) {
		t.Errorf("a classic script got %.80q", b)
	}
	module := fetch("cors", "script", "")
	if b := body(module); !bytes.Equal(b, scriptModuleSource) {
		t.Errorf("a module script got %.80q", b)
	}
	for _, resp := range []*http.Response{classic, module} {
		if v := resp.Header.Get("Vary"); !strings.Contains(v, "Sec-Fetch-Mode") {
			t.Errorf("Vary: %q", v)
		}
	}
	if classic.Header.Get("ETag") == module.Header.Get("ETag") {
		t.Error("both forms have the same ETag")
	}
	if b := body(fetch("", "", "")); !bytes.Equal(b, scriptSource) {
		t.Error("a client without Sec-Fetch headers did not get the classic script")
	}
	if b := body(fetch("cors", "empty", "")); !bytes.Equal(b, scriptSource) {
		t.Error("a fetch() did not get the classic script")
	}
	// A cache revalidating one form never gets a 304 for the other.
	if resp := fetch("cors", "script", classic.Header.Get("ETag")); resp.StatusCode != http.StatusOK {
		t.Errorf("revalidating the classic script's ETag as a module: %d", resp.StatusCode)
	}
	if resp := fetch("cors", "script", module.Header.Get("ETag")); resp.StatusCode != http.StatusNotModified {
		t.Errorf("revalidating the module's ETag: %d", resp.StatusCode)
	}
}

// TestGeneratedAssets checks what the server serves from its router's
// manifest and the import map: types, and JavaScript that parses.
func TestGeneratedAssets(t *testing.T) {
	ts := startServer(t, nil)
	node, _ := exec.LookPath("node")
	for _, tc := range []struct {
		path, contentType, has string
		module                 bool
	}{
		{RoutesModulePath, jsType, `import { ChatScopesClient as __cs_Client } from "./chatscopes.mjs";`, true},
		{QuarkusAPIPath, jsType, `export * from "../../_chat/javascript/routes.mjs";`, true},
		{RoutesTypeScriptPath, tsType, `readonly gate: ChatRoute<"gate", Record<string, unknown>>;`, false},
		{ImportMapPath, jsType, `"@quarkiverse/chat-scopes-api": new URL("../_chat/javascript/routes.mjs", base).href`, false},
	} {
		resp, err := http.Get(ts.http.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.contentType || resp.Header.Get("ETag") == "" {
			t.Errorf("%s: %d %v", tc.path, resp.StatusCode, resp.Header)
		}
		if !strings.Contains(string(b), tc.has) {
			t.Errorf("%s lacks %s", tc.path, tc.has)
		}
		if node == "" || tc.path == RoutesTypeScriptPath {
			continue
		}
		f := filepath.Join(t.TempDir(), "asset.js")
		if tc.module {
			f += ".mjs"
		}
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(node, "--check", f).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", tc.path, err, out)
		}
	}
}
