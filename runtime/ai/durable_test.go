package ai_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// weapon is the builder's durable bean.
type weapon struct {
	Name  string
	Turns int
}

// node is one process serving the application over a shared store: its
// own model, AI service, router and local client.
type node struct {
	model  *llmtest.Model
	svc    *ai.Service
	router *chat.Router
	client *chat.LocalClient
	logs   *logBuffer
}

// failSwitch makes a store's saves fail while on.
type failSwitch struct {
	chatstore.ConversationStore
	mu sync.Mutex
	on bool
}

var errDown = errors.New("store down")

func (s *failSwitch) set(on bool) {
	s.mu.Lock()
	s.on = on
	s.mu.Unlock()
}

func (s *failSwitch) Save(ctx context.Context, st *chatstore.ConversationState, l chatstore.Lease, b *chatstore.Batch) error {
	s.mu.Lock()
	on := s.on
	s.mu.Unlock()
	if on {
		return errDown
	}
	return s.ConversationStore.Save(ctx, st, l, b)
}

// newNode starts a process named name over store (whose memories cs
// holds).
func newNode(t *testing.T, name string, store chatstore.ConversationStore, cs *chat.InMemoryConversationStore) *node {
	t.Helper()
	n := &node{model: llmtest.NewModel(echo(), nil), logs: &logBuffer{}}
	n.svc = ai.NewService(svcName, &ai.Config{
		Model:  n.model,
		Memory: memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(cs), Policy: memory.Window(20, nil)}),
		Logger: n.logs.logger(),
	})
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}
	ask := func(ctx context.Context, msg string) (string, error) {
		r, err := n.svc.Chat(ctx, &ai.Request{Method: method, User: msg})
		if err != nil {
			return "", err
		}
		return r.Content, nil
	}
	draft := chat.NewBean("example.com/app.weapon", &chat.BeanOptions{Durable: true}, func(context.Context) (*weapon, error) {
		return &weapon{}, nil
	})
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "menu", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		if req.UserMessage() == "build" {
			if err := chat.PushRoute(ctx, "builder"); err != nil {
				return err
			}
			return chat.SendValue(ctx, "building")
		}
		text, err := ask(ctx, req.UserMessage())
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, text)
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "builder", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		msg := req.UserMessage()
		if msg == "done" {
			return chat.Pop(ctx)
		}
		w, err := draft.Lookup(ctx)
		if err != nil {
			return err
		}
		if name, ok := strings.CutPrefix(msg, "name "); ok {
			w.Name = name
		}
		w.Turns++
		text, err := ask(ctx, msg)
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, fmt.Sprintf("%s [%s #%d]", text, w.Name, w.Turns))
	}})
	r, err := chat.NewRouter(&chat.RouterOptions{Store: store, Node: name, Logger: n.logs.logger()}, p)
	if err != nil {
		t.Fatal(err)
	}
	n.router = r
	n.client = chat.NewLocalClient(r)
	t.Cleanup(func() { _ = n.client.Close() })
	return n
}

// messages records the Message events of a session.
type messages struct {
	mu   sync.Mutex
	last string
}

func (m *messages) add(text string) {
	m.mu.Lock()
	m.last = text
	m.mu.Unlock()
}

func (m *messages) take() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.last
	m.last = ""
	return s
}

func chatOK(t *testing.T, s chat.Session, text string) {
	t.Helper()
	if err := s.Chat(context.Background(), text); err != nil {
		t.Fatalf("%q: %v", text, err)
	}
}

func wantStats(t *testing.T, what string, r *chat.Router, conversations, scopes int64) {
	t.Helper()
	if got := r.Stats(); got != (chat.Stats{Conversations: conversations, Scopes: scopes}) {
		t.Fatalf("%s: stats %+v, want %d conversations and %d scopes", what, got, conversations, scopes)
	}
}

// lastRequest returns the messages of the model's last request.
func lastRequest(n *node) []string {
	reqs := n.model.Requests()
	if len(reqs) == 0 {
		return nil
	}
	return describe(reqs[len(reqs)-1].Messages)
}

