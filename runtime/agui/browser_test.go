//go:build unix

package agui_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/agui"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// browserPage is the test page: it loads the bundle of browser.mjs.
const browserPage = `<!doctype html><html><head><meta charset="utf-8"><title>AG-UI</title></head>
<body><script type="module" src="/bundle.js"></script></body></html>`

// TestBrowserRunAndFrontEndTool: @ag-ui/client (bundled with the pinned
// esbuild) in headless Chromium runs a run that ends on a front-end tool
// call, then answers it with the next run: every event passes the
// client's schemas and verifier in the browser, and the route gets the
// browser's result.
func TestBrowserRunAndFrontEndTool(t *testing.T) {
	leaktest.Check(t)
	dir := npmClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "bundle.mjs")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bundling the page script: %v\n%s", err, out)
	}
	bundle, err := os.ReadFile(filepath.Join(dir, "bundle.js"))
	if err != nil {
		t.Fatal(err)
	}
	b := browsertest.Start(t)
	sig := &signals{waiting: make(chan struct{}, 10), cancelled: make(chan bool, 10), opened: make(chan struct{}, 10), gate: make(chan struct{})}
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger()}, testPackage(sig))
	if err != nil {
		t.Fatal(err)
	}
	h, err := agui.New(r, &agui.Options{Route: "locate", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/agui", h)
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(browserPage))
	})
	mux.HandleFunc("/bundle.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write(bundle)
	})
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	out, err := b.Run(ctx, hs.URL+"/page.html")
	if err != nil {
		t.Fatalf("%v\n%s", err, b.ConsoleLog())
	}
	var res struct {
		OK            bool
		Error         string
		First, Second struct {
			Types []string
			Said  string
			Calls []struct {
				ID       string
				Function struct{ Name, Arguments string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !res.OK {
		t.Fatalf("the page: %s\n%s", res.Error, b.ConsoleLog())
	}
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
	if !slices.Equal(res.First.Types, want) || res.First.Said != "let me see" || len(res.First.Calls) != 1 ||
		res.First.Calls[0].ID != "ct-x" || res.First.Calls[0].Function.Name != "Locate" {
		t.Errorf("the first run: %+v", res.First)
	}
	want = []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"}
	if !slices.Equal(res.Second.Types, want) || res.Second.Said != `located ct-x: {"agent":true,"city":"Paris","precision":"city"}` {
		t.Errorf("the second run: %+v", res.Second)
	}
}
