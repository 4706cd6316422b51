package a2aserver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/a2aserver"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// TestJSONRPCErrors: malformed JSON, requests that are not JSON-RPC,
// wrong ids, unknown methods and versions, bad params and unknown tasks
// are answered with the JSON-RPC error they are, in both versions.
func TestJSONRPCErrors(t *testing.T) {
	a := newApp(t, nil, nil)
	for _, tc := range []struct {
		name, version, body string
		code                int
		id                  string
	}{
		{"malformed", "", `{"jsonrpc": "2.0", "id": 1, "method": `, -32700, "null"},
		{"malformed 1.0", "1.0", `{nope`, -32700, "null"},
		{"batch", "", `[{"jsonrpc": "2.0", "id": 1, "method": "tasks/get"}]`, -32600, "null"},
		{"not an object", "", `"hello"`, -32600, "null"},
		{"no jsonrpc", "", `{"id": 1, "method": "tasks/get"}`, -32600, "1"},
		{"an object id", "", `{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tasks/get", "params": {"id": "x"}}`, -32600, "null"},
		{"an array id", "1.0", `{"jsonrpc": "2.0", "id": [1], "method": "GetTask", "params": {"id": "x"}}`, -32600, "null"},
		{"a bool id", "", `{"jsonrpc": "2.0", "id": true, "method": "tasks/get", "params": {"id": "x"}}`, -32600, "null"},
		{"no method", "", `{"jsonrpc": "2.0", "id": "a"}`, -32600, `"a"`},
		{"unknown method", "", `{"jsonrpc": "2.0", "id": 2, "method": "tasks/nothing"}`, -32601, "2"},
		{"a 1.0 method in 0.3", "", `{"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "x"}}`, -32601, "2"},
		{"a 0.3 method in 1.0", "1.0", `{"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": "x"}}`, -32601, "2"},
		{"unknown version", "2.0", `{"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": "x"}}`, -32009, "2"},
		{"no params", "", `{"jsonrpc": "2.0", "id": 3, "method": "message/send"}`, -32602, "3"},
		{"params not an object", "1.0", `{"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": [1]}`, -32602, "3"},
		{"no message id", "", `{"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": {"role": "user", "kind": "message", "parts": [{"kind": "text", "text": "x"}]}}}`, -32602, "3"},
		{"an agent message", "1.0", `{"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x"}]}}}`, -32602, "3"},
		{"no parts", "1.0", `{"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}}`, -32602, "3"},
		{"an empty part", "1.0", `{"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{}]}}}`, -32602, "3"},
		{"a file part", "1.0", `{"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "http://127.0.0.1/f"}]}}}`, -32602, "3"},
		{"unknown task", "", `{"jsonrpc": "2.0", "id": 4, "method": "tasks/get", "params": {"id": "nope"}}`, -32001, "4"},
		{"unknown task 1.0", "1.0", `{"jsonrpc": "2.0", "id": 4, "method": "GetTask", "params": {"id": "a.b"}}`, -32001, "4"},
		{"unknown task cancel", "1.0", `{"jsonrpc": "2.0", "id": 4, "method": "CancelTask", "params": {"id": "a.b"}}`, -32001, "4"},
		{"unknown task subscribe", "", `{"jsonrpc": "2.0", "id": 4, "method": "tasks/resubscribe", "params": {"id": "a.b"}}`, -32001, "4"},
		{"unknown context", "", `{"jsonrpc": "2.0", "id": 5, "method": "message/send", "params": {"message": {"messageId": "m", "role": "user", "kind": "message", "contextId": "nope", "parts": [{"kind": "text", "text": "x"}]}}}`, -32001, "5"},
		{"push set", "", `{"jsonrpc": "2.0", "id": 6, "method": "tasks/pushNotificationConfig/set", "params": {}}`, -32003, "6"},
		{"push list", "", `{"jsonrpc": "2.0", "id": 6, "method": "tasks/pushNotificationConfig/list", "params": {}}`, -32003, "6"},
		{"push 1.0", "1.0", `{"jsonrpc": "2.0", "id": 6, "method": "ListTaskPushNotificationConfigs", "params": {}}`, -32003, "6"},
		{"extended card", "1.0", `{"jsonrpc": "2.0", "id": 6, "method": "GetExtendedAgentCard", "params": {}}`, -32007, "6"},
		{"list page size", "1.0", `{"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": {"pageSize": 1000}}`, -32602, "7"},
		{"list status", "1.0", `{"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": {"status": "TASK_STATE_NOPE"}}`, -32602, "7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := a.rpcRaw(t, []byte(tc.body), tc.version, "")
			if r.code() != tc.code || string(r.ID) != tc.id {
				t.Fatalf("got %+v (id %s), want code %d id %s", r.Error, r.ID, tc.code, tc.id)
			}
		})
	}
	if n := a.handler.Contexts(); n != 0 {
		t.Fatalf("the refused messages started %d contexts", n)
	}
	// The server goes on serving.
	r := a.rpc(t, "", "", "message/send", userMessage03("still here", "", ""))
	if r.code() != 0 {
		t.Fatalf("a send after the errors: %+v", r.Error)
	}
}

