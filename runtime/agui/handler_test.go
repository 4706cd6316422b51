package agui_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/agui"
	"github.com/chatscopes/chatgen/runtime/chat"
)

// TestRunEventsInOrder: every kind of event of a route, mapped to AG-UI
// events in order and nested as the verifier wants.
func TestRunEventsInOrder(t *testing.T) {
	a := newApp(t, &agui.Options{Route: "show", ShowScope: true})
	evs := a.run(t, input("t1", "r1", "bolts"))
	checkNesting(t, evs)
	want := []string{
		"RUN_STARTED", "STATE_SNAPSHOT",
		"REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"CUSTOM:Object",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
		"TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"RUN_FINISHED",
	}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	snap, _ := evs[1]["snapshot"].(map[string]any)
	if snap["conversationId"] == "" || snap["scopeId"] != snap["conversationId"] || len(snap) != 4 {
		t.Errorf("the snapshot: %v", evs[1])
	}
	evs = slices.Delete(evs, 1, 2)
	if evs[0]["threadId"] != "t1" || evs[0]["runId"] != "r1" || evs[len(evs)-1]["threadId"] != "t1" {
		t.Errorf("run ids: %v … %v", evs[0], evs[len(evs)-1])
	}
	var streamed strings.Builder
	for _, ev := range evs[8:11] {
		streamed.WriteString(ev["delta"].(string))
	}
	if streamed.String() != "one two three" || evs[3]["delta"] != "looking" {
		t.Errorf("deltas: %q, %v", streamed.String(), evs[3])
	}
	if v, _ := json.Marshal(evs[12]["value"]); string(v) != `{"name":"bolt","qty":2}` {
		t.Errorf("the Object's value: %s", v)
	}
	if evs[13]["toolCallName"] != "lookup" || evs[14]["delta"] != `{"q":"bolt"}` || evs[16]["toolCallId"] != "call-1" || evs[16]["content"] != "done" {
		t.Errorf("tool call events: %v", evs[13:17])
	}
	if evs[18]["delta"] != "done: bolts" {
		t.Errorf("the message: %v", evs[18])
	}
}

// TestSecondRunContinuesThread: a second run on a thread is the next
// request of its conversation; another thread is another conversation.
func TestSecondRunContinuesThread(t *testing.T) {
	a := newApp(t, &agui.Options{ShowScope: true})
	text := func(evs []map[string]any) string {
		checkNesting(t, evs)
		for _, ev := range evs {
			if ev["type"] == "TEXT_MESSAGE_CONTENT" {
				return ev["delta"].(string)
			}
		}
		t.Fatalf("no text in %v", types(evs))
		return ""
	}
	first := a.run(t, input("t1", "r1", "a"))
	if got := text(first); got != "a: count is 1" {
		t.Fatal(got)
	}
	second := a.run(t, input("t1", "r2", "b"))
	if got := text(second); got != "b: count is 2" {
		t.Fatalf("the second run did not continue the thread: %q", got)
	}
	if got := text(a.run(t, input("t2", "r3", "c"))); got != "c: count is 1" {
		t.Fatalf("another thread shares the conversation: %q", got)
	}
	id := func(evs []map[string]any) any {
		return evs[1]["snapshot"].(map[string]any)["conversationId"]
	}
	if id(first) != id(second) {
		t.Errorf("two conversations for one thread: %v, %v", id(first), id(second))
	}
	if a.handler.Threads() != 2 {
		t.Errorf("threads: %d", a.handler.Threads())
	}
}

// TestRunError: a failing route ends the run with RUN_ERROR naming the
// reason, never the internal error, open messages closed first.
func TestRunError(t *testing.T) {
	a := newApp(t, &agui.Options{Route: "boom"})
	evs := a.run(t, input("t", "r", "x"))
	checkNesting(t, evs)
	last := evs[len(evs)-1]
	if last["type"] != "RUN_ERROR" || last["code"] != "ServerError" || strings.Contains(last["message"].(string), "secret") {
		t.Fatalf("the end: %v", last)
	}
	if !slices.Contains(types(evs), "REASONING_END") {
		t.Errorf("the reasoning was not closed: %v", types(evs))
	}
}

