//go:build unix

// Package browsertest drives Debian's headless Chromium over the DevTools
// protocol for end-to-end tests of pages served on loopback: open a page,
// evaluate JavaScript in it, read what it logged. It speaks the protocol
// with coder/websocket, so the tests need no other dependency.
//
// Start skips the calling test when chromium is not installed, and fails
// it when the CI environment variable is set (.ci/run installs chromium).
package browsertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A Browser is headless Chromium driven over the DevTools protocol, spoken
// here with coder/websocket (no other dependency).
type Browser struct {
	t  testing.TB
	ws *websocket.Conn

	mu      sync.Mutex
	nextID  int
	pending map[int]chan cdpReply
	console []string // console messages and exceptions, for failure reports
	done    chan struct{}
}

type cdpReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Start launches Chromium for the test, or skips the test when it is not
// installed (it fails instead when the CI environment variable is set:
// CI installs Debian's chromium). The browser is closed when the test ends.
func Start(t testing.TB) *Browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium is not installed (CI installs Debian's chromium package): %v", err)
		}
		t.Skip("chromium is not installed; apt-get install chromium to run the browser tests")
	}
	dir, err := os.MkdirTemp("", "chatscopes-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path,
		"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir="+dir, "--remote-debugging-port=0", "about:blank")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers die with it
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		<-exited
		// Helper processes may still be writing the profile for a moment.
		for range 50 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	urlc := make(chan string, 1)
	go func() {
		defer func() {
			_ = cmd.Wait()
			close(exited)
		}()
		sc := bufio.NewScanner(stderr)
		found := false
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "DevTools listening on "); ok && !found {
				found = true
				urlc <- strings.TrimSpace(rest)
			}
		}
	}()
	var wsURL string
	select {
	case wsURL = <-urlc:
	case <-time.After(20 * time.Second):
		t.Fatal("chromium did not start its DevTools server")
	}
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer dcancel()
	wc, _, err := websocket.Dial(dctx, wsURL, nil)
	if err != nil {
		t.Fatalf("connecting to chromium: %v", err)
	}
	wc.SetReadLimit(-1)
	b := &Browser{t: t, ws: wc, pending: map[int]chan cdpReply{}, done: make(chan struct{})}
	go b.readLoop()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, _ = b.call(ctx, "", "Browser.close", map[string]any{})
		select {
		case <-exited:
		case <-ctx.Done():
		}
		wc.CloseNow()
		<-b.done
	})
	return b
}

func (b *Browser) readLoop() {
	defer close(b.done)
	for {
		_, data, err := b.ws.Read(context.Background())
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.pending {
				close(ch)
				delete(b.pending, id)
			}
			b.mu.Unlock()
			return
		}
		var msg struct {
			ID     int             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			cdpReply
		}
		if json.Unmarshal(data, &msg) != nil {
			continue
		}
		if msg.ID != 0 {
			b.mu.Lock()
			ch := b.pending[msg.ID]
			delete(b.pending, msg.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- msg.cdpReply
			}
			continue
		}
		switch msg.Method {
		case "Runtime.consoleAPICalled", "Runtime.exceptionThrown":
			b.mu.Lock()
			if len(b.console) < 500 {
				b.console = append(b.console, msg.Method+" "+string(msg.Params))
			}
			b.mu.Unlock()
		}
	}
}

// call sends a DevTools command (to a page when session is set).
func (b *Browser) call(ctx context.Context, session, method string, params any) (json.RawMessage, error) {
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpReply, 1)
	b.pending[id] = ch
	b.mu.Unlock()
	msg := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	if err := b.ws.Write(ctx, websocket.MessageText, raw); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the browser went away", method)
		}
		if r.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		return r.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// A Page is one tab of the browser.
type Page struct {
	b       *Browser
	session string
}

// Open opens url in a new tab.
func (b *Browser) Open(ctx context.Context, url string) (*Page, error) {
	res, err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": url})
	if err != nil {
		return nil, err
	}
	var target struct{ TargetID string }
	if err := json.Unmarshal(res, &target); err != nil {
		return nil, err
	}
	res, err = b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true})
	if err != nil {
		return nil, err
	}
	var att struct{ SessionID string }
	if err := json.Unmarshal(res, &att); err != nil {
		return nil, err
	}
	if _, err := b.call(ctx, att.SessionID, "Runtime.enable", map[string]any{}); err != nil {
		return nil, err
	}
	return &Page{b: b, session: att.SessionID}, nil
}

// Eval evaluates a JavaScript expression in the page, awaiting it when it
// is a promise, and returns its value, which must be a string (return
// JSON.stringify(…) for anything else). An evaluation that starts before
// the page has navigated away from about:blank is retried in the page.
func (p *Page) Eval(ctx context.Context, expr string) (string, error) {
	for {
		res, err := p.b.call(ctx, p.session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
		if err != nil {
			if ctx.Err() == nil && (strings.Contains(err.Error(), "context") || strings.Contains(err.Error(), "navigated")) {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			return "", err
		}
		var ev struct {
			Result struct {
				Value any `json:"value"`
			} `json:"result"`
			ExceptionDetails json.RawMessage `json:"exceptionDetails"`
		}
		if err := json.Unmarshal(res, &ev); err != nil {
			return "", err
		}
		if ev.ExceptionDetails != nil {
			return "", fmt.Errorf("page exception: %s", ev.ExceptionDetails)
		}
		s, ok := ev.Result.Value.(string)
		if !ok {
			return "", errors.New("the expression's value is not a string")
		}
		return s, nil
	}
}

// Run opens url in a new tab and returns the JSON the page's
// window.testResult promise resolves with.
func (b *Browser) Run(ctx context.Context, url string) (string, error) {
	p, err := b.Open(ctx, url)
	if err != nil {
		return "", err
	}
	return p.Eval(ctx, `(async () => {
		for (let i = 0; i < 3000 && !(window.testResult && location.href !== "about:blank"); i++) {
			await new Promise(r => setTimeout(r, 10));
		}
		if (!window.testResult) return JSON.stringify({ok: false, error: "the page set no testResult"});
		return JSON.stringify(await window.testResult);
	})()`)
}

// ConsoleLog returns what the pages logged (console calls and
// exceptions), for failure reports.
func (b *Browser) ConsoleLog() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.console, "\n")
}

// Screenshot captures the page as a PNG.
func (p *Page) Screenshot(ctx context.Context) ([]byte, error) {
	if _, err := p.b.call(ctx, p.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1100, "height": 760, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		return nil, err
	}
	res, err := p.b.call(ctx, p.session, "Page.captureScreenshot", map[string]any{"format": "png"})
	if err != nil {
		return nil, err
	}
	var shot struct {
		Data []byte `json:"data"`
	}
	if err := json.Unmarshal(res, &shot); err != nil {
		return nil, err
	}
	return shot.Data, nil
}