// TestTooLarge: a 10 MB message is answered with a JSON-RPC error, and
// the next request is served.
func TestTooLarge(t *testing.T) {
	a := newApp(t, nil, nil)
	for _, v := range []string{"", "1.0"} {
		params := userMessage1(strings.Repeat("x", 10<<20), "", "")
		if v == "" {
			params = userMessage03(strings.Repeat("x", 10<<20), "", "")
		}
		r := a.rpc(t, v, "", "SendMessage", params)
		if r.code() != -32600 || !strings.Contains(r.Error.Message, "larger than") {
			t.Fatalf("version %q: %+v", v, r.Error)
		}
	}
	if r := a.rpc(t, "1.0", "", "SendMessage", userMessage1("small", "", "")); r.code() != 0 {
		t.Fatalf("after: %+v", r.Error)
	}
}

// TestAuthentication: a refused request is answered 401 with a JSON-RPC
// error; the card is served to anyone.
func TestAuthentication(t *testing.T) {
	a := newApp(t, nil, nil)
	res := a.post(t, []byte(`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"x"}}`), "X-User", "bad")
	defer res.Body.Close()
	var r rpcReply
	if err := json.NewDecoder(res.Body).Decode(&r); err != nil || res.StatusCode != http.StatusUnauthorized || r.code() != -31401 {
		t.Fatalf("status %d, %+v, %v", res.StatusCode, r, err)
	}
	req, _ := http.NewRequest(http.MethodGet, a.srv.URL+a2aserver.CardPath, nil)
	req.Header.Set("X-User", "bad")
	cres, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	cres.Body.Close()
	if cres.StatusCode != http.StatusOK {
		t.Fatalf("the card: %d", cres.StatusCode)
	}
}

// TestPrincipals: a task, a context and a stream of another principal are
// unknown to a principal, and to the anonymous one.
func TestPrincipals(t *testing.T) {
	a := newApp(t, nil, nil)
	r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1("mine", "", ""))
	var res struct{ Task task1 }
	if err := json.Unmarshal(r.Result, &res); err != nil || r.code() != 0 {
		t.Fatal(r.Error, err)
	}
	for _, user := range []string{"bob", ""} {
		for _, m := range []string{"GetTask", "CancelTask", "SubscribeToTask"} {
			if got := a.rpc(t, "1.0", user, m, map[string]any{"id": res.Task.ID}); got.code() != -32001 {
				t.Errorf("%s by %q: %+v", m, user, got.Error)
			}
		}
		if got := a.rpc(t, "1.0", user, "SendMessage", userMessage1("yours?", res.Task.ContextID, "")); got.code() != -32001 {
			t.Errorf("send on the context by %q: %+v", user, got.Error)
		}
		if got := a.rpc(t, "1.0", user, "ListTasks", map[string]any{"contextId": res.Task.ContextID}); got.code() != 0 || !strings.Contains(string(got.Result), `"tasks":[]`) {
			t.Errorf("list by %q: %s %+v", user, got.Result, got.Error)
		}
	}
	if got := a.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": res.Task.ID}); got.code() != 0 {
		t.Fatalf("get by its principal: %+v", got.Error)
	}
}

