package plan_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/recall"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/plan"
	"github.com/chatscopes/chatgen/runtime/protocol"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// docs is the application's retriever: the same passage for any query.
type docs []schema.Document

func (d docs) GetRelevantDocuments(context.Context, string) ([]schema.Document, error) {
	return d, nil
}

// calls are the model's scripted tool calls, by what the user typed; a
// request that ends with tool results is answered with their text.
var calls = map[string][]llmtest.ToolCall{
	"plan the crossbow build": {{Name: plan.ToolCreate, Arguments: `{"name":"Crossbow","description":"Build a crossbow for Ana","subtasks":[{"name":"Pick a stave","expected_outcome":"a yew stave"},{"name":"String it"}]}`}},
	"start":                   {{Name: plan.ToolUpdateState, Arguments: `{"subtask_idx":0,"state":"in_progress"}`}},
	"start the fifth":         {{Name: plan.ToolUpdateState, Arguments: `{"subtask_idx":5,"state":"in_progress"}`}},
	"give up":                 {{Name: plan.ToolFinishPlan, Arguments: `{"state":"abandoned","outcome":"Ana bought a bow"}`}},
	"finish the stave":        {{Name: plan.ToolFinishTask, Arguments: `{"subtask_idx":0,"subtask_outcome":"a yew stave, 90 cm"}`}},
}

func script() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 {
			return llmtest.Reply{Text: "tool said: " + res[0].Content}, nil
		}
		if c, ok := calls[req.UserTyped()]; ok {
			return llmtest.Reply{ToolCalls: c}, nil
		}
		return llmtest.Reply{Text: "ok: " + req.UserTyped()}, nil
	})
}

// node is one server process: a model server, an AI service with the plan
// tool box, a router over store and a websocket server.
type node struct {
	llm   *llmtest.Server
	plans *plan.Toolbox
	url   string
	srv   *ws.Server
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newNode starts a node; cfg may set Knowledge and LongTerm. store holds
// the durable conversations and their memories.
func newNode(t *testing.T, store *chat.InMemoryConversationStore, cfg *ai.Config) *node {
	t.Helper()
	return newNodeWith(t, store, cfg, &plan.Options{})
}

// newNodeWith is newNode with the tool box's options.
func newNodeWith(t *testing.T, store *chat.InMemoryConversationStore, cfg *ai.Config, opts *plan.Options) *node {
	t.Helper()
	opts.Logger = quiet()
	n := &node{llm: llmtest.NewServer(script(), nil), plans: plan.New(opts)}
	t.Cleanup(n.llm.Close)
	model, err := n.llm.Client()
	if err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = &ai.Config{}
	}
	cfg.Model = model
	cfg.Logger = quiet()
	cfg.ToolSources = []ai.ToolSource{n.plans}
	cfg.Memory = memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(store), Policy: memory.Window(50, nil)})
	svc := ai.NewService("example.com/app.Smith", cfg)
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are a weaponsmith."}
	svc.AddMethods(method)
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "smith", Default: true, Handle: func(ctx context.Context) error {
		r, err := svc.Chat(ctx, &ai.Request{Method: method, User: chat.Request(ctx).UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	router, err := chat.NewRouter(&chat.RouterOptions{Store: store, Logger: quiet()}, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Check(); err != nil {
		t.Fatal(err)
	}
	srv := ws.NewServer(router, &ws.ServerOptions{Logger: quiet()})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	n.url, n.srv = hs.URL, srv
	return n
}

// recorder collects what a client session receives.
type recorder struct {
	mu     sync.Mutex
	types  []string
	plans  []plan.Plan
	texts  []string
	errors []error
}

func (r *recorder) builder(c *ws.Client) *chat.SessionBuilder {
	return c.Builder().
		OnMessage(func(text string) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.types = append(r.types, protocol.EventMessage)
			r.texts = append(r.texts, text)
		}).
		On(protocol.EventPlan, func(ev chat.Event) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.types = append(r.types, ev.Type)
			var p plan.Plan
			if err := ev.Decode(&p); err != nil {
				r.errors = append(r.errors, err)
			}
			r.plans = append(r.plans, p)
		})
}

func (r *recorder) snapshot() ([]string, []plan.Plan, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.types...), append([]plan.Plan(nil), r.plans...), append([]string(nil), r.texts...)
}

