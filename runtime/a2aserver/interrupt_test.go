package a2aserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/a2aserver"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
)

// TestInterruptedTask: a task is saved when it starts. While its node
// runs it, another node over the same store answers it working (and does
// not claim to cancel it); over a copy of the store taken mid-task (what
// a restart finds after the node died), it is failed, saying it was
// interrupted, in get, tasks/get, ListTasks and a resubscribe, and it is
// not run again: a message on it is refused, and the node that resumes
// the context keeps it failed in the context's history. Once the task
// ends on its node, the record is gone from the store and the other node
// answers its final state.
func TestInterruptedTask(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	key := []byte("0123456789abcdef")
	opts := &a2aserver.Options{Route: "wait", Store: store, TokenKey: key}
	a := newApp(t, opts, store)
	params := userMessage1("hold", "", "")
	params["configuration"] = map[string]any{"returnImmediately": true}
	var started struct{ Task task1 }
	if r := a.rpc(t, "1.0", "ann", "SendMessage", params); r.code() != 0 || json.Unmarshal(r.Result, &started) != nil {
		t.Fatalf("the task: %s %+v", r.Result, r.Error)
	}
	<-a.sig.waiting
	id, ctxID := started.Task.ID, started.Task.ContextID

	// Another node, the task running on the first.
	b := serve(t, &a2aserver.Options{Route: "wait", Store: store, TokenKey: key}, store)
	var got task1
	if r := b.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": id}); r.code() != 0 || json.Unmarshal(r.Result, &got) != nil ||
		got.Status.State != "TASK_STATE_WORKING" || got.ContextID != ctxID || len(got.History) != 1 || !strings.Contains(string(got.History[0]), `"hold"`) {
		t.Fatalf("the running task on another node: %s %+v", r.Result, r.Error)
	}
	if r := b.rpc(t, "1.0", "ann", "CancelTask", map[string]any{"id": id}); r.code() != -32004 {
		t.Fatalf("a cancel on another node: %s %+v", r.Result, r.Error)
	}
	if r := b.rpc(t, "1.0", "bob", "GetTask", map[string]any{"id": id}); r.code() != -32001 {
		t.Fatalf("another principal: %s %+v", r.Result, r.Error)
	}

	// The node dies now: a copy of the store is what a restart finds.
	crashed := crashCopy(t, store, ctxID)
	c := serve(t, &a2aserver.Options{Route: "wait", Store: crashed, TokenKey: key}, crashed)
	runs := make(chan string, 10)
	c.sig.runs = runs
	failed := func(what string, r rpcReply) {
		t.Helper()
		var got task1
		if err := json.Unmarshal(r.Result, &got); r.code() != 0 || err != nil || got.ID != id || got.Status.State != "TASK_STATE_FAILED" ||
			!strings.Contains(got.text(), "the task was interrupted") {
			t.Fatalf("%s: %s %+v", what, r.Result, r.Error)
		}
	}
	failed("get after the restart", c.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": id}))
	if r := c.rpc(t, "", "ann", "tasks/get", map[string]any{"id": id}); r.code() != 0 || !strings.Contains(string(r.Result), `"state":"failed"`) ||
		!strings.Contains(string(r.Result), "the task was interrupted") {
		t.Fatalf("tasks/get after the restart: %s %+v", r.Result, r.Error)
	}
	if r := c.rpc(t, "", "ann", "tasks/resubscribe", map[string]any{"id": id}); r.code() != -32004 || !strings.Contains(r.Error.Message, "failed") {
		t.Fatalf("a resubscribe after the restart: %s %+v", r.Result, r.Error)
	}
	var list struct{ Tasks []task1 }
	if r := c.rpc(t, "1.0", "ann", "ListTasks", map[string]any{"contextId": ctxID}); json.Unmarshal(r.Result, &list) != nil || len(list.Tasks) != 1 {
		t.Fatalf("the context's tasks after the restart: %s %+v", r.Result, r.Error)
	}
	// Not run again: a message on it is refused; one without taskId
	// resumes the context, as a new task.
	if r := c.rpc(t, "1.0", "ann", "SendMessage", userMessage1("go on", ctxID, id)); r.code() != -32004 {
		t.Fatalf("a message on the interrupted task: %s %+v", r.Result, r.Error)
	}
	// The resumed node dies in turn in its first task: both tasks are
	// interrupted.
	params = userMessage1("hold again", ctxID, "")
	params["configuration"] = map[string]any{"returnImmediately": true}
	var second struct{ Task task1 }
	if r := c.rpc(t, "1.0", "ann", "SendMessage", params); r.code() != 0 || json.Unmarshal(r.Result, &second) != nil {
		t.Fatalf("the task after the restart: %s %+v", r.Result, r.Error)
	}
	<-c.sig.waiting
	if text := <-runs; text != "hold again" {
		t.Fatalf("the restarted node ran %q", text)
	}
	again := crashCopy(t, crashed, ctxID)
	e := serve(t, &a2aserver.Options{Route: "wait", Store: again, TokenKey: key}, again)
	failed("get after the second crash", e.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": id}))
	if r := e.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": second.Task.ID}); r.code() != 0 || json.Unmarshal(r.Result, &got) != nil ||
		got.Status.State != "TASK_STATE_FAILED" {
		t.Fatalf("the second interrupted task: %s %+v", r.Result, r.Error)
	}
	if r := c.rpc(t, "1.0", "ann", "CancelTask", map[string]any{"id": second.Task.ID}); r.code() != 0 {
		t.Fatalf("the cancel: %s %+v", r.Result, r.Error)
	}
	<-c.sig.cancelled
	var next struct{ Task task1 }
	if r := c.rpc(t, "1.0", "ann", "SendMessage", userMessage1("go on", ctxID, "")); r.code() != 0 || json.Unmarshal(r.Result, &next) != nil ||
		next.Task.Status.State != "TASK_STATE_COMPLETED" || next.Task.ID == id {
		t.Fatalf("a new task after the restart: %s %+v", r.Result, r.Error)
	}
	if text := <-runs; text != "go on" {
		t.Fatalf("the restarted node ran %q", text)
	}
	select {
	case text := <-runs:
		t.Fatalf("the restarted node also ran %q", text)
	default:
	}
	failed("get after the resume", c.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": id}))
	if err := c.handler.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	st, err := crashed.Load(t.Context(), ctxID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.Extra["chat.checkpoint:a2a.task"]; ok {
		t.Fatal("the record stayed in the store after the next request")
	}
	d := serve(t, &a2aserver.Options{Store: crashed}, crashed)
	failed("get from the saved history", d.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": id}))
	if r := d.rpc(t, "1.0", "ann", "ListTasks", map[string]any{"contextId": ctxID}); json.Unmarshal(r.Result, &list) != nil || len(list.Tasks) != 3 ||
		list.Tasks[0].ID != next.Task.ID || list.Tasks[1].ID != second.Task.ID || list.Tasks[2].ID != id {
		t.Fatalf("the saved history: %s %+v", r.Result, r.Error)
	}

	// On the first store, the task ends on its node: its record goes.
	if r := a.rpc(t, "1.0", "ann", "CancelTask", map[string]any{"id": id}); r.code() != 0 {
		t.Fatalf("the cancel: %s %+v", r.Result, r.Error)
	}
	<-a.sig.cancelled
	if r := b.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": id}); r.code() != 0 || json.Unmarshal(r.Result, &got) != nil || got.Status.State != "TASK_STATE_CANCELED" {
		t.Fatalf("the ended task on another node: %s %+v", r.Result, r.Error)
	}
	if st, err := store.Load(t.Context(), ctxID); err != nil || st.Extra["chat.checkpoint:a2a.task"] != nil {
		t.Fatalf("the record after the task's end: %v", err)
	}
}

// crashCopy returns a store holding what store holds of the conversation
// id now, its lease free: what a node finds after the one serving it
// died.
func crashCopy(t *testing.T, store *chat.InMemoryConversationStore, id string) *chat.InMemoryConversationStore {
	t.Helper()
	st, err := store.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	crashed := chat.NewInMemoryConversationStore(nil)
	lease, err := crashed.Acquire(t.Context(), id, "dead-node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cp := *st
	cp.Version = 0
	if err := crashed.Save(t.Context(), &cp, lease, nil); err != nil {
		t.Fatal(err)
	}
	if err := crashed.Release(t.Context(), id, lease); err != nil {
		t.Fatal(err)
	}
	return crashed
}

// A failingStore fails the saves of checkpoints while fail is set.
type failingStore struct {
	*chat.InMemoryConversationStore
	fail atomic.Bool
}

func (s *failingStore) Save(ctx context.Context, st *chatstore.ConversationState, lease chatstore.Lease, b *chatstore.Batch) error {
	if _, ok := st.Extra["chat.checkpoint:a2a.task"]; ok && s.fail.Load() {
		return errors.New("the store is down")
	}
	return s.InMemoryConversationStore.Save(ctx, st, lease, b)
}

// TestRecordFails: when a task's record cannot be saved, its route does
// not run (a crash could not be told from it) and the task fails
// Unavailable, without the store's error text; the context goes on.
func TestRecordFails(t *testing.T) {
	store := &failingStore{InMemoryConversationStore: chat.NewInMemoryConversationStore(nil)}
	a := newApp(t, &a2aserver.Options{Store: store}, store)
	var first struct{ Task task1 }
	if r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1("hi", "", "")); r.code() != 0 || json.Unmarshal(r.Result, &first) != nil || first.Task.text() != "hi: count is 1" {
		t.Fatalf("the first task: %s %+v", r.Result, r.Error)
	}
	ctxID := first.Task.ContextID
	store.fail.Store(true)
	var res struct{ Task task1 }
	if r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1("lost", ctxID, "")); r.code() != 0 || json.Unmarshal(r.Result, &res) != nil ||
		res.Task.Status.State != "TASK_STATE_FAILED" || res.Task.text() != "the task failed: Unavailable" {
		t.Fatalf("a task whose record is not saved: %s %+v", r.Result, r.Error)
	}
	store.fail.Store(false)
	if r := a.rpc(t, "1.0", "ann", "SendMessage", userMessage1("back", ctxID, "")); r.code() != 0 || json.Unmarshal(r.Result, &res) != nil || res.Task.text() != "back: count is 2" {
		t.Fatalf("the next task: %s %+v", r.Result, r.Error)
	}
}
