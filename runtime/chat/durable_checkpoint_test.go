package chat_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// checkpointRouter serves a route that, for "cp", writes a memory,
// checkpoints with record "v1" and waits for hold; for "read", answers
// what Interrupted reads.
func checkpointRouter(t *testing.T, store *chat.InMemoryConversationStore, hold <-chan struct{}, saved chan<- error) *chat.Router {
	t.Helper()
	p := chatimpl.NewPackage("example.com/cp")
	p.AddRoute(chatimpl.RouteSpec{Name: "r", Default: true, Handle: func(ctx context.Context) error {
		switch chat.Request(ctx).UserMessage() {
		case "cp":
			if err := store.PutMemory(ctx, "m1", []byte("written before the checkpoint")); err != nil {
				return err
			}
			saved <- chatimpl.Checkpoint(ctx, "k", []byte("v1"))
			<-hold
			return chat.Response(ctx).Message("done")
		case "read":
			return chat.Response(ctx).Message("record: " + string(chatimpl.Interrupted(ctx, "k")) + ", durable: " + map[bool]string{true: "yes", false: "no"}[chatimpl.Durable(ctx)])
		}
		return nil
	}})
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store}, p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func say(t *testing.T, conv *chat.Conversation, text string) string {
	t.Helper()
	var got string
	if _, f := conv.Handle(context.Background(), conv.ScopeID(), chat.NewTextRequest(text), func(ev chat.Event) error {
		if ev.Type == protocol.EventMessage {
			got = ev.Text()
		}
		return nil
	}); f != nil {
		t.Fatalf("%q: %v", text, f)
	}
	return got
}

// A checkpoint saves the conversation in the middle of a request, with
// the memory writes staged so far and its record; the request's own save
// drops the record. A conversation resumed from the checkpoint (the
// process died before the request ended) reads the record in its next
// request, and only in that one.
func TestCheckpoint(t *testing.T) {
	ctx := context.Background()
	store := chat.NewInMemoryConversationStore(nil)
	hold, saved := make(chan struct{}), make(chan error, 1)
	r := checkpointRouter(t, store, hold, saved)
	conv, err := r.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close(ctx)
	before, err := store.Load(ctx, conv.ID())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan string, 1)
	go func() { done <- say(t, conv, "cp") }()
	select {
	case err := <-saved:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no checkpoint")
	}
	// Mid-request: the store has the checkpoint.
	mid, err := store.Load(ctx, conv.ID())
	if err != nil {
		t.Fatal(err)
	}
	if mid.Version != before.Version+1 || string(mid.Extra["chat.checkpoint:k"]) != "v1" {
		t.Fatalf("mid-request state: version %d (before %d), extra %q", mid.Version, before.Version, mid.Extra)
	}
	if m, _ := store.GetMemory(ctx, "m1"); string(m) != "written before the checkpoint" {
		t.Fatalf("the staged memory write: %q", m)
	}
	// The process dies now: a copy of the store is what a restart finds.
	crashed := chat.NewInMemoryConversationStore(nil)
	lease, err := crashed.Acquire(ctx, mid.ID, "old-node", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cp := *mid
	cp.Version = 0
	if err := crashed.Save(ctx, &cp, lease, nil); err != nil {
		t.Fatal(err)
	}
	if err := crashed.Release(ctx, mid.ID, lease); err != nil {
		t.Fatal(err)
	}
	close(hold)
	if got := <-done; got != "done" {
		t.Fatalf("the request answered %q", got)
	}
	after, err := store.Load(ctx, conv.ID())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after.Extra["chat.checkpoint:k"]; ok || after.Version != mid.Version+1 {
		t.Fatalf("after the request: version %d, extra %q: want the record dropped", after.Version, after.Extra)
	}
	if got := say(t, conv, "read"); got != "record: , durable: yes" {
		t.Fatalf("the next request on the same node reads %q", got)
	}

	r2 := checkpointRouter(t, crashed, nil, nil)
	resumed, err := r2.Resume(ctx, mid.ID, conv.ResumeToken())
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close(ctx)
	if got := say(t, resumed, "read"); got != "record: v1, durable: yes" {
		t.Fatalf("after the crash the first request reads %q", got)
	}
	if got := say(t, resumed, "read"); got != "record: , durable: yes" {
		t.Fatalf("the second request reads %q", got)
	}
}

// Outside a durable request Checkpoint does nothing; after its request it
// fails.
func TestCheckpointOutside(t *testing.T) {
	ctx := context.Background()
	if err := chatimpl.Checkpoint(ctx, "k", []byte("v")); err != nil || chatimpl.Durable(ctx) || chatimpl.Interrupted(ctx, "k") != nil {
		t.Fatalf("outside a request: %v", err)
	}
	store := chat.NewInMemoryConversationStore(nil)
	var late context.Context
	p := chatimpl.NewPackage("example.com/cp")
	p.AddRoute(chatimpl.RouteSpec{Name: "r", Default: true, Handle: func(ctx context.Context) error {
		late = ctx
		return nil
	}})
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store}, p)
	if err != nil {
		t.Fatal(err)
	}
	conv, err := r.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close(ctx)
	say(t, conv, "x")
	if err := chatimpl.Checkpoint(late, "k", nil); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("a checkpoint after the request: %v, want ErrNotActive", err)
	}
}