func TestDurableConversationMovesToANewProcess(t *testing.T) {
	cs := chat.NewInMemoryConversationStore(nil)
	a := newNode(t, "a", cs, cs)
	var got messages
	s, err := a.client.Builder().OnMessage(got.add).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	id, token := s.ConversationID(), s.ResumeToken()
	if id == "" || token == "" || id != s.ScopeID() {
		t.Fatalf("conversation %q token %q scope %q", id, token, s.ScopeID())
	}
	chatOK(t, s, "hello")
	chatOK(t, s, "build")
	nested := s.ScopeID()
	chatOK(t, s, "name sword")
	if m := got.take(); m != "re: name sword [sword #1]" {
		t.Fatalf("builder said %q", m)
	}
	if s.ResumeToken() != token {
		t.Fatal("the token changed without a resume")
	}

	// The process stops, keeping its conversations in the store.
	if err := a.client.Detach(); err != nil {
		t.Fatal(err)
	}
	wantStats(t, "the old process", a.router, 0, 0)

	// A new process (its own model, service, memory manager and router)
	// resumes: the next message runs in the same nested route, with the
	// bean's state and the memory intact.
	b := newNode(t, "b", cs, cs)
	s2, err := b.client.Builder().OnMessage(got.add).Resume(context.Background(), id, token)
	if err != nil {
		t.Fatal(err)
	}
	wantStats(t, "the new process", b.router, 1, 2)
	if s2.ScopeID() != nested || s2.ConversationID() != id || s2.ResumeToken() == token {
		t.Fatalf("resumed session: scope %q (want %q), conversation %q, token rotated %v", s2.ScopeID(), nested, s2.ConversationID(), s2.ResumeToken() != token)
	}
	chatOK(t, s2, "what now")
	if m := got.take(); m != "re: what now [sword #2]" {
		t.Fatalf("builder said %q after the resume", m)
	}
	wantStrings(t, "the model's request after the resume", lastRequest(b),
		"system: You are terse.", "human: name sword", "ai: re: name sword", "human: what now")

	// Back in the menu, its memory (not used since the resume) is there.
	chatOK(t, s2, "done")
	chatOK(t, s2, "menu again")
	wantStrings(t, "the menu's memory", lastRequest(b),
		"system: You are terse.", "human: hello", "ai: re: hello", "human: menu again")
	ids, _ := cs.MemoryIDs(context.Background())
	wantStrings(t, "memories after popping the builder", ids, id+"#"+svcName+".Ask")

	// Closing the session ends the conversation everywhere.
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	wantStats(t, "after Close", b.router, 0, 0)
	convs, _ := cs.ConversationIDs(context.Background())
	ids, _ = cs.MemoryIDs(context.Background())
	if len(convs)+len(ids) != 0 {
		t.Fatalf("left in the store after Close: conversations %q, memories %q", convs, ids)
	}
}

func TestDurableResumeRefusedThroughTheLocalClient(t *testing.T) {
	clock := &testClock{now: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)}
	cs := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{TTL: time.Hour, Now: clock.Now})
	a := newNode(t, "a", cs, cs)
	ann := chat.WithPrincipal(context.Background(), chat.User{ID: "ann"})
	s, err := a.client.Builder().Connect(ann, "")
	if err != nil {
		t.Fatal(err)
	}
	chatOK(t, s, "hello")
	id, token := s.ConversationID(), s.ResumeToken()
	if err := a.client.Detach(); err != nil {
		t.Fatal(err)
	}
	b := newNode(t, "b", cs, cs)
	tampered := "A" + token[1:]
	if tampered == token {
		tampered = "B" + token[1:]
	}
	unknown := "0" + id[1:] // another id, whatever id's first digit
	if unknown == id {
		unknown = "1" + id[1:]
	}
	for name, tc := range map[string]struct {
		ctx       context.Context
		id, token string
	}{
		"tampered token": {ann, id, tampered},
		"another user":   {chat.WithPrincipal(context.Background(), chat.User{ID: "bob"}), id, token},
		"unknown id":     {ann, unknown, token},
	} {
		_, err := b.client.Builder().Resume(tc.ctx, tc.id, tc.token)
		var f *chat.Failure
		if !errors.As(err, &f) || f.Reason != "ResumeRefused" || f.Err != nil {
			t.Errorf("%s: %v, want a bare ResumeRefused failure", name, err)
		}
	}
	clock.advance(2 * time.Hour)
	if _, err := b.client.Builder().Resume(ann, id, token); !errors.Is(err, chat.ErrResumeRefused) {
		t.Fatalf("resume of an expired conversation: %v", err)
	}
	wantStats(t, "after the refusals", b.router, 0, 0)
}

