package subagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/agent/subagent"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/protocol"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

// durableRig is a rig on a router with store, whose services keep their
// memories in the store: a fresh one on the same store is the process
// after a restart.
func durableRig(t testing.TB, store *chat.InMemoryConversationStore, o *rigOptions) *rig {
	t.Helper()
	return durableRigOn(t, backend{store, chatstoretest.InMemoryMemories(store)}, o)
}

// backend is a conversation store and its memory side.
type backend struct {
	conversations chatstore.ConversationStore
	memories      memory.Store
}

func durableRigOn(t testing.TB, b backend, o *rigOptions) *rig {
	t.Helper()
	if o == nil {
		o = &rigOptions{}
	}
	mem := func(c *ai.Config) *ai.Config {
		if c == nil {
			c = &ai.Config{}
		}
		c.Memory = memory.NewManager(&memory.ManagerOptions{Store: b.memories, Policy: memory.Window(50, nil)})
		return c
	}
	o.parent, o.child = mem(o.parent), mem(o.child)
	o.router = &chat.RouterOptions{Store: b.conversations}
	return newRig(t, o)
}

// exchange runs one request on conv and returns its events.
func exchange(t *testing.T, conv *chat.Conversation, req *chat.RouteRequest) ([]chat.Event, *chat.Failure) {
	t.Helper()
	var events []chat.Event
	_, f := conv.Handle(context.Background(), conv.ScopeID(), req, func(ev chat.Event) error {
		events = append(events, ev)
		return nil
	})
	return events, f
}

func text(t *testing.T, conv *chat.Conversation, msg string) []chat.Event {
	t.Helper()
	ev, f := exchange(t, conv, chat.NewTextRequest(msg))
	if f != nil {
		t.Fatalf("%q: %v", msg, f)
	}
	return ev
}

func data(t *testing.T, conv *chat.Conversation, v any) ([]chat.Event, *chat.Failure) {
	t.Helper()
	req, err := chat.NewDataRequest(v)
	if err != nil {
		t.Fatal(err)
	}
	return exchange(t, conv, req)
}

// message returns the text of the Message event of events.
func message(t *testing.T, events []chat.Event) string {
	t.Helper()
	for _, ev := range events {
		if ev.Type == protocol.EventMessage {
			return ev.Text()
		}
	}
	t.Fatalf("no message in %v", events)
	return ""
}

// ofType returns the events of type typ, decoded into T.
func ofType[T any](t *testing.T, events []chat.Event, typ string) []T {
	t.Helper()
	var out []T
	for _, ev := range events {
		if ev.Type != typ {
			continue
		}
		var v T
		if err := ev.Decode(&v); err != nil {
			t.Fatalf("%s event %v: %v", typ, ev.Data, err)
		}
		out = append(out, v)
	}
	return out
}

// restart detaches conv from its router and resumes it on a fresh rig on
// the same store: the process after a restart.
func restart(t *testing.T, conv *chat.Conversation, store *chat.InMemoryConversationStore) (*rig, *chat.Conversation) {
	t.Helper()
	return restartOn(t, conv, backend{store, chatstoretest.InMemoryMemories(store)})
}

func restartOn(t *testing.T, conv *chat.Conversation, b backend) (*rig, *chat.Conversation) {
	t.Helper()
	ctx := context.Background()
	id, tok := conv.ID(), conv.ResumeToken()
	if err := conv.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	r := durableRigOn(t, b, nil)
	next, err := r.router.Resume(ctx, id, tok)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { next.Close(ctx) })
	return r, next
}

