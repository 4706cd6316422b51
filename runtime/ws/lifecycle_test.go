package ws

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/coder/websocket"
)

// Adversarial checks of how requests end: the per-request deadline,
// Disconnect during a request, and Shutdown while a route ignores its
// context.

// A route that honours its context fails with RequestTimeout when the
// deadline passes (one terminator, not ServerError too); the session goes
// on.
func TestRequestTimeout(t *testing.T) {
	leaktest.Check(t)
	// Long enough for the requests that must succeed on a loaded machine.
	ts, _ := startStubborn(t, &ServerOptions{RequestTimeout: time.Second})
	c := dialRaw(t, ts.url, nil)
	s := c.connect("s", "stubborn")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": s, "requestId": 1, "data": map[string]any{"userMessage": "wait"}})
	f := c.expectNext("s", "Failed")
	if f.text() != "RequestTimeout" || string(f.RequestID) != "1" || f.ScopeID != s || !strings.Contains(f.Detail, "longer than 1s") {
		t.Fatalf("got %v", f)
	}
	// The conversation keeps working, and the next frames are the next
	// request's.
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": s, "requestId": 2, "data": map[string]any{"userMessage": "again"}})
	fs := c.until("s")
	if len(fs) != 2 || fs[0].text() != "quick again" || string(fs[0].RequestID) != "2" || fs[1].Type != "Completed" {
		t.Fatalf("got %v", fs)
	}
}

// Each request has its own deadline, counted from its start: a request
// started while the session's timer is armed for an earlier request's
// deadline is not cut off at that earlier deadline.
func TestRequestTimeoutIsPerRequest(t *testing.T) {
	leaktest.Check(t)
	const timeout = time.Second // long enough for "first" on a loaded machine
	ts, st := startStubborn(t, &ServerOptions{RequestTimeout: timeout})
	c := dialRaw(t, ts.url, nil)
	s := c.connect("s", "stubborn")
	if fs := c.chat("s", s, "first"); last(fs).Type != "Completed" {
		t.Fatalf("got %v", fs)
	}
	time.Sleep(timeout / 2) // the first request's deadline is now nearer than a new one's
	start := time.Now()
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": s, "requestId": 2, "data": map[string]any{"userMessage": "block"}})
	c.expectNext("s", "Thinking")
	recv(t, st.entered)
	f := c.expectNext("s", "Failed")
	if elapsed := time.Since(start); f.text() != "RequestTimeout" || elapsed < timeout {
		t.Fatalf("got %v after %v, want RequestTimeout after %v", f, elapsed, timeout)
	}
	st.release <- struct{}{}
	recv(t, st.ctxErr)
	recv(t, st.late)
}

// A route that ignores its context still gets its client an answer at the
// deadline: RequestTimeout is sent while the route is blocked, what the
// route sends afterwards is dropped (its send fails), and the session's
// next request runs once the route returns.
func TestRequestTimeoutOfARouteIgnoringItsContext(t *testing.T) {
	leaktest.Check(t)
	// Long enough for the route to start and say so on a loaded machine.
	ts, st := startStubborn(t, &ServerOptions{RequestTimeout: 2 * time.Second})
	c := dialRaw(t, ts.url, nil)
	s := c.connect("s", "stubborn")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": s, "requestId": 1, "data": map[string]any{"userMessage": "block"}})
	if f := c.expectNext("s", "Thinking"); f.text() != "started" {
		t.Fatalf("got %v", f)
	}
	recv(t, st.entered)
	// The route is blocked (not released yet) and the client has its answer.
	if f := c.expectNext("s", "Failed"); f.text() != "RequestTimeout" || string(f.RequestID) != "1" || f.ScopeID != s {
		t.Fatalf("got %v", f)
	}
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": s, "requestId": 2, "data": map[string]any{"userMessage": "next"}})
	st.release <- struct{}{}
	if err := recv(t, st.ctxErr); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the route's context: %v", err)
	}
	if err := recv(t, st.late); !errors.Is(err, errCutOff) {
		t.Fatalf("the late event was sent: %v", err)
	}
	// Nothing of request 1 comes after its terminator: the next frames are
	// request 2's.
	fs := c.until("s")
	if len(fs) != 2 || fs[0].text() != "quick next" || string(fs[0].RequestID) != "2" || fs[1].Type != "Completed" {
		t.Fatalf("got %v", fs)
	}
}