// TestInputRequired: a client-run tool call ends the task input-required,
// the call in a data part of its status; the next message on the task
// answers it and the task completes. A message on a finished task is
// refused.
func TestInputRequired(t *testing.T) {
	forStores(t, func(t *testing.T, store chatstore.ConversationStore) {
		a := newApp(t, &a2aserver.Options{Route: "locate"}, store)
		r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1("where am I", "", ""))
		var res struct{ Task task1 }
		if err := json.Unmarshal(r.Result, &res); err != nil || r.code() != 0 {
			t.Fatal(r.Error, err)
		}
		tk := res.Task
		if tk.Status.State != "TASK_STATE_INPUT_REQUIRED" || tk.text() != "let me see" {
			t.Fatalf("the first request: %+v", tk.Status)
		}
		call, _ := tk.Status.Message.Parts[1].Data[protocol.KeyClientTool].(map[string]any)
		if call["id"] != "ct-1" || call["tool"] != "Locate" {
			t.Fatalf("the status's call: %v", tk.Status.Message.Parts)
		}
		answer := map[string]any{"message": map[string]any{"messageId": "m2", "role": "ROLE_USER", "contextId": tk.ContextID, "taskId": tk.ID,
			"parts": []any{map[string]any{"data": map[string]any{"result": map[string]any{"city": "Lyon"}}}}}}
		r = a.rpc(t, "1.0", "ann", "SendMessage", answer)
		if err := json.Unmarshal(r.Result, &res); err != nil || r.code() != 0 {
			t.Fatal(r.Error, err)
		}
		if res.Task.ID != tk.ID || res.Task.Status.State != "TASK_STATE_COMPLETED" || res.Task.text() != `located ct-1: {"city":"Lyon"}` {
			t.Fatalf("the answer: %+v %q", res.Task.Status, res.Task.text())
		}
		if r = a.rpc(t, "1.0", "ann", "SendMessage", answer); r.code() != -32004 {
			t.Fatalf("a message on a finished task: %+v", r.Error)
		}
	})
}

// TestEvents: Thinking is a working status, an event value an artifact,
// a failure's reason (never its error text) the failed status.
func TestEvents(t *testing.T) {
	forStores(t, func(t *testing.T, store chatstore.ConversationStore) {
		a := newApp(t, &a2aserver.Options{Route: "show"}, store)
		evs := a.stream(t, "1.0", "", "SendStreamingMessage", userMessage1("bolts", "", ""))
		var kinds []string
		var thinking, artifact bool
		for _, raw := range evs {
			var ev map[string]json.RawMessage
			if err := json.Unmarshal(raw, &ev); err != nil {
				t.Fatal(err)
			}
			for k, v := range ev {
				kinds = append(kinds, k)
				s := string(v)
				thinking = thinking || strings.Contains(s, `"chatgen/event":"Thinking"`)
				artifact = artifact || (k == "artifactUpdate" && strings.Contains(s, `"name":"Part"`) && strings.Contains(s, `"data":{"name":"bolt","qty":2}`))
			}
		}
		if want := "task statusUpdate statusUpdate artifactUpdate statusUpdate statusUpdate"; strings.Join(kinds, " ") != want || !thinking || !artifact {
			t.Fatalf("events %v (thinking %v, artifact %v)\n%s", kinds, thinking, artifact, evs)
		}

		b := newApp(t, &a2aserver.Options{Route: "boom"}, store)
		r := b.rpc(t, "", "", "message/send", userMessage03("x", "", ""))
		if r.code() != 0 || !strings.Contains(string(r.Result), `"state":"failed"`) || strings.Contains(string(r.Result), "secret") {
			t.Fatalf("a failed task: %s %+v", r.Result, r.Error)
		}
	})
}

