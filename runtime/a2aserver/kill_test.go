//go:build unix

package a2aserver_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/a2aserver"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

// TestNodeProcess is the node process TestKillNode runs (this test
// binary, run again): it serves the "node" route over A2A, its
// conversations in Redis, and prints a line for every request the route
// runs. Run on its own, it does nothing.
func TestNodeProcess(t *testing.T) {
	addr, prefix := os.Getenv("A2A_NODE_ADDR"), os.Getenv("A2A_NODE_PREFIX")
	if addr == "" {
		t.Skip("the node process of TestKillNode")
	}
	store, err := redisstore.New(redis.NewClient(&redis.Options{Addr: redistest.Addr}), &redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	sig := &signals{runs: make(chan string, 100)}
	r, err := chat.NewRouter(&chat.RouterOptions{Logger: quietLogger(), Store: store, LeaseTTL: killLease}, testPackage(sig))
	if err != nil {
		t.Fatal(err)
	}
	h, err := a2aserver.New(r, &a2aserver.Options{Route: "node", Store: store, TokenKey: killKey, Authenticator: authenticate, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for text := range sig.runs {
			fmt.Println("ran", text)
		}
	}()
	fmt.Println("serving")
	t.Fatal(http.Serve(ln, h)) // until killed
}

// The lease and token key of the nodes of TestKillNode.
var killKey = []byte("kill-test-key-16")

const killLease = time.Second

// TestKillNode: a node is killed with SIGKILL in the middle of a task.
// Another node over the same Redis answers the context's finished task
// from the saved history and the interrupted one, saved when it started,
// as failed (once the dead node's lease has ended: until then it may
// still run there), and runs it nowhere: the task ran once, on the dead
// node. A resubscribe answers its final state. Once the dead node's lease
// has ended, the other node (sharing the token key) goes on with the
// context: the same conversation, the interrupted task failed in its
// history; the same message sent again is a new task.
func TestKillNode(t *testing.T) {
	prefix := redistest.Prefix(t, redistest.Client(t), "a2aserver-test")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestNodeProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "A2A_NODE_ADDR="+addr, "A2A_NODE_PREFIX="+prefix)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 100)
	var ranSlow atomic.Int32 // the runs of the slow task, on the dead node
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ran slow" {
				ranSlow.Add(1)
			}
			lines <- sc.Text()
		}
		close(lines)
	}()
	await := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the node ended before %q", want)
				}
				if l == want {
					return
				}
			case <-timeout:
				t.Fatalf("the node did not print %q", want)
			}
		}
	}
	await("serving")
	call := func(method string, params any) rpcReply {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader(string(body)))
		req.Header.Set("A2A-Version", "1.0")
		req.Header.Set("X-User", "ann")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var r rpcReply
		if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	var first, slow struct{ Task task1 }
	if r := call("SendMessage", userMessage1("one", "", "")); r.code() != 0 || json.Unmarshal(r.Result, &first) != nil {
		t.Fatalf("the first task: %+v", r.Error)
	}
	await("ran one")
	params := userMessage1("slow", first.Task.ContextID, "")
	params["configuration"] = map[string]any{"returnImmediately": true}
	if r := call("SendMessage", params); r.code() != 0 || json.Unmarshal(r.Result, &slow) != nil {
		t.Fatalf("the slow task: %+v", r.Error)
	}
	await("ran slow")
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	store, err := redisstore.New(redistest.Client(t), &redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	leaktest.Check(t)
	b := serveRouter(t, &a2aserver.Options{Route: "node", Store: store, TokenKey: killKey}, &chat.RouterOptions{Store: store, LeaseTTL: killLease})
	runs := make(chan string, 10)
	b.sig.runs = runs
	r := b.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": first.Task.ID})
	var got task1
	if err := json.Unmarshal(r.Result, &got); r.code() != 0 || err != nil || got.Status.State != "TASK_STATE_COMPLETED" || got.text() != "quick: one" {
		t.Fatalf("the finished task on the other node: %s %+v", r.Result, r.Error)
	}
	// The interrupted task: working while the dead node's lease lasts,
	// then failed, saying why.
	var interrupted task1
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		r := b.rpc(t, "1.0", "ann", "GetTask", map[string]any{"id": slow.Task.ID})
		if err := json.Unmarshal(r.Result, &interrupted); r.code() != 0 || err != nil {
			t.Fatalf("the interrupted task on the other node: %s %+v", r.Result, r.Error)
		}
		if interrupted.Status.State != "TASK_STATE_WORKING" || time.Since(start) > 10*killLease {
			break
		}
	}
	if interrupted.Status.State != "TASK_STATE_FAILED" || !strings.Contains(interrupted.text(), "the task was interrupted") ||
		interrupted.ContextID != first.Task.ContextID {
		t.Fatalf("the interrupted task on the other node: %+v %q", interrupted.Status, interrupted.text())
	}
	if len(interrupted.History) == 0 || !strings.Contains(string(interrupted.History[0]), `"slow"`) {
		t.Fatalf("the interrupted task's history: %+v", interrupted.History)
	}
	if r := b.rpc(t, "", "ann", "tasks/get", map[string]any{"id": slow.Task.ID}); r.code() != 0 || !strings.Contains(string(r.Result), `"state":"failed"`) {
		t.Fatalf("tasks/get of the interrupted task: %s %+v", r.Result, r.Error)
	}
	if r := b.rpc(t, "1.0", "ann", "SubscribeToTask", map[string]any{"id": slow.Task.ID}); r.code() != -32004 || !strings.Contains(r.Error.Message, "failed") {
		t.Fatalf("a resubscribe to the interrupted task: %s %+v", r.Result, r.Error)
	}
	r = b.rpc(t, "1.0", "ann", "ListTasks", map[string]any{"contextId": first.Task.ContextID})
	var list struct{ Tasks []task1 }
	if err := json.Unmarshal(r.Result, &list); err != nil || len(list.Tasks) != 2 || list.Tasks[0].ID != slow.Task.ID ||
		list.Tasks[0].Status.State != "TASK_STATE_FAILED" || list.Tasks[1].ID != first.Task.ID {
		t.Fatalf("the context's tasks on the other node: %s %+v", r.Result, r.Error)
	}
	select {
	case text := <-runs:
		t.Fatalf("the other node ran %q", text)
	case <-time.After(300 * time.Millisecond):
	}
	// The dead node's lease ends: the other node resumes the context.
	var more task1
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		r := b.rpc(t, "1.0", "ann", "SendMessage", userMessage1("more", first.Task.ContextID, ""))
		if r.code() == -32603 && time.Since(start) < 10*killLease {
			continue // busy: the lease has not ended yet
		}
		var res struct{ Task task1 }
		if err := json.Unmarshal(r.Result, &res); r.code() != 0 || err != nil {
			t.Fatalf("a send on the dead node's context: %+v", r.Error)
		}
		more = res.Task
		break
	}
	if more.Status.State != "TASK_STATE_COMPLETED" || more.text() != "quick: more" || more.ContextID != first.Task.ContextID {
		t.Fatalf("the resumed context: %+v %q", more.Status, more.text())
	}
	if text := <-runs; text != "more" {
		t.Fatalf("the other node ran %q", text)
	}
	select {
	case text := <-runs:
		t.Fatalf("the other node also ran %q", text)
	default:
	}
	// The interrupted task stays failed, and is not answered: the same
	// message sent again is a new task, which runs once.
	if r := b.rpc(t, "1.0", "ann", "SendMessage", userMessage1("go on", first.Task.ContextID, slow.Task.ID)); r.code() != -32004 {
		t.Fatalf("a message on the interrupted task: %s %+v", r.Result, r.Error)
	}
	params = userMessage1("slow", first.Task.ContextID, "")
	params["configuration"] = map[string]any{"returnImmediately": true}
	var again struct{ Task task1 }
	if r := b.rpc(t, "1.0", "ann", "SendMessage", params); r.code() != 0 || json.Unmarshal(r.Result, &again) != nil || again.Task.ID == slow.Task.ID {
		t.Fatalf("the message sent again: %s %+v", r.Result, r.Error)
	}
	if text := <-runs; text != "slow" {
		t.Fatalf("the other node ran %q", text)
	}
	if r := b.rpc(t, "1.0", "ann", "CancelTask", map[string]any{"id": again.Task.ID}); r.code() != 0 {
		t.Fatalf("canceling the new task: %s %+v", r.Result, r.Error)
	}
	r = b.rpc(t, "1.0", "ann", "ListTasks", map[string]any{"contextId": first.Task.ContextID})
	if err := json.Unmarshal(r.Result, &list); err != nil || len(list.Tasks) != 4 || list.Tasks[0].ID != again.Task.ID ||
		list.Tasks[1].ID != more.ID || list.Tasks[2].ID != slow.Task.ID || list.Tasks[2].Status.State != "TASK_STATE_FAILED" || list.Tasks[3].ID != first.Task.ID {
		t.Fatalf("the context's tasks after the resume: %s %+v", r.Result, r.Error)
	}
	// The interrupted task ran once in all: on the dead node.
	if n := ranSlow.Load(); n != 1 {
		t.Fatalf("the dead node ran the interrupted task %d times", n)
	}
	select {
	case text := <-runs:
		t.Fatalf("the other node also ran %q", text)
	default:
	}
}