// TestForbiddenRoute: the roles of the route hold.
func TestForbiddenRoute(t *testing.T) {
	a := newApp(t, &agui.Options{Route: "admin"})
	evs := a.run(t, input("t", "r", "x"))
	if last := evs[len(evs)-1]; last["type"] != "RUN_ERROR" || last["code"] != "Forbidden" {
		t.Fatalf("the end: %v", last)
	}
}

// TestAbortCancelsRun: a client closing its request stops the run with
// the cause chat.ErrCancelled.
func TestAbortCancelsRun(t *testing.T) {
	a := newApp(t, &agui.Options{Route: "wait"})
	ctx, cancel := context.WithCancel(context.Background())
	res := a.post(t, ctx, input("t", "r", "x"))
	<-a.sig.waiting
	cancel()
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if stopped := <-a.sig.cancelled; !stopped {
		t.Fatal("the route's context did not end as a stop (chat.Cancelled)")
	}
	// The thread takes its next run.
	evs := a.run(t, input("t", "r2", "go on"))
	if types(evs)[1] != "TEXT_MESSAGE_START" {
		t.Fatalf("the next run: %v", types(evs))
	}
}

// TestSlowClientBounded: a client that never reads has its run cancelled
// once the bounded buffer fills, and the handler does not hang.
func TestSlowClientBounded(t *testing.T) {
	a := newApp(t, &agui.Options{Route: "flood", MaxBufferedEvents: 16})
	res := a.post(t, context.Background(), input("t", "r", "x"))
	if slow := <-a.sig.cancelled; !slow {
		t.Fatal("the run was not cancelled with ErrSlowClient")
	}
	res.Body.Close()
}

// TestBadInput: malformed input is answered 400 with a clear error;
// other methods 405; too large bodies 413.
func TestBadInput(t *testing.T) {
	a := newApp(t, &agui.Options{MaxBodyBytes: 1024})
	for name, body := range map[string]string{
		"not JSON":         `{"threadId":`,
		"an array":         `[1,2]`,
		"no thread":        `{"runId":"r"}`,
		"no run":           `{"threadId":"t"}`,
		"wrong types":      `{"threadId":1,"runId":"r"}`,
		"two values":       `{"threadId":"t","runId":"r"} {}`,
		"forwardedProps":   `{"threadId":"t","runId":"r","forwardedProps":[1]}`,
		"content not text": `{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user","content":7}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			res := a.post(t, context.Background(), body)
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			var e struct{ Error string }
			if res.StatusCode != http.StatusBadRequest || json.Unmarshal(b, &e) != nil || e.Error == "" {
				t.Fatalf("%d %s", res.StatusCode, b)
			}
		})
	}
	res := a.post(t, context.Background(), `{"threadId":"t","runId":"r","state":"`+strings.Repeat("x", 2048)+`"}`)
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a large body: %d", res.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, a.srv.URL, nil)
	res, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", res.StatusCode)
	}
}

// A user is a principal.
type user string

func (u user) Name() string          { return string(u) }
func (u user) HasRole(r string) bool { return false }

// TestAuthAndThreadOwnership: the Authenticator's principal owns the
// threads it starts; an error answers 401.
func TestAuthAndThreadOwnership(t *testing.T) {
	a := newApp(t, &agui.Options{Authenticator: func(r *http.Request) (chat.Principal, error) {
		name := r.Header.Get("X-User")
		if name == "" {
			return nil, errors.New("no user")
		}
		return user(name), nil
	}})
	res := a.post(t, context.Background(), input("t", "r", "x"))
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no user: %d", res.StatusCode)
	}
	checkNesting(t, a.run(t, input("t", "r", "x"), "X-User", "ann"))
	res = a.post(t, context.Background(), input("t", "r2", "x"), "X-User", "bob")
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("another principal's thread: %d", res.StatusCode)
	}
}
