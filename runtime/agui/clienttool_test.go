package agui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/agui"
)

// toolInput is a RunAgentInput of a front end answering a tool call: the
// history, the assistant's tool call, then the tool message.
func toolInput(thread, run, callID string, content any, extra map[string]any) string {
	tool := map[string]any{"id": run + "-t", "role": "tool", "toolCallId": callID, "content": content}
	for k, v := range extra {
		tool[k] = v
	}
	b, _ := json.Marshal(map[string]any{
		"threadId": thread, "runId": run, "state": map[string]any{}, "tools": []any{}, "context": []any{},
		"messages": []any{
			map[string]any{"id": "u1", "role": "user", "content": "x"},
			map[string]any{"id": "a1", "role": "assistant", "toolCalls": []any{map[string]any{
				"id": callID, "type": "function", "function": map[string]any{"name": "Locate", "arguments": "{}"}}}},
			tool,
		},
	})
	return string(b)
}

// texts returns the TEXT_MESSAGE_CONTENT deltas of evs.
func texts(evs []map[string]any) []string {
	var out []string
	for _, ev := range evs {
		if ev["type"] == "TEXT_MESSAGE_CONTENT" {
			out = append(out, ev["delta"].(string))
		}
	}
	return out
}

// TestClientToolRound: a route's paused client-run tool call goes out as
// an AG-UI front-end tool call and the run finishes; the next run's tool
// message answers it, its content parsed as JSON.
func TestClientToolRound(t *testing.T) {
	a := newApp(t, &agui.Options{Route: "locate"})
	evs := a.run(t, input("t1", "r1", "x"))
	checkNesting(t, evs)
	want := []string{"RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END",
		"TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"}
	if got := types(evs); !slices.Equal(got, want) {
		t.Fatalf("events:\n got %v\nwant %v", got, want)
	}
	if evs[4]["toolCallId"] != "ct-x" || evs[4]["toolCallName"] != "Locate" || evs[5]["toolCallId"] != "ct-x" ||
		evs[5]["delta"] != `{"precision":"city"}` || evs[6]["toolCallId"] != "ct-x" {
		t.Fatalf("tool call events: %v", evs[4:7])
	}

	evs = a.run(t, toolInput("t1", "r2", "ct-x", `{"city":"Lyon"}`, nil))
	checkNesting(t, evs)
	if got := texts(evs); !slices.Equal(got, []string{`located ct-x: {"city":"Lyon"}`}) || evs[len(evs)-1]["type"] != "RUN_FINISHED" {
		t.Fatalf("the answered run: %v", evs)
	}

	// The call is answered: a second answer names no pending call.
	evs = a.run(t, toolInput("t1", "r3", "ct-x", `1`, nil))
	if got := types(evs); !slices.Equal(got, []string{"RUN_STARTED", "RUN_ERROR"}) || evs[1]["code"] != "BadRequest" ||
		!strings.Contains(evs[1]["message"].(string), `"ct-x"`) {
		t.Fatalf("a second answer: %v", evs)
	}
}

// TestClientToolAnswers: content that is not JSON is the result as a
// string; a tool message's error is the call's error; a new user message
// closes the pending call.
func TestClientToolAnswers(t *testing.T) {
	a := newApp(t, &agui.Options{Route: "locate"})
	a.run(t, input("t1", "r1", "a"))
	evs := a.run(t, toolInput("t1", "r2", "ct-a", "Lyon, France", nil))
	if got := texts(evs); !slices.Equal(got, []string{`located ct-a: "Lyon, France"`}) {
		t.Fatalf("a string result: %v", evs)
	}
	a.run(t, input("t1", "r3", "b"))
	evs = a.run(t, toolInput("t1", "r4", "ct-b", "", map[string]any{"error": "the user refused"}))
	if got := texts(evs); !slices.Equal(got, []string{"failed ct-b: the user refused"}) {
		t.Fatalf("an error: %v", evs)
	}
	// A new message instead of an answer: the call is closed.
	a.run(t, input("t1", "r5", "c"))
	if got := texts(a.run(t, input("t1", "r6", "d"))); !slices.Equal(got, []string{"let me see"}) {
		t.Fatalf("a new message: %v", got)
	}
	evs = a.run(t, toolInput("t1", "r7", "ct-c", "1", nil))
	if got := types(evs); !slices.Equal(got, []string{"RUN_STARTED", "RUN_ERROR"}) {
		t.Fatalf("an answer to the closed call: %v", evs)
	}
	// The call pending now is still answerable.
	if got := texts(a.run(t, toolInput("t1", "r8", "ct-d", "2", nil))); !slices.Equal(got, []string{"located ct-d: 2"}) {
		t.Fatalf("the pending call: %v", got)
	}
}

// TestClientToolUnknownID: a tool message for an id the thread never
// sent is a RUN_ERROR BadRequest and the call stays pending; a malformed
// tool message is answered 400.
func TestClientToolUnknownID(t *testing.T) {
	a := newApp(t, &agui.Options{Route: "locate"})
	evs := a.run(t, toolInput("fresh", "r0", "nope", "1", nil))
	if got := types(evs); !slices.Equal(got, []string{"RUN_STARTED", "RUN_ERROR"}) || evs[1]["code"] != "BadRequest" {
		t.Fatalf("a fresh thread: %v", evs)
	}
	a.run(t, input("t1", "r1", "x"))
	evs = a.run(t, toolInput("t1", "r2", "ct-y", "1", nil))
	if got := types(evs); !slices.Equal(got, []string{"RUN_STARTED", "RUN_ERROR"}) || evs[1]["code"] != "BadRequest" ||
		!strings.Contains(evs[1]["message"].(string), `"ct-y"`) {
		t.Fatalf("a wrong id: %v", evs)
	}
	if got := texts(a.run(t, toolInput("t1", "r3", "ct-x", "true", nil))); !slices.Equal(got, []string{"located ct-x: true"}) {
		t.Fatalf("the pending call after a wrong id: %v", got)
	}
	for name, body := range map[string]string{
		"no toolCallId":      `{"threadId":"t1","runId":"r4","messages":[{"id":"m","role":"tool","content":"1"}]}`,
		"non-string content": `{"threadId":"t1","runId":"r4","messages":[{"id":"m","role":"tool","toolCallId":"ct-x","content":{"a":1}}]}`,
	} {
		res := a.post(t, t.Context(), body)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "tool message") {
			t.Errorf("%s: %d %s", name, res.StatusCode, b)
		}
	}
}
