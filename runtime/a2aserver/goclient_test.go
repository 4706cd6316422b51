package a2aserver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/chatscopes/chatgen/runtime/a2aserver"
)

// userTransport adds the X-User header of the test Authenticator.
type userTransport struct{ user string }

func (u userTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-User", u.user)
	return http.DefaultTransport.RoundTrip(r)
}

// goClient returns a2a-go's client of a, built from the card, as user.
func goClient(t *testing.T, a *app, user string) (*a2aclient.Client, *a2a.AgentCard) {
	t.Helper()
	ctx := context.Background()
	hc := &http.Client{Transport: userTransport{user}}
	card, err := agentcard.NewResolver(hc).Resolve(ctx, a.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Destroy() })
	return c, card
}

func textOf(m *a2a.Message) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if tp, ok := p.(a2a.TextPart); ok {
			b.WriteString(tp.Text)
		}
	}
	return b.String()
}

func send03(t *testing.T, c *a2aclient.Client, text, contextID string) *a2a.Task {
	t.Helper()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: text})
	msg.ContextID = contextID
	res, err := c.SendMessage(context.Background(), &a2a.MessageSendParams{Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("the result is a %T, not a task", res)
	}
	return task
}

// TestGoClientFlows: a2a-go v0.3.15's client reads the card, sends two
// messages on one context (the second answered by the same
// conversation), gets a task, and streams one assembled in order.
func TestGoClientFlows(t *testing.T) {
	a := newApp(t, nil, nil)
	c, card := goClient(t, a, "ann")
	if card.ProtocolVersion != "0.3.0" || !card.Capabilities.Streaming || len(card.Skills) == 0 || card.URL != a.srv.URL+"/" {
		t.Fatalf("card: %+v", card)
	}
	first := send03(t, c, "hi", "")
	if first.Status.State != a2a.TaskStateCompleted || textOf(first.Status.Message) != "hi: count is 1" || first.ContextID == "" {
		t.Fatalf("first: %+v %q", first.Status, textOf(first.Status.Message))
	}
	second := send03(t, c, "again", first.ContextID)
	if second.ContextID != first.ContextID || textOf(second.Status.Message) != "again: count is 2" || second.ID == first.ID {
		t.Fatalf("second: %+v %q", second, textOf(second.Status.Message))
	}
	got, err := c.GetTask(context.Background(), &a2a.TaskQueryParams{ID: first.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateCompleted || len(got.History) != 2 || textOf(got.History[0]) != "hi" {
		t.Fatalf("get: %+v", got)
	}
	if _, err := c.GetTask(context.Background(), &a2a.TaskQueryParams{ID: "no.such"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("get of an unknown task: %v", err)
	}
}

func TestGoClientStream(t *testing.T) {
	a := newApp(t, &a2aserver.Options{Route: "stream"}, nil)
	c, _ := goClient(t, a, "")
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "go"})
	var chunks strings.Builder
	var last *a2a.TaskStatusUpdateEvent
	n := 0
	for ev, err := range c.SendStreamingMessage(context.Background(), &a2a.MessageSendParams{Message: msg}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 1 {
			if _, ok := ev.(*a2a.Task); !ok {
				t.Fatalf("the first event is a %T", ev)
			}
			continue
		}
		su, ok := ev.(*a2a.TaskStatusUpdateEvent)
		if !ok {
			t.Fatalf("event %d is a %T", n, ev)
		}
		if last != nil && last.Final {
			t.Fatal("an event after the final one")
		}
		if su.Status.State == a2a.TaskStateWorking {
			chunks.WriteString(textOf(su.Status.Message))
		}
		last = su
	}
	var want strings.Builder
	for i := range 20 {
		fmt.Fprintf(&want, "c%d ", i)
	}
	wantText := want.String()
	if last == nil || !last.Final || last.Status.State != a2a.TaskStateCompleted || chunks.String() != wantText ||
		textOf(last.Status.Message) != wantText {
		t.Fatalf("the stream: %d events, chunks %q, last %+v", n, chunks.String(), last)
	}
}

// TestGoClientCancel: a cancel of a slow task stops its request with the
// cause chat.ErrCancelled and the task ends canceled; a second cancel is
// refused (-32002); resubscribe to the finished task is refused.
func TestGoClientCancel(t *testing.T) {
	a := newApp(t, &a2aserver.Options{Route: "wait"}, nil)
	c, _ := goClient(t, a, "ann")
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "slow"})
	res, err := c.SendMessage(context.Background(), &a2a.MessageSendParams{Message: msg, Config: &a2a.MessageSendConfig{Blocking: new(false)}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	<-a.sig.waiting
	got, err := c.CancelTask(context.Background(), &a2a.TaskIDParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("after the cancel: %+v", got.Status)
	}
	select {
	case stopped := <-a.sig.cancelled:
		if !stopped {
			t.Fatal("the request's context was not cancelled with chat.ErrCancelled")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the route was not stopped")
	}
	if _, err := c.CancelTask(context.Background(), &a2a.TaskIDParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Fatalf("a second cancel: %v", err)
	}
	for _, err := range c.ResubscribeToTask(context.Background(), &a2a.TaskIDParams{ID: task.ID}) {
		if !errors.Is(err, a2a.ErrUnsupportedOperation) {
			t.Fatalf("resubscribe to a finished task: %v", err)
		}
		break
	}
	// Another principal does not see it.
	other, _ := goClient(t, a, "bob")
	if _, err := other.GetTask(context.Background(), &a2a.TaskQueryParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("get by another principal: %v", err)
	}
	if _, err := other.CancelTask(context.Background(), &a2a.TaskIDParams{ID: task.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("cancel by another principal: %v", err)
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "x"})
	m.ContextID = task.ContextID
	if _, err := other.SendMessage(context.Background(), &a2a.MessageSendParams{Message: m}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("send on another principal's context: %v", err)
	}
}

// TestGoClientResubscribe: a2a-go's client resubscribes to a running
// task: the task first, then its events to its final status, here the
// canceled one.
func TestGoClientResubscribe(t *testing.T) {
	a := newApp(t, &a2aserver.Options{Route: "wait"}, nil)
	c, _ := goClient(t, a, "ann")
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "slow"})
	res, err := c.SendMessage(context.Background(), &a2a.MessageSendParams{Message: msg, Config: &a2a.MessageSendConfig{Blocking: new(false)}})
	if err != nil {
		t.Fatal(err)
	}
	task := res.(*a2a.Task)
	<-a.sig.waiting
	var kinds []string
	var last a2a.TaskState
	cancelled := make(chan error, 1)
	for ev, err := range c.ResubscribeToTask(context.Background(), &a2a.TaskIDParams{ID: task.ID}) {
		if err != nil {
			t.Fatal(err)
		}
		switch ev := ev.(type) {
		case *a2a.Task:
			kinds = append(kinds, "task")
			go func() {
				_, err := c.CancelTask(context.Background(), &a2a.TaskIDParams{ID: task.ID})
				cancelled <- err
			}()
		case *a2a.TaskStatusUpdateEvent:
			kinds = append(kinds, "status")
			last = ev.Status.State
		}
	}
	if err := <-cancelled; err != nil {
		t.Fatal(err)
	}
	<-a.sig.cancelled
	if len(kinds) < 2 || kinds[0] != "task" || last != a2a.TaskStateCanceled {
		t.Fatalf("the resubscription: %v, last %s", kinds, last)
	}
}
