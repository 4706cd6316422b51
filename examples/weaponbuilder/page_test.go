//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/browsertest"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// TestPageInTheRealWorld drives the armorer's page in headless Chromium,
// by keyboard, at a desktop width and at a phone's, through what goes
// right and what goes wrong: streamed and markdown answers, a lore
// answer with its sources, nested
// conversations left by the breadcrumbs, the armory updated on finishing,
// the model failing, markup a model was tricked into writing, and the
// server going away and coming back on the same port. Screenshots go to
// $TEST_ARTIFACTS, else to the test's artifact directory (go test
// -artifacts keeps them); their paths are logged.
func TestPageInTheRealWorld(t *testing.T) {
	for _, vp := range []struct {
		width, height int
		mobile        bool
	}{{1280, 800, false}, {375, 667, true}} {
		t.Run(fmt.Sprintf("%dpx", vp.width), func(t *testing.T) {
			h := newPageHarness(t, vp.width, vp.height, vp.mobile)
			h.checkAccessibility()
			h.keyboardToInput()
			h.streamedMarkdownWelcome()
			h.answersLore()
			h.checkLayout()
			h.nestedAndBack()
			h.finishShowsArmory()
			h.failuresReadAsSentences()
			h.markupIsNeverRun()
			h.stopsAnAnswer()
			h.reconnects()
			h.confirmsDeletion()
			h.noErrorCodes()
			h.followsAfterResize()
		})
	}
}

// controlModel is the offline armorer's scripted model with the levers of
// the test: make it fail, hold a streamed answer after some chunks, and
// a message that makes it write markup a page must not run.
type controlModel struct {
	llms.Model
	down atomic.Bool

	mu     sync.Mutex
	gateAt int           // hold the next stream after this many chunks (0: no gate)
	held   chan struct{} // closed when the stream is held
	open   chan struct{} // closed to let it go on
}

// tricks is what the model writes when asked for "tricks": markup and
// links a page must show as text, never run.
const tricks = "Look: <img src=x onerror=\"window.pwned=1\"> <script>window.pwned=2</script> " +
	"[a trick](javascript:window.pwned=3) ![a gem](javascript:window.pwned=4) <javascript:window.pwned=5> and a **real** [link](https://forge.example/)."

func newControlModel() *controlModel {
	c := &controlModel{}
	c.Model = llmtest.NewModel(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if c.down.Load() {
			return llmtest.Reply{Err: errors.New("dial tcp 10.0.0.1:443: connect: connection refused")}, nil
		}
		if len(req.LastToolResults()) == 0 && strings.Contains(req.LastUserText(), "tricks") {
			return llmtest.Reply{Text: tricks}, nil
		}
		return playArmorer(req)
	}), nil)
	return c
}

// holdNextStream makes the next streamed model call stop after n chunks
// until release is called; held is closed once it stops.
func (c *controlModel) holdNextStream(n int) (held <-chan struct{}, release func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gateAt, c.held, c.open = n, make(chan struct{}), make(chan struct{})
	open := c.open
	var once sync.Once
	return c.held, func() { once.Do(func() { close(open) }) }
}

