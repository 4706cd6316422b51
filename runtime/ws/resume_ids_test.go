package ws

import (
	"context"
	"strconv"
	"testing"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// TestFreshClientResumeIsNotAReplay: a conversation whose client lost its
// connection after one message is resumed by a new client, whose first
// message, the same text, must run. Request ids of two clients never match, so the new
// client's first request is not taken for the old client's last one (it
// used to be: both clients numbered their requests from 1, and the new
// one got the old answer, replayed).
func TestFreshClientResumeIsNotAReplay(t *testing.T) {
	leaktest.Check(t)
	ctx := context.Background()
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a, b := nodes.start(t, "a", nil), nodes.start(t, "b", nil)
	proxy := startProxy(t, a)
	c := dialTest(t, &testServer{url: proxy.url()})
	s, err := c.Builder().Connect(ctx, "tick")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Chat(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	id, token := s.ConversationID(), s.ResumeToken()
	proxy.cut()
	<-c.Done()
	waitNoConversations(t, a.router)

	for _, node := range []*testServer{b, a} { // on another node, then back on the first
		px := startProxy(t, node)
		c2 := dialTest(t, &testServer{url: px.url()})
		var rec recorder
		s2, err := rec.builder(c2).Resume(ctx, id, token)
		if err != nil {
			t.Fatal(err)
		}
		want := nodes.ticks.Load() + 1
		// The same message again (the user says it twice): a new request
		// all the same.
		if err := s2.Chat(ctx, "hello"); err != nil {
			t.Fatal(err)
		}
		if got := rec.take(); got != "thinking ticking | message tick "+strconv.FormatInt(want, 10)+": hello" {
			t.Fatalf("the first message of a fresh client after its resume: %q (the route ran %d times)", got, nodes.ticks.Load())
		}
		id, token = s2.ConversationID(), s2.ResumeToken()
		px.cut() // lost, not closed: the conversation stays
		<-c2.Done()
		waitNoConversations(t, node.router)
	}
	if n := nodes.ticks.Load(); n != 3 {
		t.Fatalf("the route ran %d times for three messages", n)
	}
}

// TestReSentIDWithOtherDataRuns: the first request after a resume with the
// requestId of the saved answer but other data is not the request that
// answer is for (a client that numbers its requests from 1 on every
// start, as this package's and the JavaScript client used to): it runs.
// The request re-sent as it was is still answered from the saved answer.
func TestReSentIDWithOtherDataRuns(t *testing.T) {
	leaktest.Check(t)
	nodes := &durableNodes{store: chat.NewInMemoryConversationStore(nil)}
	a := nodes.start(t, "a", nil)
	message := func(text string) map[string]any {
		return map[string]any{"userMessage": text}
	}
	c := dialRaw(t, a.url, nil)
	hello := c.connectDurable("c1", "tick")
	scope := hello.text()
	c.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c1", "scopeId": scope, "data": message("first"), "requestId": 2})
	if fs := c.readAnswer("c1"); len(fs) != 3 || fs[1].text() != "tick 1: first" {
		t.Fatalf("first: %+v", fs)
	}
	c.ws.CloseNow()
	waitNoConversations(t, a.router)

	// Another client, numbering from 1 too: its Connect was 1, its first
	// message is 2, with other data.
	c2 := dialRaw(t, a.url, nil)
	f := c2.resume("c2", hello.ConversationID, hello.ResumeToken)
	if f.Type != "Completed" {
		t.Fatalf("resume: %+v", f)
	}
	c2.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c2", "scopeId": scope, "data": message("again"), "requestId": 2})
	if fs := c2.readAnswer("c2"); len(fs) != 3 || fs[1].text() != "tick 2: again" || fs[2].Replayed {
		t.Fatalf("a new request with the saved answer's id: %+v", fs)
	}
	c2.ws.CloseNow()
	waitNoConversations(t, a.router)

	// The same request re-sent (same id, same data) is answered from the
	// saved answer, byte for byte the same data: replayed, not run.
	c3 := dialRaw(t, a.url, nil)
	if f := c3.resume("c3", hello.ConversationID, f.ResumeToken); f.Type != "Completed" {
		t.Fatalf("resume: %+v", f)
	}
	c3.send(map[string]any{"type": "ChatRouteMessage", "chatId": "c3", "scopeId": scope, "data": message("again"), "requestId": 2})
	if fs := c3.readAnswer("c3"); len(fs) != 3 || fs[1].text() != "tick 2: again" || !fs[2].Replayed {
		t.Fatalf("the re-sent request: %+v", fs)
	}
	if n := nodes.ticks.Load(); n != 2 {
		t.Fatalf("the route ran %d times for two requests", n)
	}
}