// The sessions of a sub-agent, and their memories, are durable: after a
// restart the model continues a session by its id, and new sessions go
// on numbering from the saved table; the end of the conversation deletes
// every session's memory from the store.
func TestDurableSessions(t *testing.T) {
	leaktest.Check(t)
	ctx := context.Background()
	store := chat.NewInMemoryConversationStore(nil)
	r1 := durableRig(t, store, nil)
	conv, err := r1.router.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := message(t, text(t, conv, `call {"task":"a"}`)); !strings.Contains(got, `"session_id":"research-1"`) || !strings.Contains(got, "answer to a (user messages seen: 1)") {
		t.Fatalf("first call: %q", got)
	}
	r2, conv := restart(t, conv, store)
	if got := message(t, text(t, conv, `call {"task":"b","session_id":"research-1"}`)); !strings.Contains(got, "answer to b (user messages seen: 2)") {
		t.Fatalf("the session continued after the restart: %q, want its second user message", got)
	}
	if got := message(t, text(t, conv, `call {"task":"c"}`)); !strings.Contains(got, `"session_id":"research-2"`) {
		t.Fatalf("a new session after the restart: %q, want research-2", got)
	}
	if n := len(r2.childSrv.Requests()); n != 2 {
		t.Errorf("the child model was called %d times after the restart, want 2", n)
	}
	if err := conv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	ids, err := store.MemoryIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) > 0 {
		t.Errorf("memories left in the store after the conversation ended: %q", ids)
	}

	// A conversation resumed after a restart that ends before its
	// sessions are used again deletes their memories all the same.
	conv, err = r2.router.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	text(t, conv, `call {"task":"d"}`)
	if ids, _ := store.MemoryIDs(ctx); len(ids) != 2 {
		t.Fatalf("memories %q, want the parent's and the session's", ids)
	}
	_, conv = restart(t, conv, store)
	if err := conv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ids, _ := store.MemoryIDs(ctx); len(ids) > 0 {
		t.Errorf("memories left in the store after the resumed conversation ended unused: %q", ids)
	}
}

// A confirmed tool inside a sub-agent pauses the whole turn, durably: the
// Confirm event names the agent and its session; after a restart, the
// answer resumes the sub-agent where it paused, then the parent. A stale
// answer fails the request and loses nothing.
func TestConfirmInSubAgentAcrossRestart(t *testing.T) {
	t.Run("in-memory", func(t *testing.T) {
		store := chat.NewInMemoryConversationStore(nil)
		confirmAcrossRestart(t, backend{store, chatstoretest.InMemoryMemories(store)})
	})
	t.Run("redis", func(t *testing.T) {
		c := redistest.Client(t)
		s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(t, c, "subagent")})
		if err != nil {
			t.Fatal(err)
		}
		confirmAcrossRestart(t, backend{s, s.Memories()})
	})
}

func confirmAcrossRestart(t *testing.T, b backend) {
	leaktest.Check(t)
	ctx := context.Background()
	r1 := durableRigOn(t, b, nil)
	conv, err := r1.router.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	events := text(t, conv, `call {"task":"buy milk"}`)
	confirms := ofType[ai.Confirmation](t, events, protocol.EventConfirm)
	if len(confirms) != 1 {
		t.Fatalf("Confirm events %+v, want one (events %v)", confirms, events)
	}
	c := confirms[0]
	if c.Agent != "research" || c.Session != "research-1" || c.Tool != "buy" {
		t.Fatalf("Confirm %+v, want the buy call of agent research, session research-1", c)
	}
	if slices.ContainsFunc(events, func(ev chat.Event) bool { return ev.Type == protocol.EventMessage }) {
		t.Fatalf("a message while the turn is paused: %v", events)
	}
	r2, conv := restartOn(t, conv, b)
	if _, f := data(t, conv, map[string]any{"confirm": "stale", "approve": true}); f == nil || f.Reason != chat.ErrBadRequest.Reason {
		t.Fatalf("a stale answer: %v, want BadRequest", f)
	}
	events, f := data(t, conv, map[string]any{"confirm": c.ID, "approve": true})
	if f != nil {
		t.Fatal(f)
	}
	got := message(t, events)
	if !strings.Contains(got, `done buy milk: bought {\"q\":\"buy milk\"}`) || !strings.Contains(got, `"session_id":"research-1"`) {
		t.Fatalf("the resumed turn answered %q", got)
	}
	if len(r1.bought) != 0 || len(r2.bought) != 1 {
		t.Errorf("buy ran %d times before the restart and %d after, want 0 and 1", len(r1.bought), len(r2.bought))
	}
	// The parent's model was called once after the restart (the answer
	// with the result); the child's once (after the confirmed call).
	if p, ch := len(r2.parentSrv.Requests()), len(r2.childSrv.Requests()); p != 1 || ch != 1 {
		t.Errorf("after the restart the parent model was called %d times and the child's %d, want 1 and 1", p, ch)
	}
}