// Disconnect cancels the request running in that session, and the server
// sends nothing more for that chatId, even when the route goes on sending.
func TestDisconnectCancelsTheRunningRequest(t *testing.T) {
	leaktest.Check(t)
	ts, st := startStubborn(t, nil)
	c := dialRaw(t, ts.url, nil)
	s := c.connect("s", "stubborn")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": s, "data": map[string]any{"userMessage": "block"}})
	c.expectNext("s", "Thinking")
	recv(t, st.entered)
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": s, "data": map[string]any{"userMessage": "queued"}})
	c.send(map[string]any{"type": "Disconnect", "chatId": "s"})
	// Frames are handled in order: the reply to this Connect is sent
	// after the Disconnect was handled.
	c.connect("m1", "echo")
	st.release <- struct{}{}
	if err := recv(t, st.ctxErr); !errors.Is(err, context.Canceled) {
		t.Fatalf("the route's context: %v", err)
	}
	if err := recv(t, st.late); !errors.Is(err, errCutOff) {
		t.Fatalf("the late event was sent: %v", err)
	}
	// The stubborn route has returned; the next frame is still the reply
	// to the next Connect: nothing for "s" (no late event, no terminator,
	// no reply to the queued request).
	c.connect("m2", "echo")
	// A route that honours its context ends at once.
	g := c.connect("g", "gate")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "g", "scopeId": g, "data": map[string]any{"userMessage": "x"}})
	recv(t, ts.routes.entered)
	c.send(map[string]any{"type": "Disconnect", "chatId": "g"})
	m3 := c.connect("m3", "echo")
	deadline := time.Now().Add(5 * time.Second)
	for ts.router.Stats().Conversations != 3 { // m1, m2, m3
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", ts.router.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if f := c.chat("m3", m3, "hi"); f[0].text() != "hi" {
		t.Fatalf("got %v", f)
	}
}

// Shutdown returns when its context ends even though a route ignores its
// context, like http.Server.Shutdown. When the route finally returns,
// nothing it sends goes anywhere and its session is cleaned up.
func TestShutdownReturnsWhileARouteIgnoresItsContext(t *testing.T) {
	leaktest.Check(t)
	ts, st := startStubborn(t, nil)
	c := dialRaw(t, ts.url, nil)
	s := c.connect("s", "stubborn")
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "s", "scopeId": s, "data": map[string]any{"userMessage": "block"}})
	c.expectNext("s", "Thinking")
	recv(t, st.entered)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ts.Shutdown(ctx) }()
	if err := recv(t, done); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown: %v", err)
	}
	// The route is still blocked: its conversation lives on.
	if n := ts.router.Stats().Conversations; n != 1 {
		t.Fatalf("%d conversations", n)
	}
	// The client has lost the connection, and got nothing more.
	if f, err := c.readErr(5 * time.Second); err == nil {
		t.Fatalf("got %v after shutdown", f)
	}
	// New connections are refused.
	if _, resp, err := websocket.Dial(context.Background(), ts.url, nil); err == nil || resp == nil || resp.StatusCode != 503 {
		t.Fatalf("dial after shutdown: %v", err)
	}

	st.release <- struct{}{}
	if err := recv(t, st.ctxErr); !errors.Is(err, context.Canceled) {
		t.Fatalf("the route's context: %v", err)
	}
	if err := recv(t, st.late); err == nil {
		t.Fatal("the route's late event was sent")
	}
	waitNoConversations(t, ts.router)
	deadline := time.Now().Add(5 * time.Second)
	for ts.Connections() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("connection not released")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// Once everything is released, Shutdown completes.
	if err := ts.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