func (c *controlModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	var o llms.CallOptions
	for _, opt := range opts {
		opt(&o)
	}
	c.mu.Lock()
	n, held, open := c.gateAt, c.held, c.open
	if n > 0 && o.StreamingFunc != nil {
		c.gateAt = 0
	} else {
		n = 0
	}
	c.mu.Unlock()
	if n > 0 {
		inner, count := o.StreamingFunc, 0
		opts = append(opts, llms.WithStreamingFunc(func(ctx context.Context, chunk []byte) error {
			if err := inner(ctx, chunk); err != nil {
				return err
			}
			if count++; count == n {
				close(held)
				select {
				case <-open:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}))
	}
	return c.Model.GenerateContent(ctx, msgs, opts...)
}

// pageHarness is the armorer served on loopback (its listener can close
// and reopen on the same port) and its page in a browser tab.
type pageHarness struct {
	t      *testing.T
	ctx    context.Context
	b      *browsertest.Browser
	page   *browsertest.Page
	a      *app
	model  *controlModel
	width  int
	shots  string
	addr   string
	ln     net.Listener
	srv    *http.Server
	chat   *ws.Server
	served chan error
}

func newPageHarness(t *testing.T, width, height int, mobile bool) *pageHarness {
	return newPageHarnessWith(t, width, height, mobile, storage{})
}

// newPageHarnessWith is newPageHarness keeping conversations in store.
func newPageHarnessWith(t *testing.T, width, height int, mobile bool, store storage) *pageHarness {
	b := browsertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	model := newControlModel()
	a, err := newApp(context.Background(), model, slog.New(slog.DiscardHandler), store)
	if err != nil {
		t.Fatal(err)
	}
	h := &pageHarness{t: t, ctx: ctx, b: b, a: a, model: model, width: width, addr: "127.0.0.1:0", shots: artifactDir(t)}
	h.up()
	t.Cleanup(h.down)
	page, err := b.Open(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	if err := page.SetViewport(ctx, width, height, mobile); err != nil {
		t.Fatal(err)
	}
	h.page = page
	h.eval(`(location.href = ` + jsString("http://"+h.addr+"/") + `, "ok")`)
	h.waitFor(`window.armorerSession && !document.getElementById("input").disabled`, "the page to connect")
	return h
}

// artifactDir is where the screenshots go.
func artifactDir(t *testing.T) string {
	if dir := os.Getenv("TEST_ARTIFACTS"); dir != "" {
		dir = filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.ArtifactDir()
}

// up serves the armorer on h.addr: a free port the first time, the same
// port after down.
func (h *pageHarness) up() {
	h.t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the port was ours a moment ago; another process may hold it briefly
		if ln, err = net.Listen("tcp", h.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		h.t.Fatalf("listening on %s again: %v", h.addr, err)
	}
	handler, chatServer, err := h.a.handler(slog.New(slog.DiscardHandler))
	if err != nil {
		h.t.Fatal(err)
	}
	h.ln, h.chat, h.addr = ln, chatServer, ln.Addr().String()
	h.srv = &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	h.served = make(chan error, 1)
	go func(srv *http.Server, ln net.Listener, done chan<- error) { done <- srv.Serve(ln) }(h.srv, ln, h.served)
}

// down closes the listener and every connection: what the page sees when
// the server goes away.
func (h *pageHarness) down() {
	if h.srv == nil {
		return
	}
	_ = h.srv.Close()
	_ = h.chat.Close()
	<-h.served
	h.srv, h.chat = nil, nil
}

// wait waits for ch to be closed, or fails the test when the test's
// time is up.
func (h *pageHarness) wait(ch <-chan struct{}, what string) {
	h.t.Helper()
	select {
	case <-ch:
	case <-h.ctx.Done():
		h.t.Fatalf("waiting for %s: %v\nthe page shows:\n%s", what, h.ctx.Err(), h.text())
	}
}

func (h *pageHarness) eval(expr string) string {
	h.t.Helper()
	out, err := h.page.Eval(h.ctx, expr)
	if err != nil {
		h.t.Fatalf("%v\nconsole:\n%s", err, h.b.ConsoleLog())
	}
	return out
}

// evalJSON evaluates expr (whose value must be JSON-able) into v.
func (h *pageHarness) evalJSON(expr string, v any) {
	h.t.Helper()
	if err := json.Unmarshal([]byte(h.eval(`JSON.stringify(`+expr+`)`)), v); err != nil {
		h.t.Fatal(err)
	}
}

// waitFor waits, in the page, until cond (a JavaScript expression) holds.
func (h *pageHarness) waitFor(cond, what string) {
	h.t.Helper()
	_, err := h.page.Eval(h.ctx, `(async () => {
		for (let i = 0; i < 2000; i++) {
			try { if (`+cond+`) return "ok"; } catch (e) {}
			await new Promise(r => setTimeout(r, 10));
		}
		throw new Error("timed out");
	})()`)
	if err != nil {
		h.t.Fatalf("waiting for %s: %v\nthe page shows:\n%s\nconsole:\n%s", what, err, h.text(), h.b.ConsoleLog())
	}
}

// text is what the page shows: the log, the breadcrumbs, the banner, the
// card and the armory.
func (h *pageHarness) text() string {
	out, _ := h.page.Eval(h.ctx, readText)
	return out
}

const readText = `[
	"log:\n" + Array.from(document.querySelectorAll("#log .msg")).map(e => e.className.replace("msg ", "") + ": " + e.textContent.trim()).join("\n"),
	"crumbs: " + Array.from(document.querySelectorAll("#crumbs .crumb")).map(e => e.textContent).join(" > "),
	"banner: " + (document.getElementById("banner").hidden ? "(hidden)" : document.getElementById("banner").textContent),
	"card: " + document.getElementById("card").textContent,
	"armory: " + Array.from(document.querySelectorAll("#armory li")).map(e => e.textContent).join("; "),
].join("\n")`

// expect fails unless the page shows every string of want.
func (h *pageHarness) expect(want ...string) {
	h.t.Helper()
	text := h.text()
	for _, w := range want {
		if !strings.Contains(text, w) {
			h.t.Fatalf("the page does not show %q; it shows:\n%s", w, text)
		}
	}
}

func (h *pageHarness) crumbs() string {
	h.t.Helper()
	return h.eval(`Array.from(document.querySelectorAll("#crumbs .crumb")).map(e => e.textContent).join(" > ")`)
}

func (h *pageHarness) shot(name string) {
	h.t.Helper()
	png, err := h.page.Capture(h.ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	path := filepath.Join(h.shots, fmt.Sprintf("%dpx-%s.png", h.width, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		h.t.Fatal(err)
	}
	h.t.Logf("screenshot: %s", path)
}

// focused is the id (or tag and text) of the element with the focus.
func (h *pageHarness) focused() string {
	return h.eval(`(() => { const e = document.activeElement; return e ? (e.id || e.tagName.toLowerCase() + ":" + e.textContent.trim()) : ""; })()`)
}

func (h *pageHarness) press(key string) {
	h.t.Helper()
	if err := h.page.Press(h.ctx, key); err != nil {
		h.t.Fatal(err)
	}
}

// send types text into the message box, which must have the focus, and
// presses Enter; it waits until the request settled.
func (h *pageHarness) send(text string) {
	h.t.Helper()
	h.start(text)
	h.settle(text)
}

// start types text and presses Enter without waiting for the answer.
func (h *pageHarness) start(text string) {
	h.t.Helper()
	if f := h.focused(); f != "input" {
		h.t.Fatalf("sending %q: the focus is on %q, not the message box", text, f)
	}
	if err := h.page.Type(h.ctx, text); err != nil {
		h.t.Fatal(err)
	}
	h.press("Enter")
	h.waitFor(`Array.from(document.querySelectorAll("#log .msg.user")).some(e => e.textContent === `+jsString(text)+`)`, "the message "+text+" in the log")
}

func (h *pageHarness) settle(what string) {
	h.t.Helper()
	h.waitFor(`!document.getElementById("form").dataset.busy`, "the request "+what+" to settle")
	h.checkIdle()
}

// checkIdle: with no request pending, the thinking indicator is gone and
// no answer is still marked as streaming.
func (h *pageHarness) checkIdle() {
	h.t.Helper()
	var s struct {
		Thinking  bool `json:"thinking"`
		Streaming int  `json:"streaming"`
		Busy      int  `json:"busy"`
	}
	h.evalJSON(`{thinking: !document.getElementById("thinking").hidden,
		streaming: document.querySelectorAll("#log [aria-busy=true], #log .streaming").length,
		busy: window.armorer.state.busy}`, &s)
	if s.Thinking || s.Streaming != 0 || s.Busy != 0 {
		h.t.Fatalf("nothing is pending, yet the page shows the thinking indicator %v, %d answers streaming, busy %d\n%s", s.Thinking, s.Streaming, s.Busy, h.text())
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// checkAccessibility: the message box has a label, new messages are
// announced, the breadcrumbs are a labelled navigation.
func (h *pageHarness) checkAccessibility() {
	h.t.Helper()
	var a struct {
		Label, Role, Live, NavLabel, Current string
		Hidden                               bool
	}
	h.evalJSON(`{
		label: Array.from(document.getElementById("input").labels).map(l => l.textContent).join(""),
		role: document.getElementById("log").getAttribute("role"),
		live: document.getElementById("log").getAttribute("aria-live"),
		navLabel: document.getElementById("conversation").getAttribute("aria-label"),
		current: document.querySelector("#crumbs [aria-current]").textContent,
		hidden: document.getElementById("thinking").getAttribute("aria-hidden") === "true",
	}`, &a)
	if a.Label != "Message to the armorer" || a.Role != "log" || a.Live != "polite" || a.NavLabel == "" || a.Current != "Main menu" || !a.Hidden {
		h.t.Fatalf("accessibility: %+v", a)
	}
}

// keyboardToInput reaches the message box with Tab alone.
func (h *pageHarness) keyboardToInput() {
	h.t.Helper()
	h.eval(`(document.activeElement && document.activeElement.blur(), "ok")`)
	var path []string
	for range 10 {
		h.press("Tab")
		f := h.focused()
		path = append(path, f)
		if f == "input" {
			return
		}
	}
	h.t.Fatalf("Tab never reached the message box: %v", path)
}

// streamedMarkdownWelcome: the main menu's answer appears chunk by chunk
// while the request is pending, then rendered from markdown.
func (h *pageHarness) streamedMarkdownWelcome() {
	h.t.Helper()
	held, release := h.model.holdNextStream(4)
	defer release()
	h.start("hello")
	h.wait(held, "the model to hold its stream")
	h.waitFor(`(() => { const s = document.querySelector("#log .msg.armorer .bubble.streaming"); return s && s.textContent.startsWith("Welcome to my forge,"); })()`, "the first chunks of the answer")
	var s struct {
		Text     string `json:"text"`
		Busy     string `json:"busy"`
		Thinking bool   `json:"thinking"`
		Pending  bool   `json:"pending"`
	}
	h.evalJSON(`(() => { const s = document.querySelector("#log .bubble.streaming"); return {
		text: s.textContent, busy: s.getAttribute("aria-busy"),
		thinking: !document.getElementById("thinking").hidden,
		pending: !!document.getElementById("form").dataset.busy,
	}; })()`, &s)
	if strings.Contains(s.Text, "What shall it be?") || s.Busy != "true" || !s.Thinking || !s.Pending {
		h.t.Fatalf("while the answer streams: %+v", s)
	}
	h.shot("streaming")
	release()
	h.settle("hello")
	var r struct {
		Strong []string `json:"strong"`
		Items  int      `json:"items"`
		Raw    bool     `json:"raw"`
	}
	h.evalJSON(`(() => { const b = Array.from(document.querySelectorAll("#log .msg.armorer .bubble")).pop(); return {
		strong: Array.from(b.querySelectorAll("ul li strong")).map(e => e.textContent),
		items: b.querySelectorAll("ul li").length,
		raw: b.textContent.includes("**"),
	}; })()`, &r)
	if !slices.Equal(r.Strong, []string{"build", "armour", "list", "lore"}) || r.Items != 4 || r.Raw {
		h.t.Fatalf("the welcome is not rendered from markdown: %+v\n%s", r, h.text())
	}
	h.shot("welcome")
}

// answersLore: a lore question at the counter is answered from the lore
// corpus, and the passages the armorer searched show under the answer —
// title, file and score — as the index ranked them.
func (h *pageHarness) answersLore() {
	h.t.Helper()
	const question = "Who forged Dawnbreaker?"
	h.send(question)
	var r struct {
		Answer  string     `json:"answer"`
		Sources [][]string `json:"sources"`
	}
	h.evalJSON(`(() => { const m = Array.from(document.querySelectorAll("#log .msg.armorer")).pop(); return {
		answer: m.querySelector(".bubble.rendered").textContent,
		sources: Array.from(m.querySelectorAll(".sources li")).map(li => [li.querySelector("cite").textContent, li.querySelector(".source").textContent, li.querySelector(".score").textContent]),
	}; })()`, &r)
	var want [][]string
	for _, d := range loreSearch(h.t, question) {
		want = append(want, []string{d.Metadata["title"].(string), d.Metadata["source"].(string), fmt.Sprintf("%.2f", d.Score)})
	}
	if len(want) == 0 || !slices.EqualFunc(r.Sources, want, slices.Equal) {
		h.t.Fatalf("the sources under the answer: %q, want %q (the index's)\n%s", r.Sources, want, h.text())
	}
	if !strings.Contains(r.Answer, "It was forged for Queen Isolde") || !strings.HasSuffix(strings.TrimSpace(r.Answer), "(so says Dawnbreaker)") {
		h.t.Fatalf("the lore answer %q is not dawnbreaker.md's", r.Answer)
	}
	if c := h.crumbs(); c != "Main menu" {
		h.t.Fatalf("a lore question left the main menu: crumbs %q", c)
	}
	h.shot("lore")
}

// checkLayout: at a phone's width nothing overflows sideways, the sidebar
// is not squeezed beside the conversation, and the form fits.
func (h *pageHarness) checkLayout() {
	h.t.Helper()
	var l struct {
		Viewport, ScrollWidth, Log, Aside, AsideLeft, LogRight, Input, SendRight float64
	}
	h.evalJSON(`(() => {
		const r = (id) => document.getElementById(id).getBoundingClientRect();
		return { viewport: window.innerWidth, scrollWidth: document.documentElement.scrollWidth,
			log: r("log").width, aside: r("cards").width, asideLeft: r("cards").left, logRight: r("log").right,
			input: r("input").width, sendRight: r("send").right };
	})()`, &l)
	if l.ScrollWidth > l.Viewport {
		h.t.Fatalf("the page is %vpx wide in a %vpx viewport", l.ScrollWidth, l.Viewport)
	}
	if l.SendRight > l.Viewport || l.Input < 120 {
		h.t.Fatalf("the form does not fit: input %vpx wide, send button ends at %vpx of %vpx", l.Input, l.SendRight, l.Viewport)
	}
	if h.width < 600 {
		if l.Aside < 0.95*l.Viewport || l.Log < 0.95*l.Viewport {
			h.t.Fatalf("at %vpx the conversation is %vpx and the sidebar %vpx wide: they should take the whole width", l.Viewport, l.Log, l.Aside)
		}
	} else if l.AsideLeft < l.LogRight-1 || l.Aside > 0.35*l.Viewport || l.Log < 0.6*l.Viewport {
		h.t.Fatalf("at %vpx: conversation %vpx ending at %v, sidebar %vpx from %v", l.Viewport, l.Log, l.LogRight, l.Aside, l.AsideLeft)
	}
}

// checkCrumbs: every breadcrumb pill is on one line and inside the
// viewport.
func (h *pageHarness) checkCrumbs() {
	h.t.Helper()
	var bad []string
	h.evalJSON(`Array.from(document.querySelectorAll("#crumbs .crumb")).filter(e => {
		const r = e.getBoundingClientRect(), lh = parseFloat(getComputedStyle(e).lineHeight) || 20;
		return e.getClientRects().length !== 1 || r.height > 2 * lh || r.right > window.innerWidth || r.left < 0;
	}).map(e => e.textContent)`, &bad)
	if len(bad) > 0 {
		h.t.Fatalf("broken breadcrumbs at %dpx: %v", h.width, bad)
	}
}

// nestedAndBack goes two conversations deep, then back out of the
// enchantment by its breadcrumb, by keyboard, without enchanting.
func (h *pageHarness) nestedAndBack() {
	h.t.Helper()
	h.send("I want to build a sword")
	if c := h.crumbs(); c != "Main menu > Weapon builder" {
		h.t.Fatalf("crumbs %q", c)
	}
	h.send("call it Dawnbreaker")
	// The builder's answer is rendered from markdown.
	if got := h.eval(`Array.from(document.querySelectorAll("#log .msg.armorer .bubble.rendered strong")).map(e => e.textContent).join(",")`); !strings.Contains(got, "Dawnbreaker") {
		h.t.Fatalf("the builder's answer is not rendered: strong %q\n%s", got, h.text())
	}
	h.send("make it deal 40 damage")
	h.send("yes, enchant it")
	if c := h.crumbs(); c != "Main menu > Weapon builder > Enchantment" {
		h.t.Fatalf("crumbs %q", c)
	}
	h.checkCrumbs()
	h.shot("nested")
	// Shift+Tab from the message box: the sidebar (when it scrolls, on a
	// phone), the log, then the last breadcrumb that is a button.
	var path []string
	for f := ""; f != "button:Weapon builder"; {
		if len(path) == 4 {
			h.t.Fatalf("Shift+Tab from the message box went %v, never to the Weapon builder breadcrumb", path)
		}
		h.press("Shift+Tab")
		f = h.focused()
		path = append(path, f)
		if f != "button:Weapon builder" && f != "log" && f != "cards" {
			h.t.Fatalf("Shift+Tab from the message box went %v", path)
		}
	}
	h.press("Enter")
	h.waitFor(`document.querySelectorAll("#crumbs .crumb").length === 2 && document.activeElement === document.getElementById("input") && !document.getElementById("form").dataset.busy`, "the way back to the weapon builder")
	h.checkIdle()
	h.expect("armorer: The runes fade; no enchantment this time.")
	if c := h.crumbs(); c != "Main menu > Weapon builder" {
		h.t.Fatalf("after the breadcrumb, crumbs %q", c)
	}
	if card := h.eval(`document.getElementById("card").textContent`); strings.Contains(card, "Enchantment") {
		h.t.Fatalf("the weapon was enchanted after all: %s", card)
	}
}

// confirmsDeletion: deleting an item waits for the player: Approve and
// Deny buttons (Approve has the focus); Deny keeps it, a message instead
// passes over the question, Approve (by keyboard) deletes it.
func (h *pageHarness) confirmsDeletion() {
	h.t.Helper()
	ask := "confirm: The armorer wants to delete Dawnbreaker from your armory. Approve Deny"
	h.send("delete Dawnbreaker")
	h.expect(ask)
	if f := h.focused(); f != "button:Approve" {
		h.t.Fatalf("the confirmation does not have the focus: %q", f)
	}
	h.shot("confirm")
	h.eval(`(document.querySelector("#log .msg.confirm button.deny").click(), "ok")`)
	h.waitFor(`Array.from(document.querySelectorAll("#log .msg.user")).some(e => e.textContent === "Deny")`, "the denial in the log")
	h.settle("Deny")
	h.expect("armorer: As you wish, it stays in your armory (the player pressed Deny). What next?")
	if f := h.focused(); f != "input" {
		h.t.Fatalf("after denying, the focus is on %q", f)
	}

	h.send("delete Dawnbreaker")
	h.eval(`(document.getElementById("input").focus(), "ok")`) // the player clicks into the message box
	h.send("hello")
	if n := h.eval(`String(document.querySelectorAll("#log .msg.confirm button:not(:disabled)").length)`); n != "0" {
		h.t.Fatalf("%s buttons still live after passing over the question", n)
	}

	h.send("delete Dawnbreaker")
	h.press("Enter") // Approve has the focus
	h.waitFor(`Array.from(document.querySelectorAll("#log .msg.user")).some(e => e.textContent === "Approve")`, "the approval in the log")
	h.settle("Approve")
	h.expect("armorer: Done: Dawnbreaker is gone from the armory. What next?", "armory: Empty.")
	if len(h.a.armory.Weapons()) != 0 {
		h.t.Fatalf("the armory still holds %+v", h.a.armory.Weapons())
	}
	h.shot("deleted")
}

// finishShowsArmory: finishing the weapon puts it in the armory list
// without the player asking.
func (h *pageHarness) finishShowsArmory() {
	h.t.Helper()
	h.send("yes, enchant it")
	h.send("fire")
	h.send("power 7")
	h.send("bind")
	h.send("finish")
	if c := h.crumbs(); c != "Main menu" {
		h.t.Fatalf("after finish, crumbs %q", c)
	}
	h.expect("✔ Saved to your armory", "armorer: Dawnbreaker is in your armory. What next?")
	if got := h.eval(`Array.from(document.querySelectorAll("#armory li.new")).map(e => e.textContent).join("|")`); got != "Dawnbreaker, a sword (40 damage, fire 7)" {
		h.t.Fatalf("the armory list after finish: %q\n%s", got, h.text())
	}
	h.shot("finished")
}

// failuresReadAsSentences: the model failing in a streamed answer (the
// menu) and in a plain one (a builder) reads as a sentence, and every
// failure reason the page can meet has one.
func (h *pageHarness) failuresReadAsSentences() {
	h.t.Helper()
	h.model.down.Store(true)
	h.send("I want to build an axe")
	h.expect("error: The armorer's answer broke off before the end")
	h.model.down.Store(false)
	h.send("I want to build an axe")
	if c := h.crumbs(); c != "Main menu > Weapon builder" {
		h.t.Fatalf("crumbs %q", c)
	}
	h.model.down.Store(true)
	h.send("call it Grim")
	h.expect("error: The armorer could not reach the model; try again.")
	h.shot("failure")
	h.model.down.Store(false)
	h.send("call it Grim") // the conversation survived the failure
	h.expect("armorer: Grim, a worthy name.")
	h.send("cancel")
	if c := h.crumbs(); c != "Main menu" {
		h.t.Fatalf("after cancel, crumbs %q", c)
	}
	h.expect("I put the axe aside, unfinished.")
	if got := h.eval(`String(Array.from(document.querySelectorAll("#armory li")).length)`); got != "1" {
		h.t.Fatalf("the cancelled axe reached the armory:\n%s", h.text())
	}

	reasons := []string{
		chat.ErrRouteNotFound.Reason, chat.ErrSessionNotActive.Reason, chat.ErrBadRequest.Reason,
		chat.ErrForbidden.Reason, chat.ErrServerError.Reason, chat.ErrStreamingFailure.Reason,
		ws.ErrTooManySessions.Reason, ws.ErrTooManyRequests.Reason, ws.ErrShuttingDown.Reason,
		"ConnectionLost", "ConnectionClosed", "ConnectionFailed", "SessionClosed", // the JavaScript client's own
	}
	var known []string
	h.evalJSON(`window.armorer.failures`, &known)
	seen := map[string]bool{}
	for _, r := range reasons {
		if !slices.Contains(known, r) {
			h.t.Errorf("the page has no sentence for the failure %s", r)
			continue
		}
		s := h.eval(`window.armorer.failureText(` + jsString(r) + `)`)
		if strings.Contains(s, r) || !strings.HasSuffix(s, ".") || len(strings.Fields(s)) < 5 || seen[s] {
			h.t.Errorf("failure %s reads %q: want a sentence of its own, without the code", r, s)
		}
		seen[s] = true
	}
	if s := h.eval(`window.armorer.failureText("SomethingNew")`); !strings.Contains(s, "SomethingNew") || !strings.HasSuffix(s, ".") {
		h.t.Errorf("an unknown failure reads %q", s)
	}
}

// markupIsNeverRun: what the model writes as HTML or dangerous links is
// shown as text, in a streamed answer (menu) and a plain one (builder).
func (h *pageHarness) markupIsNeverRun() {
	h.t.Helper()
	check := func(where string) {
		h.t.Helper()
		var r struct {
			Pwned  bool     `json:"pwned"`
			Tags   int      `json:"tags"`
			Hrefs  []string `json:"hrefs"`
			Shown  bool     `json:"shown"`
			Strong string   `json:"strong"`
		}
		h.evalJSON(`(() => { const b = Array.from(document.querySelectorAll("#log .msg.armorer .bubble")).pop(); return {
			pwned: window.pwned !== undefined,
			tags: b.querySelectorAll("img, script, iframe, svg, [onerror], [onclick], [onload]").length,
			hrefs: Array.from(b.querySelectorAll("a")).map(a => a.getAttribute("href")),
			shown: b.textContent.includes("<img src=x onerror=") && b.textContent.includes("<script>"),
			strong: (b.querySelector("strong") || {}).textContent || "",
		}; })()`, &r)
		if r.Pwned || r.Tags != 0 || !slices.Equal(r.Hrefs, []string{"https://forge.example/"}) || !r.Shown || r.Strong != "real" {
			h.t.Fatalf("%s: the model's markup: %+v\n%s", where, r, h.text())
		}
	}
	h.send("show me your tricks")
	check("the menu's streamed answer")
	h.send("I want to build a bow")
	h.send("show me your tricks")
	check("the builder's answer")
	h.send("cancel")
}

// stopsAnAnswer: while an answer streams, a Stop button shows; pressing
// it stops the answer (the server cancels the model call, which the held
// stream sees), keeps what was streamed, marked as stopped rather than as
// an error, hides the button, and the next message is answered.
func (h *pageHarness) stopsAnAnswer() {
	h.t.Helper()
	if h.eval(`String(document.getElementById("stop").hidden)`) != "true" {
		h.t.Fatal("the Stop button shows with nothing pending")
	}
	held, release := h.model.holdNextStream(2)
	defer release()
	h.start("hello again")
	h.wait(held, "the model to hold its stream")
	h.waitFor(`!document.getElementById("stop").hidden`, "the Stop button")
	h.shot("stop")
	h.eval(`(document.getElementById("stop").click(), "")`)
	h.settle("the stopped answer")
	var s struct {
		Stopped string `json:"stopped"`
		Hidden  bool   `json:"hidden"`
	}
	h.evalJSON(`(() => { const b = document.querySelector("#log .bubble.stopped"); return {
		stopped: b ? b.textContent : "", hidden: document.getElementById("stop").hidden,
	}; })()`, &s)
	if s.Stopped == "" || !s.Hidden {
		h.t.Fatalf("after Stop: %+v\n%s", s, h.text())
	}
	h.expect("— stopped —")
	if f := h.focused(); f != "input" {
		h.t.Fatalf("after Stop the focus is on %q, not the message box", f)
	}
	h.send("list my armory")
	h.expect("armorer: Here is your armory.")
}

// reconnects: the server goes away with a request pending, and comes
// back on the same port; the page says so, stops sending, clears the
// thinking indicator, reconnects by itself, says it is back, and works.
func (h *pageHarness) reconnects() {
	h.t.Helper()
	held, release := h.model.holdNextStream(2)
	defer release()
	h.start("hello again")
	h.wait(held, "the model to hold its stream")
	h.waitFor(`!document.getElementById("thinking").hidden`, "the thinking indicator")
	h.down()
	h.waitFor(`document.getElementById("banner").dataset.kind === "lost"`, "the page to notice the lost connection")
	var s struct {
		Banner            string `json:"banner"`
		Input, Send, Crum bool
		Thinking          bool   `json:"thinking"`
		Busy              string `json:"busy"`
	}
	h.evalJSON(`{banner: document.getElementById("banner").textContent,
		input: document.getElementById("input").disabled, send: document.getElementById("send").disabled,
		crum: Array.from(document.querySelectorAll("#crumbs button")).every(b => b.disabled),
		thinking: !document.getElementById("thinking").hidden, busy: document.getElementById("form").dataset.busy || ""}`, &s)
	if !strings.Contains(s.Banner, "connection to the forge was lost") || !s.Input || !s.Send || !s.Crum || s.Thinking || s.Busy != "" {
		h.t.Fatalf("with the connection lost: %+v", s)
	}
	h.expect("error: The connection to the forge was lost before the armorer answered")
	h.checkIdle()
	h.shot("lost")
	h.up() // the same port
	h.waitFor(`document.getElementById("banner").dataset.kind === "back" && !document.getElementById("input").disabled`, "the page to reconnect by itself")
	h.expect("Back online. The earlier conversation could not be resumed", "system: Reconnected: a new conversation has started at the main menu.")
	if c := h.crumbs(); c != "Main menu" {
		h.t.Fatalf("after reconnecting, crumbs %q", c)
	}
	if f := h.focused(); f != "input" {
		h.t.Fatalf("after reconnecting the focus is on %q, not back in the message box", f)
	}
	h.shot("back")
	h.send("list my armory")
	h.expect("armorer: Here is your armory.", "Dawnbreaker, a sword (40 damage, fire 7)")
	if h.eval(`String(document.getElementById("banner").hidden)`) != "true" {
		h.t.Fatal("the banner stays after the next message")
	}
}

// noErrorCodes: no error line is a bare code.
// followsAfterResize: after the window is resized (to phone width and
// back), the log still follows the newest message.
func (h *pageHarness) followsAfterResize() {
	h.t.Helper()
	atEnd := `(() => { const l = document.getElementById("log"); return String(l.scrollHeight - l.scrollTop - l.clientHeight < 48); })()`
	for _, vp := range []struct {
		width, height int
		mobile        bool
	}{{375, 667, true}, {1280, 800, false}, {375, 667, true}} {
		if err := h.page.SetViewport(h.ctx, vp.width, vp.height, vp.mobile); err != nil {
			h.t.Fatal(err)
		}
		h.eval(`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r("ok"))))`)
		if got := h.eval(atEnd); got != "true" {
			h.t.Fatalf("resized to %dpx, the log no longer shows the newest message", vp.width)
		}
		h.eval(`(document.getElementById("input").focus(), "ok")`)
		h.send("list my armory")
		if got := h.eval(atEnd); got != "true" {
			h.t.Fatalf("at %dpx the log does not show the newest message:\n%s", vp.width, h.text())
		}
	}
}

func (h *pageHarness) noErrorCodes() {
	h.t.Helper()
	var errs []string
	h.evalJSON(`Array.from(document.querySelectorAll("#log .msg.error")).map(e => e.textContent)`, &errs)
	if len(errs) < 3 {
		h.t.Fatalf("expected the failures of the walkthrough in the log, got %q", errs)
	}
	for _, e := range errs {
		for _, code := range []string{"ServerError", "StreamingFailure", "ConnectionLost", "Failed"} {
			if strings.Contains(e, code) {
				h.t.Errorf("an error line shows the code %s: %q", code, e)
			}
		}
	}
}