// A client tool inside a sub-agent pauses the turn on a ClientTool event
// naming the agent; the client's result resumes both turns.
func TestClientToolInSubAgent(t *testing.T) {
	leaktest.Check(t)
	ctx := context.Background()
	store := chat.NewInMemoryConversationStore(nil)
	r := durableRig(t, store, nil)
	conv, err := r.router.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close(ctx)
	calls := ofType[protocol.ClientToolCall](t, text(t, conv, `call {"task":"pick colour"}`), protocol.EventClientTool)
	if len(calls) != 1 || calls[0].Agent != "research" || calls[0].Session != "research-1" || calls[0].Tool != "pick" {
		t.Fatalf("ClientTool events %+v, want the pick call of agent research", calls)
	}
	events, f := data(t, conv, map[string]any{"clientTool": calls[0].ID, "result": "red"})
	if f != nil {
		t.Fatal(f)
	}
	if got := message(t, events); !strings.Contains(got, `done pick colour: \"red\"`) {
		t.Fatalf("the resumed turn answered %q", got)
	}
}

// Two sub-agents of a fan-out that both pause: each sends its Confirm;
// answering one (the second first) resumes it, and the other pauses again
// (its Confirm sent again) until it is answered too. A stale answer fails
// the request and changes nothing.
func TestConfirmInFanOut(t *testing.T) {
	leaktest.Check(t)
	ctx := context.Background()
	r := newRig(t, nil)
	conv, err := r.router.Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close(ctx)
	confirms := ofType[ai.Confirmation](t, text(t, conv, "fan 3 buyA lookup buyB"), protocol.EventConfirm)
	if len(confirms) != 2 {
		t.Fatalf("Confirm events %+v, want two", confirms)
	}
	byArgs := map[string]ai.Confirmation{}
	for _, c := range confirms {
		byArgs[string(c.Arguments)] = c
	}
	// The second is answered first: each Confirm may be.
	second, first := byArgs[`{"q":"buyA"}`], byArgs[`{"q":"buyB"}`]
	if _, f := data(t, conv, map[string]any{"confirm": "stale", "approve": true}); f == nil || f.Reason != chat.ErrBadRequest.Reason {
		t.Fatalf("a stale answer: %v, want BadRequest", f)
	}
	events, f := data(t, conv, map[string]any{"confirm": first.ID, "approve": true})
	if f != nil {
		t.Fatal(f)
	}
	again := ofType[ai.Confirmation](t, events, protocol.EventConfirm)
	if len(again) != 1 || again[0].ID != second.ID || again[0].Session != second.Session {
		t.Fatalf("after the first answer: Confirm %+v, want the second's again (%+v)", again, second)
	}
	events, f = data(t, conv, map[string]any{"confirm": second.ID, "approve": false, "reason": "too dear"})
	if f != nil {
		t.Fatal(f)
	}
	got := message(t, events)
	// The results in the order the calls returned: the lookup's at the
	// pause, then the resumed ones'.
	if parts := strings.Split(got, " | "); len(parts) != 3 || !strings.Contains(got, `done buyB: bought`) || !strings.Contains(got, "answer to lookup") || !strings.Contains(got, "done buyA: the user denied this call: too dear") {
		t.Fatalf("the answer %q", got)
	}
	if len(r.bought) != 1 {
		t.Errorf("bought %q, want one", r.bought)
	}
}

