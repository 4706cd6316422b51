package ws

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// holdSession connects a raw client to the "hold" route.
func holdSession(t *testing.T, c *rawConn, chatID string) string {
	t.Helper()
	return c.connect(chatID, "hold")
}

// sendRequest sends a ChatRouteMessage with requestId rid; extra fields
// are added to the frame.
func (c *rawConn) sendRequest(chatID, scopeID, rid, text string, extra map[string]any) {
	c.t.Helper()
	m := map[string]any{"type": "ChatRouteMessage", "chatId": chatID, "scopeId": scopeID, "requestId": rid, "data": map[string]any{"userMessage": text}}
	for k, v := range extra {
		m[k] = v
	}
	c.send(m)
}

func (c *rawConn) sendCancel(chatID, rid string) {
	c.t.Helper()
	c.send(map[string]any{"type": TypeCancel, "chatId": chatID, "requestId": rid})
}

func rid(f frame) string {
	var s string
	_ = json.Unmarshal(f.RequestID, &s)
	return s
}

// wantCancelled checks that f is the Failed Cancelled terminator of rid.
func wantCancelled(t *testing.T, f frame, chatID, id string) {
	t.Helper()
	if f.ChatID != chatID || f.Type != "Failed" || f.text() != "Cancelled" || rid(f) != id {
		t.Fatalf("got %v, want %s Failed Cancelled for %s", f, chatID, id)
	}
}

// A Cancel of the running request answers it Failed Cancelled, cancels
// the route's context as a stop (chat.Cancelled) and lets the next
// request run.
func TestCancelStopsTheRunningRequest(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := holdSession(t, c, "a")

	c.sendRequest("a", scope, "r1", "long", nil)
	if got := recv(t, ts.routes.entered); got != "long" {
		t.Fatalf("entered %q", got)
	}
	c.sendCancel("a", "r1")
	fs := c.until("a")
	if len(fs) != 2 || fs[0].Type != "Message" || rid(fs[0]) != "r1" {
		t.Fatalf("frames %v: want the Message sent before the stop, then the terminator", fs)
	}
	wantCancelled(t, last(fs), "a", "r1")
	if end := recv(t, ts.routes.held); !end.stopped || end.text != "long" {
		t.Fatalf("the route ended with %+v, want a stop", end)
	}
	// The next request runs; nothing more of r1 arrives.
	c.sendRequest("a", scope, "r2", "quick", nil)
	fs = c.until("a")
	if len(fs) != 2 || fs[0].text() != "quick answer" || rid(last(fs)) != "r2" || last(fs).Type != "Completed" {
		t.Fatalf("after the stop: %v", fs)
	}
}

// A Cancel of a queued request answers it Failed Cancelled at once; it
// never runs, and the running request goes on.
func TestCancelEndsAQueuedRequest(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := holdSession(t, c, "a")

	c.sendRequest("a", scope, "r1", "first", nil)
	recv(t, ts.routes.entered)
	c.sendRequest("a", scope, "r2", "second", nil)
	c.expectNext("a", "Message") // r1's, sent when r2's terminator is
	c.sendCancel("a", "r2")
	wantCancelled(t, c.read(), "a", "r2")
	c.sendCancel("a", "r1")
	wantCancelled(t, c.read(), "a", "r1")
	recv(t, ts.routes.held)
	c.sendRequest("a", scope, "r3", "quick", nil)
	fs := c.until("a")
	if rid(last(fs)) != "r3" || last(fs).Type != "Completed" || len(fs) != 2 {
		t.Fatalf("after the stops: %v (the queued request must not have run)", fs)
	}
	select {
	case got := <-ts.routes.entered:
		t.Fatalf("the cancelled queued request ran: %q", got)
	default:
	}
}

// A Cancel of an unknown or finished request, of another session's
// request, for an unknown chat, or from another connection changes
// nothing and is not answered; a Cancel without a valid requestId is
// dropped (a Failed without one would end the request a client waits
// for).
func TestCancelOfAnotherRequestChangesNothing(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scopeA := holdSession(t, c, "a")
	scopeB := holdSession(t, c, "b")

	c.sendRequest("b", scopeB, "done", "quick", nil)
	c.until("b")
	c.sendRequest("a", scopeA, "r1", "long", nil)
	recv(t, ts.routes.entered)
	c.expectNext("a", "Message")

	c.sendCancel("a", "done")    // finished (and another session's)
	c.sendCancel("a", "unknown") // never was
	c.sendCancel("b", "r1")      // a's request, named on b
	c.sendCancel("zz", "r1")     // no such chat
	c.sendRaw(`{"type":"Cancel","chatId":"a"}`)
	c.sendRaw(`{"type":"Cancel","chatId":"a","requestId":{"x":1}}`)
	c.sendRaw(`{"type":"Cancel","chatId":"a","requestId":null}`)
	other := dialRaw(t, ts.url, nil)
	holdSession(t, other, "a")
	other.sendCancel("a", "r1") // the same chatId and requestId on another connection

	// b still works, and a's request still runs: the next frames are b's
	// answer, then, on the Cancel, a's terminator.
	c.sendRequest("b", scopeB, "b2", "quick", nil)
	fs := c.until("b")
	if last(fs).Type != "Completed" || rid(last(fs)) != "b2" {
		t.Fatalf("b after the stray cancels: %v", fs)
	}
	c.sendCancel("a", "r1")
	wantCancelled(t, c.read(), "a", "r1")
	if end := recv(t, ts.routes.held); !end.stopped {
		t.Fatalf("ended %+v", end)
	}
}