func dial(t *testing.T, url string) *ws.Client {
	t.Helper()
	c, err := ws.Dial(t.Context(), url, &ws.DialOptions{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func chatAll(t *testing.T, s chat.Session, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if err := s.Chat(t.Context(), m); err != nil {
			t.Fatalf("chat %q: %v", m, err)
		}
	}
}

// body is a recorded request's JSON body, by key.
func body(t *testing.T, req llmtest.Request) map[string]json.RawMessage {
	t.Helper()
	var v map[string]json.RawMessage
	if err := json.Unmarshal(req.Body, &v); err != nil {
		t.Fatalf("request %d: %v", req.Index, err)
	}
	return v
}

func messages(t *testing.T, req llmtest.Request) []json.RawMessage {
	t.Helper()
	var v []json.RawMessage
	if err := json.Unmarshal(body(t, req)["messages"], &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The plan is put in each request after the cache-stable prefix: last in
// the per-request slot (after the passages and the recalled facts), in the
// user message as sent, never in memory; the tools block and the prefix
// are byte-identical from turn to turn — through the websocket client and
// langchaingo's OpenAI client against llmtest.
func TestPlanInEachRequest(t *testing.T) {
	ctx := t.Context()
	facts := recall.New(longterm.NewMemStore(nil), &recall.Options{Anonymous: "ana", NoExtract: true, Logger: quiet()})
	if _, err := facts.Remember(ctx, "ana", "Ana likes a crossbow with a stave of yew; start the stave first", ""); err != nil {
		t.Fatal(err)
	}
	store := chat.NewInMemoryConversationStore(nil)
	n := newNode(t, store, &ai.Config{
		Knowledge: &ai.Knowledge{Retriever: docs{{PageContent: "Yew makes the best staves.", Metadata: map[string]any{"id": "yew", "title": "Yew"}}}},
		LongTerm:  facts,
	})
	rec := &recorder{}
	s, err := rec.builder(dial(t, n.url)).Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	chatAll(t, s, "plan the crossbow build", "start the stave", "start", "what next with the stave")
	reqs := n.llm.Requests()
	// 0: plan (tool call) 1: its result 2: "start the stave" 3: start
	// (tool call) 4: its result 5: "what next".
	if len(reqs) != 6 {
		t.Fatalf("%d model requests, want 6", len(reqs))
	}
	if text := reqs[0].LastUserText(); strings.Contains(text, ai.ContextHeader) {
		t.Fatalf("the first request has a plan before one was made:\n%s", text)
	}
	for _, i := range []int{2, 5} {
		text := reqs[i].LastUserText()
		iPassage := strings.Index(text, "Yew makes the best staves.")
		iFacts := strings.Index(text, ai.FactsHeader)
		iPlan := strings.Index(text, ai.ContextHeader+`<context source="plan">`+"\n"+`Plan "Crossbow"`)
		iMsg := strings.LastIndex(text, "\nMessage:\n")
		if iPassage < 0 || iFacts < iPassage || iPlan < iFacts || iMsg < iPlan {
			t.Fatalf("request %d: the slot is not passages (%d), facts (%d), plan (%d), message (%d):\n%s", i, iPassage, iFacts, iPlan, iMsg, text)
		}
		if got, want := reqs[i].UserTyped(), []string{2: "start the stave", 5: "what next with the stave"}[i]; got != want {
			t.Fatalf("request %d: UserTyped = %q, want %q", i, got, want)
		}
	}
	if text := reqs[2].LastUserText(); !strings.Contains(text, "(revision 1, in_progress)") || !strings.Contains(text, "[0] todo: Pick a stave") {
		t.Fatalf("request 2 lacks the new plan:\n%s", text)
	}
	if text := reqs[5].LastUserText(); !strings.Contains(text, "(revision 2, in_progress)") || !strings.Contains(text, "[0] in_progress: Pick a stave") {
		t.Fatalf("request 5 lacks the updated plan:\n%s", text)
	}
	// The tools block: the same bytes in every request.
	tools := body(t, reqs[0])["tools"]
	if !strings.Contains(string(tools), plan.ToolCreate) || !strings.Contains(string(tools), plan.ToolFinishPlan) {
		t.Fatalf("tools %s", tools)
	}
	for _, r := range reqs[1:] {
		if got := body(t, r)["tools"]; string(got) != string(tools) {
			t.Fatalf("request %d: the tools block changed:\n%s\nwas\n%s", r.Index, got, tools)
		}
	}
	// The prefix: request 5 begins with request 2 but its last message, and
	// then has request 2's user message as typed (memory has no plan).
	m2, m5 := messages(t, reqs[2]), messages(t, reqs[5])
	for i := range len(m2) - 1 {
		if string(m2[i]) != string(m5[i]) {
			t.Fatalf("message %d changed between turns:\n%s\n%s", i, m2[i], m5[i])
		}
	}
	if want := `"start the stave"`; !strings.Contains(string(m5[len(m2)-1]), want) || strings.Contains(string(m5[len(m2)-1]), "Plan") {
		t.Fatalf("memory holds the user message %s, want it as typed", m5[len(m2)-1])
	}
	for i, m := range m5[:len(m5)-1] {
		if strings.Contains(string(m), ai.ContextHeader) {
			t.Fatalf("message %d of the history holds a plan block: %s", i, m)
		}
	}
}

// Every change of the plan reaches the client as a Plan event, before the
// answer, with its revision; a view or a refused call sends none, and the
// refusal reaches the model as the tool's result.
func TestPlanEvents(t *testing.T) {
	n := newNode(t, chat.NewInMemoryConversationStore(nil), nil)
	rec := &recorder{}
	s, err := rec.builder(dial(t, n.url)).Connect(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	chatAll(t, s, "plan the crossbow build", "start", "start the fifth", "finish the stave")
	types, plans, texts := rec.snapshot()
	want := "Plan Message Plan Message Message Plan Message"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	if len(plans) != 3 || plans[0].Revision != 1 || plans[1].Revision != 2 || plans[2].Revision != 3 {
		t.Fatalf("plans %+v", plans)
	}
	if p := plans[0]; p.Name != "Crossbow" || p.State != plan.InProgress || len(p.Subtasks) != 2 || p.Subtasks[0].ExpectedOutcome != "a yew stave" || p.Subtasks[1].State != plan.Todo {
		t.Fatalf("created %+v", p)
	}
	if p := plans[2]; p.Subtasks[0].State != plan.Done || p.Subtasks[0].Outcome != "a yew stave, 90 cm" {
		t.Fatalf("finished subtask %+v", p.Subtasks[0])
	}
	if !strings.Contains(texts[2], "there is no subtask 5: the plan has subtasks 0 to 1") {
		t.Fatalf("the model was told %q", texts[2])
	}
}

// The plan is part of the durable state: a conversation detached from a
// node that then shuts down, resumed on another node (over one store),
// has the plan in its next request there, and its next change goes on from
// the saved revision.
func TestPlanDurableAcrossNodes(t *testing.T) {
	ctx := t.Context()
	store := chat.NewInMemoryConversationStore(nil)
	a, b := newNode(t, store, nil), newNode(t, store, nil)
	c := dial(t, a.url)
	s, err := (&recorder{}).builder(c).Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	chatAll(t, s, "plan the crossbow build", "start")
	if err := c.Detach(); err != nil {
		t.Fatal(err)
	}
	// Shutdown releases the conversations' leases: node b resumes at once.
	if err := a.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	s2, err := rec.builder(dial(t, b.url)).Resume(ctx, s.ConversationID(), s.ResumeToken())
	if err != nil {
		t.Fatal(err)
	}
	chatAll(t, s2, "how is it going", "finish the stave")
	reqs := b.llm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("node b: %d model requests, want 3", len(reqs))
	}
	if text := reqs[0].LastUserText(); !strings.Contains(text, "(revision 2, in_progress)") || !strings.Contains(text, "[0] in_progress: Pick a stave") {
		t.Fatalf("node b's first request lacks the saved plan:\n%s", text)
	}
	_, plans, _ := rec.snapshot()
	if len(plans) != 1 || plans[0].Revision != 3 || plans[0].Subtasks[0].State != plan.Done {
		t.Fatalf("plans on node b %+v", plans)
	}
}

// Finishing the plan sends it finished, and the next request has no plan.
func TestFinishedPlanLeavesTheSlot(t *testing.T) {
	n := newNode(t, chat.NewInMemoryConversationStore(nil), nil)
	rec := &recorder{}
	s, err := rec.builder(dial(t, n.url)).Connect(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	chatAll(t, s, "plan the crossbow build", "give up", "hello")
	reqs := n.llm.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d model requests, want 5", len(reqs))
	}
	if !strings.Contains(reqs[2].LastUserText(), ai.ContextHeader) {
		t.Fatalf("the plan is missing before it ends:\n%s", reqs[2].LastUserText())
	}
	if text := reqs[4].LastUserText(); text != "hello" {
		t.Fatalf("the request after the plan ended has %q", text)
	}
	_, plans, _ := rec.snapshot()
	if len(plans) != 2 || plans[1].State != plan.Abandoned || plans[1].Outcome != "Ana bought a bow" || plans[1].Revision != 2 {
		t.Fatalf("plans %+v", plans)
	}
}

// With ScopePerSubtask, the turns on a subtask in progress run in a nested
// scope with a memory of its own (and the plan in each request); finishing
// the subtask pops it, its memory goes, and the conversation goes on with
// the enclosing scope's history.
func TestSubtaskInNestedScope(t *testing.T) {
	ctx := t.Context()
	store := chat.NewInMemoryConversationStore(nil)
	n := newNodeWith(t, store, nil, &plan.Options{ScopePerSubtask: true})
	s, err := (&recorder{}).builder(dial(t, n.url)).Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	top := s.ScopeID()
	chatAll(t, s, "plan the crossbow build", "start")
	nested := s.ScopeID()
	if nested == top {
		t.Fatal("setting the subtask in progress pushed no scope")
	}
	chatAll(t, s, "what next with the stave", "finish the stave")
	if got := s.ScopeID(); got != top {
		t.Fatalf("after the subtask the scope is %s, want the top %s", got, top)
	}
	chatAll(t, s, "hello")
	reqs := n.llm.Requests()
	// 0, 1: plan; 2, 3: start (pushes); 4: what next (nested); 5, 6:
	// finish (nested, pops); 7: hello (top).
	if len(reqs) != 8 {
		t.Fatalf("%d model requests, want 8", len(reqs))
	}
	if m := reqs[4].Messages; len(m) != 2 || !strings.Contains(reqs[4].LastUserText(), "[0] in_progress: Pick a stave") {
		t.Fatalf("the subtask's first turn: %d messages (want the system's and the user's), sent\n%s", len(m), reqs[4].LastUserText())
	}
	if m := reqs[5].Messages; len(m) != 4 {
		t.Fatalf("the subtask's second turn has %d messages, want 4 (its own history)", len(m))
	}
	var history []string
	for _, m := range reqs[7].Messages {
		for _, p := range m.Parts {
			if tc, ok := p.(llms.TextContent); ok {
				history = append(history, tc.Text)
			}
		}
	}
	all := strings.Join(history, "\n")
	if !strings.Contains(all, "plan the crossbow build") || !strings.Contains(all, "\nstart\n") || strings.Contains(all, "what next with the stave") {
		t.Fatalf("the top scope's history after the subtask:\n%s", all)
	}
	ids, err := store.MemoryIDs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || !strings.HasPrefix(ids[0], top) {
		t.Fatalf("memories %q, want the top scope's only", ids)
	}
}