func TestDurableTakeoverClosesTheOldSession(t *testing.T) {
	clock := &testClock{now: time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)}
	cs := chat.NewInMemoryConversationStore(&chat.InMemoryConversationStoreOptions{Now: clock.Now})
	a := newNode(t, "a", cs, cs)
	var got messages
	s, err := a.client.Builder().OnMessage(got.add).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	chatOK(t, s, "build")
	chatOK(t, s, "name axe")

	// A still serves it: B may not have it yet.
	b := newNode(t, "b", cs, cs)
	if _, err := b.client.Builder().Resume(context.Background(), s.ConversationID(), s.ResumeToken()); !errors.Is(err, chat.ErrConversationBusy) {
		t.Fatalf("resume while A serves: %v", err)
	}
	// A hangs past its lease: B takes over and goes on.
	clock.advance(30*time.Second + time.Second)
	s2, err := b.client.Builder().OnMessage(got.add).Resume(context.Background(), s.ConversationID(), s.ResumeToken())
	if err != nil {
		t.Fatal(err)
	}
	chatOK(t, s2, "name bow")
	if m := got.take(); m != "re: name bow [bow #2]" {
		t.Fatalf("B said %q", m)
	}
	// A wakes up: its late turn is rejected, its session there is over,
	// and nothing of it reached the store.
	if err := s.Chat(context.Background(), "name club"); !errors.Is(err, chat.ErrSessionNotActive) {
		t.Fatalf("A's late turn: %v, want SessionNotActive", err)
	}
	wantStats(t, "A after the takeover", a.router, 0, 0)
	chatOK(t, s2, "and now")
	if m := got.take(); m != "re: and now [bow #3]" {
		t.Fatalf("B said %q after A's late turn", m)
	}
	wantStrings(t, "B's memory", lastRequest(b), "system: You are terse.",
		"human: name axe", "ai: re: name axe", "human: name bow", "ai: re: name bow", "human: and now")
	if err := s.Close(); err != nil { // A's client disconnects late
		t.Fatal(err)
	}
	chatOK(t, s2, "still here")
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	wantStats(t, "B after Close", b.router, 0, 0)
}

func TestDurableFailedSaveKeepsNoMemoryOfTheTurn(t *testing.T) {
	cs := chat.NewInMemoryConversationStore(nil)
	store := &failSwitch{ConversationStore: cs}
	a := newNode(t, "a", store, cs)
	var got messages
	s, err := a.client.Builder().OnMessage(got.add).Connect(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	chatOK(t, s, "build")
	chatOK(t, s, "name spear")
	store.set(true)
	err = s.Chat(context.Background(), "name lost")
	if !errors.Is(err, chat.ErrUnavailable) {
		t.Fatalf("a turn whose save failed: %v, want Unavailable", err)
	}
	if m := got.take(); m != "re: name lost [lost #2]" {
		t.Fatalf("the failed turn said %q", m) // it ran; only its save failed
	}
	store.set(false)
	// The turn is gone from the bean and from the memory the service
	// cached: the next turn sees the saved state only.
	chatOK(t, s, "again")
	if m := got.take(); m != "re: again [spear #2]" {
		t.Fatalf("after the store came back: %q", m)
	}
	wantStrings(t, "the memory after the failed save", lastRequest(a),
		"system: You are terse.", "human: name spear", "ai: re: name spear", "human: again")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wantStats(t, "after Close", a.router, 0, 0)
	if ids, _ := cs.MemoryIDs(context.Background()); len(ids) != 0 {
		t.Fatalf("memories after Close: %q", ids)
	}
}

// testClock is a clock the tests move.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