// A Cancel racing its request's completion, and a flood of Cancels,
// leave exactly one terminator per request: the next frames are the
// next request's.
func TestCancelRacingCompletionGivesOneTerminator(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := holdSession(t, c, "a")
	cancelled := 0
	for i := range 200 {
		id := fmt.Sprintf("q%d", i)
		c.sendRequest("a", scope, id, "quick", nil)
		c.sendCancel("a", id)
		if i%10 == 0 {
			for range 50 { // a flood of the same Cancel
				c.sendCancel("a", id)
			}
		}
		fs := c.until("a")
		term := last(fs)
		if rid(term) != id {
			t.Fatalf("request %s: terminator %v", id, term)
		}
		switch {
		case term.Type == "Completed":
		case term.Type == "Failed" && term.text() == "Cancelled":
			cancelled++
		default:
			t.Fatalf("request %s: terminator %v", id, term)
		}
		for _, f := range fs {
			if rid(f) != id {
				t.Fatalf("request %s: a frame of another request: %v", id, f)
			}
		}
	}
	for range 2000 { // a flood of Cancels for nothing
		c.sendCancel("a", "nothing")
	}
	c.sendRequest("a", scope, "last", "quick", nil)
	fs := c.until("a")
	if rid(last(fs)) != "last" || last(fs).Type != "Completed" {
		t.Fatalf("after the races: %v", fs)
	}
	t.Logf("%d of 200 racing requests were cancelled, the others completed first", cancelled)
}

// Steer: a request with "interrupt": true stops the running request and
// those queued (each answered Failed Cancelled) and runs next; without
// it, it waits behind (the default).
func TestInterruptingRequestStopsTheRunningOne(t *testing.T) {
	leaktest.Check(t)
	ts := startServer(t, nil)
	c := dialRaw(t, ts.url, nil)
	scope := holdSession(t, c, "a")

	c.sendRequest("a", scope, "r1", "first", nil)
	recv(t, ts.routes.entered)
	c.sendRequest("a", scope, "r2", "queued", map[string]any{"interrupt": false})
	c.expectNext("a", "Message")
	select {
	case got := <-ts.routes.entered:
		t.Fatalf("a queued request ran beside the running one: %q", got)
	default:
	}
	c.sendRequest("a", scope, "r3", "quick", map[string]any{"interrupt": true})
	wantCancelled(t, c.read(), "a", "r1")
	wantCancelled(t, c.read(), "a", "r2")
	fs := c.until("a")
	if rid(last(fs)) != "r3" || last(fs).Type != "Completed" || fs[0].text() != "quick answer" {
		t.Fatalf("the interrupting request: %v", fs)
	}
	if end := recv(t, ts.routes.held); !end.stopped || end.text != "first" {
		t.Fatalf("the interrupted route ended with %+v", end)
	}
	// Nothing to interrupt: it just runs.
	c.sendRequest("a", scope, "r4", "quick", map[string]any{"interrupt": true})
	if fs := c.until("a"); last(fs).Type != "Completed" {
		t.Fatalf("an interrupting request on an idle session: %v", fs)
	}
	c.sendRaw(`{"type":"ChatRouteMessage","chatId":"a","scopeId":"` + scope + `","requestId":"r5","data":{"userMessage":"quick"},"interrupt":"yes"}`)
	if f := c.read(); f.Type != "Failed" || f.text() != "BadRequest" || rid(f) != "r5" {
		t.Fatalf("interrupt of the wrong type: %v", f)
	}
}

// A durable conversation saves the cancelled outcome: the request re-sent
// with its requestId after a reconnect gets Failed Cancelled replayed,
// and the route does not run again.
func TestDurableCancelledAnswerIsReplayed(t *testing.T) {
	leaktest.Check(t)
	store := chat.NewInMemoryConversationStore(nil)
	g := newGate()
	a := startGated(t, store, "a", g, nil)
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "waitgate")
	scope := hello.text()
	req := map[string]any{"type": "ChatRouteMessage", "chatId": "c1", "scopeId": scope, "data": map[string]any{"userMessage": "stop me"}, "requestId": "r7"}
	c.send(req)
	recv(t, g.started)
	c.sendCancel("c1", "r7")
	fs := c.readAnswer("c1")
	if term := fs[len(fs)-1]; term.Type != "Failed" || term.text() != "Cancelled" || term.Replayed {
		t.Fatalf("the stopped request: %+v", fs)
	}
	s := serverSession(t, a, "c1")
	c.ws.CloseNow()
	waitLost(t, s)
	waitNoConversations(t, a.router)

	c2 := dialRaw(t, a.url, nil)
	if f := c2.resume("c2", hello.ConversationID, hello.ResumeToken); f.Type != "Completed" {
		t.Fatalf("resume: %+v", f)
	}
	req["chatId"] = "c2"
	c2.send(req)
	fs = c2.readAnswer("c2")
	if term := fs[len(fs)-1]; term.Type != "Failed" || term.text() != "Cancelled" || !term.Replayed {
		t.Fatalf("the re-sent request's answer: %+v", fs)
	}
	if n := g.runs.Load(); n != 1 {
		t.Fatalf("the route ran %d times", n)
	}
}