// TestSlowClient: a streaming client that never reads has its stream cut
// when the buffer fills; the task goes on to its end, and the handler's
// goroutines end (leaktest).
func TestSlowClient(t *testing.T) {
	logs := &syncBuffer{}
	a := newApp(t, &a2aserver.Options{Route: "flood", MaxBufferedEvents: 16, Logger: slog.New(slog.NewTextHandler(logs, nil))}, nil)
	conn, err := net.Dial("tcp", a.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"SendStreamingMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"go"}]}}}`
	fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nX-User: ann\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	// Read nothing; learn the task id from the list of ann's tasks.
	var id string
	for start := time.Now(); id == ""; time.Sleep(10 * time.Millisecond) {
		r := a.rpc(t, "1.0", "ann", "ListTasks", map[string]any{})
		var list struct{ Tasks []task1 }
		if err := json.Unmarshal(r.Result, &list); err != nil {
			t.Fatal(err, r.Error)
		}
		if len(list.Tasks) > 0 {
			id = list.Tasks[0].ID
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("no task")
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := a.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": id, "historyLength": 0})
		if r.code() != 0 {
			t.Fatal(r.Error)
		}
		if strings.Contains(string(r.Result), "TASK_STATE_COMPLETED") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not end: %s", r.Result)
		}
		time.Sleep(20 * time.Millisecond)
	}
	conn.Close()
	if !strings.Contains(logs.String(), "a stream was cut") {
		t.Fatalf("the stream was not cut; the log:\n%s", logs.String())
	}
}

// A syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestCancelRace: a cancel racing the completion of a task ends it either
// canceled, or completed with the cancel refused (-32002): what the
// cancel answers is what a get says, and what the store saved.
func TestCancelRace(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	a := newApp(t, nil, store)
	b := newReader(t, store)
	var canceled, completed, unsaved int
	for i := range 40 {
		params := userMessage1(fmt.Sprint("n", i), "", "")
		params["configuration"] = map[string]any{"returnImmediately": true}
		r := a.rpc(t, "1.0", "ann", "SendMessage", params)
		var res struct{ Task task1 }
		if err := json.Unmarshal(r.Result, &res); err != nil || r.code() != 0 {
			t.Fatal(r.Error, err)
		}
		c := a.rpc(t, "1.0", "ann", "CancelTask", map[string]any{"id": res.Task.ID})
		g := a.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": res.Task.ID})
		var got task1
		if err := json.Unmarshal(g.Result, &got); err != nil {
			t.Fatal(err)
		}
		switch c.code() {
		case 0:
			canceled++
			if got.Status.State != "TASK_STATE_CANCELED" {
				t.Fatalf("canceled, but get says %s", got.Status.State)
			}
		case -32002:
			completed++
			if got.Status.State != "TASK_STATE_COMPLETED" {
				t.Fatalf("not cancelable, but get says %s", got.Status.State)
			}
		default:
			t.Fatalf("cancel: %+v", c.Error)
		}
		// The saved history says the same; a task canceled before its
		// request ran was not saved (its context's next request saves it).
		g = b.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": res.Task.ID})
		switch {
		case g.code() == -32001 && got.Status.State == "TASK_STATE_CANCELED":
			unsaved++
		case !bytes.Contains(g.Result, []byte(got.Status.State)):
			t.Fatalf("the store says %s %+v, the handler %s", g.Result, g.Error, got.Status.State)
		}
	}
	t.Logf("%d canceled (%d before their request ran), %d completed first", canceled, unsaved, completed)
}

// newReader serves the test application on a second router over store,
// reading it: another node.
func newReader(t testing.TB, store *chat.InMemoryConversationStore) *app {
	return serve(t, &a2aserver.Options{Store: store}, store)
}

// TestDurableHistory: the task history of a context is saved with its
// conversation; another handler over the same store (a restart, another
// node) answers get and list from it, to its principal only, and a
// context keeps its last MaxTasks tasks.
func TestDurableHistory(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	a := newApp(t, &a2aserver.Options{MaxTasks: 3, MaxHistory: 40}, store)
	var ids []string
	ctxID := ""
	for i := range 5 {
		r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1(fmt.Sprint("m", i), ctxID, ""))
		var res struct{ Task task1 }
		if err := json.Unmarshal(r.Result, &res); err != nil || r.code() != 0 {
			t.Fatal(r.Error, err)
		}
		ctxID = res.Task.ContextID
		ids = append(ids, res.Task.ID)
	}
	b := newReader(t, store)
	for i, id := range ids {
		r := b.rpc(t, "", "ann", "tasks/get", map[string]any{"id": id})
		if i < 2 {
			if r.code() != -32001 {
				t.Errorf("task %d, beyond MaxTasks: %+v", i, r.Error)
			}
			continue
		}
		if r.code() != 0 || !strings.Contains(string(r.Result), fmt.Sprintf("m%d: count is %d", i, i+1)) {
			t.Errorf("task %d from the store: %s %+v", i, r.Result, r.Error)
		}
		if r := b.rpc(t, "", "bob", "tasks/get", map[string]any{"id": id}); r.code() != -32001 {
			t.Errorf("task %d by another principal: %+v", i, r.Error)
		}
	}
	r := b.rpc(t, "1.0", "ann", "ListTasks", map[string]any{"contextId": ctxID, "pageSize": 2})
	var list struct {
		Tasks         []task1
		NextPageToken string
		TotalSize     int
	}
	if err := json.Unmarshal(r.Result, &list); err != nil || len(list.Tasks) != 2 || list.TotalSize != 3 || list.Tasks[0].ID != ids[4] || list.NextPageToken == "" {
		t.Fatalf("list from the store: %s %+v", r.Result, r.Error)
	}
	r = b.rpc(t, "1.0", "ann", "ListTasks", map[string]any{"contextId": ctxID, "statusTimestampAfter": time.Now().Add(time.Hour).Format(time.RFC3339Nano)})
	if err := json.Unmarshal(r.Result, &list); err != nil || len(list.Tasks) != 0 {
		t.Fatalf("list of the tasks changed after an hour from now: %s %+v", r.Result, r.Error)
	}
	if r := b.rpc(t, "1.0", "ann", "SendMessage", userMessage1("here?", ctxID, "")); r.code() != -32001 {
		t.Fatalf("a send on a context held elsewhere: %+v", r.Error)
	}
}

