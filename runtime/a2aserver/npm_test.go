package a2aserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/npmtest"
	"github.com/chatscopes/chatgen/runtime/a2aserver"
)

// npmClient returns a directory holding the pinned npm clients (see
// internal/npmtest): @a2a-js/sdk 1.3.0 as a2a-v1 and 0.3.14 as a2a-v03.
func npmClient(t *testing.T) string {
	t.Helper()
	return npmtest.Client{Name: "a2aserver-npm", What: "the A2A clients @a2a-js/sdk 1.3.0 and 0.3.14", Src: filepath.Join("testdata", "npm"),
		Scripts: []string{"v1.mjs", "v03.mjs"}}.Dir(t)
}

// nodeJSON runs script against the count, stream and wait apps and
// decodes its output into out.
func nodeJSON(t *testing.T, script string, out any) {
	t.Helper()
	dir := npmClient(t)
	count := newApp(t, nil, nil)
	stream := newApp(t, &a2aserver.Options{Route: "stream"}, nil)
	wait := newApp(t, &a2aserver.Options{Route: "wait"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, count.srv.URL+"/", stream.srv.URL+"/", wait.srv.URL+"/")
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node %s: %v\n%s\n%s", script, err, b, stderr)
	}
	t.Logf("%s: %s", script, b)
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(b))), out); err != nil {
		t.Fatalf("node %s printed %s: %v", script, b, err)
	}
	select {
	case <-wait.sig.waiting:
		if !<-wait.sig.cancelled {
			t.Error("the slow task's request was not cancelled with chat.ErrCancelled")
		}
	default: // cancelled before it started
	}
}

type npmError struct {
	Name string
	Code int
}

// streamText is the text the "stream" route streams.
func streamText() string {
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, "c%d ", i)
	}
	return b.String()
}

// TestNPMClientV1: @a2a-js/sdk 1.3.0, speaking A2A 1.0, reads the card,
// sends twice on one context, gets and lists the tasks, assembles a
// stream in order to its final status, cancels a slow task, and gets the
// JSON-RPC errors of an unknown task, an unknown method, a resubscribe to
// a finished task and malformed JSON.
func TestNPMClientV1(t *testing.T) {
	var out struct {
		Card struct {
			Name       string
			Interfaces []string
			Skills     []string
			Streaming  bool
		}
		Send []struct {
			State, Text, ContextID string
			SameContext            bool
		}
		Get struct {
			State   string
			History int
			User    string
		}
		List   []string
		Stream struct {
			First, Chunks string
			Count         int
		}
		FinalState string
		FinalText  string
		Cancel     string
		Errors     struct {
			UnknownTask, ResubscribeFinished npmError
			UnknownMethod, Push, Malformed   int
		}
	}
	nodeJSON(t, "v1.mjs", &out)
	if out.Card.Name != "chatgen" || !reflect.DeepEqual(out.Card.Interfaces, []string{"1.0", "0.3"}) || !out.Card.Streaming || len(out.Card.Skills) != 10 {
		t.Errorf("card: %+v", out.Card)
	}
	if len(out.Send) != 2 || out.Send[0].State != "TASK_STATE_COMPLETED" || out.Send[0].Text != "hi: count is 1" ||
		out.Send[1].Text != "again: count is 2" || !out.Send[1].SameContext {
		t.Errorf("send: %+v", out.Send)
	}
	if out.Get.State != "TASK_STATE_COMPLETED" || out.Get.History != 2 || out.Get.User != "hi" {
		t.Errorf("get: %+v", out.Get)
	}
	if !reflect.DeepEqual(out.List, []string{"second", "first"}) {
		t.Errorf("list: %v", out.List)
	}
	if out.Stream.First != "task" || out.Stream.Chunks != streamText() || out.FinalState != "TASK_STATE_COMPLETED" || out.FinalText != streamText() {
		t.Errorf("stream: %+v, final %s %q", out.Stream, out.FinalState, out.FinalText)
	}
	if out.Cancel != "TASK_STATE_CANCELED" {
		t.Errorf("cancel: %s", out.Cancel)
	}
	e := out.Errors
	if e.UnknownTask.Code != -32001 || e.UnknownMethod != -32601 || e.Push != -32003 || e.ResubscribeFinished.Code != -32004 || e.Malformed != -32700 {
		t.Errorf("errors: %+v", e)
	}
}

// TestNPMClientV03: @a2a-js/sdk 0.3.14, speaking A2A 0.3, does the same
// flows with the 0.3 methods.
func TestNPMClientV03(t *testing.T) {
	var out struct {
		Send []struct {
			Kind, State, Text, ContextID string
			SameContext                  bool
		}
		Get struct {
			State   string
			History int
			User    string
		}
		Stream struct {
			First, Chunks string
			Count         int
		}
		FinalState string
		Final      bool
		FinalText  string
		Cancel     string
		Errors     struct {
			UnknownTask, CancelFinished, Push npmError
			UnknownMethod, Malformed          int
		}
	}
	nodeJSON(t, "v03.mjs", &out)
	if len(out.Send) != 2 || out.Send[0].Kind != "task" || out.Send[0].State != "completed" || out.Send[0].Text != "hi: count is 1" ||
		out.Send[1].Text != "again: count is 2" || !out.Send[1].SameContext {
		t.Errorf("send: %+v", out.Send)
	}
	if out.Get.State != "completed" || out.Get.History != 2 || out.Get.User != "hi" {
		t.Errorf("get: %+v", out.Get)
	}
	if out.Stream.First != "task" || out.Stream.Chunks != streamText() || out.FinalState != "completed" || !out.Final || out.FinalText != streamText() {
		t.Errorf("stream: %+v, final %s %v %q", out.Stream, out.FinalState, out.Final, out.FinalText)
	}
	if out.Cancel != "canceled" {
		t.Errorf("cancel: %s", out.Cancel)
	}
	e := out.Errors
	if e.UnknownTask.Name != "TaskNotFoundJSONRPCError" || e.CancelFinished.Name != "TaskNotCancelableJSONRPCError" ||
		e.Push.Name != "PushNotificationNotSupportedError" || e.UnknownMethod != -32601 || e.Malformed != -32700 {
		t.Errorf("errors: %+v", e)
	}
}