// Concurrent durable conversations fanning out (run with -race): every
// completed sub-agent call checkpoints while the others of its fan-out
// run.
func TestManyDurableConversationsFanOut(t *testing.T) {
	leaktest.Check(t)
	store := chat.NewInMemoryConversationStore(nil)
	r := durableRig(t, store, &rigOptions{inProcess: true})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Go(func() {
			ctx := context.Background()
			conv, err := r.router.Connect(ctx, "")
			if err != nil {
				errs <- err
				return
			}
			defer conv.Close(ctx)
			for round := range 2 {
				var got string
				if _, f := conv.Handle(ctx, conv.ScopeID(), chat.NewTextRequest(fmt.Sprintf("fan 4 a%d b%d c%d d%d", round, i, i, i)), func(ev chat.Event) error {
					if ev.Type == protocol.EventMessage {
						got = ev.Text()
					}
					return nil
				}); f != nil {
					errs <- fmt.Errorf("conversation %d: %v", i, f)
					return
				}
				if strings.Count(got, "answer to ") != 4 {
					errs <- fmt.Errorf("conversation %d: %q", i, got)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ids, err := store.MemoryIDs(context.Background()); err != nil || len(ids) > 0 {
		t.Errorf("memories left after the conversations ended: %q %v", ids, err)
	}
}

// A confirmed tool two sub-agents deep (orchestrator → research → deep)
// pauses all three turns; the answer resumes the innermost, then each
// caller, across a restart.
func TestConfirmTwoDeep(t *testing.T) {
	leaktest.Check(t)
	ctx := context.Background()
	store := chat.NewInMemoryConversationStore(nil)
	var bought []string
	build := func() *chat.Router {
		mem := func() memory.Provider {
			return memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(store), Policy: memory.Window(50, nil)})
		}
		grand := ai.NewService("example.com/app.Deep", &ai.Config{Model: llmtest.NewModel(childScript(), nil), Memory: mem(), Logger: quiet})
		grandMethod := &ai.Method{Name: "Dig", Kind: chat.KindChat, System: "You dig.", Tools: []ai.Tool{{
			Name: "buy", Parameters: json.RawMessage(`{"type":"object"}`), Confirm: true,
			Invoke: func(_ context.Context, args string) (any, error) {
				bought = append(bought, args)
				return "bought " + args, nil
			},
		}}}
		deep := subagent.New("deep", func(ctx context.Context, task string) (string, error) {
			r, err := grand.Chat(ctx, &ai.Request{Method: grandMethod, User: task})
			if err != nil {
				return "", err
			}
			return r.Content, nil
		}, &subagent.Options{Logger: quiet})
		childModel := llmtest.NewModel(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
			if res := req.LastToolResults(); len(res) > 0 {
				return llmtest.Reply{Text: "research says: " + res[0].Content}, nil
			}
			b, _ := json.Marshal(map[string]string{"task": strings.TrimPrefix(req.LastUserText(), "deep ")})
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "deep", Arguments: string(b)}}}, nil
		}), nil)
		child := ai.NewService("example.com/app.Researcher", &ai.Config{Model: childModel, Memory: mem(), Logger: quiet, ToolSources: []ai.ToolSource{deep}})
		childMethod := &ai.Method{Name: "Research", Kind: chat.KindChat}
		research := subagent.New("research", func(ctx context.Context, task string) (string, error) {
			r, err := child.Chat(ctx, &ai.Request{Method: childMethod, User: task})
			if err != nil {
				return "", err
			}
			return r.Content, nil
		}, &subagent.Options{Logger: quiet})
		parent := ai.NewService("example.com/app.Orchestrator", &ai.Config{Model: llmtest.NewModel(parentScript("research"), nil), Memory: mem(), Logger: quiet, ToolSources: []ai.ToolSource{research}})
		method := &ai.Method{Name: "Orchestrate", Kind: chat.KindChat}
		p := chatimpl.NewPackage("example.com/app")
		p.AddRoute(chatimpl.RouteSpec{Name: "orchestrate", Default: true, Handle: func(ctx context.Context) error {
			reply, err := parent.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
			if err != nil {
				return err
			}
			return chat.Response(ctx).Message(reply.Content)
		}})
		router, err := chat.NewRouter(&chat.RouterOptions{Store: store, Logger: quiet}, p)
		if err != nil {
			t.Fatal(err)
		}
		return router
	}
	conv, err := build().Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	confirms := ofType[ai.Confirmation](t, text(t, conv, `call {"task":"deep buy milk"}`), protocol.EventConfirm)
	if len(confirms) != 1 || confirms[0].Agent != "deep" || confirms[0].Tool != "buy" {
		t.Fatalf("Confirm events %+v, want one, of the deep agent's buy call", confirms)
	}
	id, tok := conv.ID(), conv.ResumeToken()
	if err := conv.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	conv, err = build().Resume(ctx, id, tok)
	if err != nil {
		t.Fatal(err)
	}
	defer conv.Close(ctx)
	events, f := data(t, conv, map[string]any{"confirm": confirms[0].ID, "approve": true})
	if f != nil {
		t.Fatal(f)
	}
	if got := message(t, events); !strings.Contains(got, `research says: {\"session_id\":\"deep-1\",\"answer\":\"done buy milk: bought`) {
		t.Fatalf("the answer %q", got)
	}
	if len(bought) != 1 {
		t.Errorf("bought %q, want one", bought)
	}
}