// TestMaxContexts: a message that would start a context beyond
// MaxContexts is refused; the contexts held go on.
func TestMaxContexts(t *testing.T) {
	a := newApp(t, &a2aserver.Options{MaxContexts: 2}, nil)
	var ctxID string
	for i := range 2 {
		r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1(fmt.Sprint("c", i), "", ""))
		var res struct{ Task task1 }
		if err := json.Unmarshal(r.Result, &res); err != nil || r.code() != 0 {
			t.Fatal(r.Error, err)
		}
		ctxID = res.Task.ContextID
	}
	if r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1("third", "", "")); r.code() != -32603 {
		t.Fatalf("a third context: %+v", r.Error)
	}
	if r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1("more", ctxID, "")); r.code() != 0 {
		t.Fatalf("a held context: %+v", r.Error)
	}
}

// TestConfirmation: a tool call waiting for the user's confirmation ends
// the task input-required; a data part with "approve" answers it; a
// cancel of a paused task stops its turn and ends it canceled.
func TestConfirmation(t *testing.T) {
	forStores(t, func(t *testing.T, store chatstore.ConversationStore) {
		a := newApp(t, &a2aserver.Options{Route: "arm"}, store)
		send := func(params map[string]any) task1 {
			t.Helper()
			r := a.rpc(t, "1.0", "ann", "SendMessage", params)
			var res struct{ Task task1 }
			if err := json.Unmarshal(r.Result, &res); err != nil || r.code() != 0 {
				t.Fatal(r.Error, err)
			}
			return res.Task
		}
		tk := send(userMessage1("fire", "", ""))
		c, _ := tk.Status.Message.Parts[0].Data["confirm"].(map[string]any)
		if tk.Status.State != "TASK_STATE_INPUT_REQUIRED" || c["id"] != "cf-1" || c["tool"] != "Fire" {
			t.Fatalf("the pause: %+v", tk.Status)
		}
		answer := map[string]any{"message": map[string]any{"messageId": "a1", "role": "ROLE_USER", "taskId": tk.ID,
			"parts": []any{map[string]any{"data": map[string]any{"approve": false, "reason": "too risky"}}}}}
		if got := send(answer); got.ID != tk.ID || got.Status.State != "TASK_STATE_COMPLETED" || got.text() != "denied: too risky" {
			t.Fatalf("the answer: %+v %q", got.Status, got.text())
		}
		tk = send(userMessage1("fire again", tk.ContextID, ""))
		r := a.rpc(t, "1.0", "ann", "CancelTask", map[string]any{"id": tk.ID})
		var got task1
		if err := json.Unmarshal(r.Result, &got); err != nil || r.code() != 0 || got.Status.State != "TASK_STATE_CANCELED" {
			t.Fatalf("the cancel of a paused task: %s %+v", r.Result, r.Error)
		}
	})
}

// TestSavedBound: the saved task history stays under MaxSavedBytes: the
// oldest tasks go first; the latest is saved.
func TestSavedBound(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	a := newApp(t, nil, store)
	var ids []string
	ctxID := ""
	for i := range 4 {
		r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1(strings.Repeat("y", 60<<10)+fmt.Sprint(i), ctxID, ""))
		var res struct{ Task task1 }
		if err := json.Unmarshal(r.Result, &res); err != nil || r.code() != 0 {
			t.Fatal(r.Error, err)
		}
		ctxID = res.Task.ContextID
		ids = append(ids, res.Task.ID)
	}
	st, err := store.Load(t.Context(), ctxID)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Extra["a2a.tasks"]); n > a2aserver.MaxSavedBytes || n == 0 {
		t.Fatalf("the saved history is %d bytes", n)
	}
	b := newReader(t, store)
	if r := b.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": ids[3]}); r.code() != 0 {
		t.Fatalf("the latest task: %+v", r.Error)
	}
	if r := b.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": ids[0]}); r.code() != -32001 {
		t.Fatalf("the oldest task: %+v", r.Error)
	}
	// The process still holds them all.
	if r := a.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": ids[0], "historyLength": 0}); r.code() != 0 {
		t.Fatalf("the oldest task, held: %+v", r.Error)
	}
}

// TestResumeOnAnotherNode: with a TokenKey, a handler over the same store
// continues a context another one started (here, one that closed): the
// same conversation, its beans and its task history; another principal,
// or a handler without the key, cannot.
func TestResumeOnAnotherNode(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	key := []byte("0123456789abcdef0123456789abcdef")
	a := newApp(t, &a2aserver.Options{Store: store, TokenKey: key}, store)
	r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1("hi", "", ""))
	var first struct{ Task task1 }
	if err := json.Unmarshal(r.Result, &first); err != nil || r.code() != 0 {
		t.Fatal(r.Error, err)
	}
	if err := a.handler.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctxID := first.Task.ContextID
	if r := serve(t, &a2aserver.Options{Store: store}, store).rpc(t, "1.0", "ann", "SendMessage", userMessage1("no key", ctxID, "")); r.code() != -32001 {
		t.Fatalf("a handler without the key: %+v", r.Error)
	}
	b := serve(t, &a2aserver.Options{Store: store, TokenKey: key}, store)
	if r := b.rpc(t, "1.0", "bob", "SendMessage", userMessage1("mine?", ctxID, "")); r.code() != -32001 {
		t.Fatalf("another principal: %+v", r.Error)
	}
	r = b.rpc(t, "1.0", "ann", "SendMessage", userMessage1("again", ctxID, ""))
	var second struct{ Task task1 }
	if err := json.Unmarshal(r.Result, &second); err != nil || r.code() != 0 {
		t.Fatal(r.Error, err)
	}
	if second.Task.ContextID != ctxID || second.Task.text() != "again: count is 2" {
		t.Fatalf("the resumed context: %+v %q", second.Task.Status, second.Task.text())
	}
	r = b.rpc(t, "1.0", "ann", "ListTasks", map[string]any{"contextId": ctxID})
	var list struct{ Tasks []task1 }
	if err := json.Unmarshal(r.Result, &list); err != nil || len(list.Tasks) != 2 || list.Tasks[1].ID != first.Task.ID {
		t.Fatalf("the resumed context's tasks: %s %+v", r.Result, r.Error)
	}
	// A third handler takes it over in turn: the token rotated by b's
	// resume was saved.
	if err := b.handler.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := serve(t, &a2aserver.Options{Store: store, TokenKey: key}, store)
	r = c.rpc(t, "", "ann", "message/send", userMessage03("third", ctxID, ""))
	if r.code() != 0 || !strings.Contains(string(r.Result), "third: count is 3") {
		t.Fatalf("a second resume: %s %+v", r.Result, r.Error)
	}
}

// TestIdleContext: a context idle for ContextTimeout leaves the process;
// its history is still answered from the store, and with a TokenKey its
// next message resumes its conversation.
func TestIdleContext(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	a := newApp(t, &a2aserver.Options{Store: store, TokenKey: []byte("0123456789abcdef"), ContextTimeout: 50 * time.Millisecond}, store)
	r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1("hi", "", ""))
	var first struct{ Task task1 }
	if err := json.Unmarshal(r.Result, &first); err != nil || r.code() != 0 {
		t.Fatal(r.Error, err)
	}
	for start := time.Now(); a.handler.Contexts() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the idle context stayed")
		}
	}
	if r := a.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": first.Task.ID}); r.code() != 0 {
		t.Fatalf("get of an idle context's task: %+v", r.Error)
	}
	r = a.rpc(t, "1.0", "ann", "SendMessage", userMessage1("back", first.Task.ContextID, ""))
	var second struct{ Task task1 }
	if err := json.Unmarshal(r.Result, &second); err != nil || r.code() != 0 || second.Task.text() != "back: count is 2" {
		t.Fatalf("the idle context's next message: %s %+v", r.Result, r.Error)
	}
}

// forStores runs test on a router without a store and on one with an
// in-memory store, whose tasks are saved when they start.
func forStores(t *testing.T, test func(t *testing.T, store chatstore.ConversationStore)) {
	t.Run("memory", func(t *testing.T) { test(t, nil) })
	t.Run("durable", func(t *testing.T) { test(t, chat.NewInMemoryConversationStore(nil)) })
}
