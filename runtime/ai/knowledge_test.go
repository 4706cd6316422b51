package ai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/tmc/langchaingo/schema"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/chatscopes/chatgen/internal/leaktest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/protocol"
)

// lore is a small corpus for the knowledge tests.
var lore = []schema.Document{
	doc("dawnbreaker", "Dawnbreaker", "Dawnbreaker is a sword forged in the Sunken Forge by the smith Aldra; its blade glows at dawn."),
	doc("aldra", "Aldra the Smith", "Aldra the smith forged Dawnbreaker and taught at the Sunken Forge for forty years."),
	doc("forge-fees", "Forge fees", "The Sunken Forge charges twelve crowns to sharpen a blade and fifty crowns to reforge one."),
	doc("nightglass", "Nightglass", "Nightglass is a dark crystal mined under the Ember Hills, used for arrowheads."),
	doc("ember-hills", "Ember Hills", "The Ember Hills are volcanic hills east of the capital, home of the miners' guild."),
}

func doc(id, title, text string) schema.Document {
	return schema.Document{PageContent: text, Metadata: map[string]any{"id": id, "title": title, "source": "lore/" + id + ".md"}}
}

// keywords is a retriever scoring documents by the words of the query they
// contain: a small search of the tests' own, as any schema.Retriever.
type keywords struct {
	docs []schema.Document
	name string // labels the passages' ids: "<name>/<id>" when set

	mu      sync.Mutex
	queries []string
	err     error        // returned by every search when set
	block   bool         // searches wait for their context
	closed  atomic.Int32 // Close calls
	onClose func() error // run by Close
}

func (k *keywords) GetRelevantDocuments(ctx context.Context, query string) ([]schema.Document, error) {
	k.mu.Lock()
	k.queries = append(k.queries, query)
	err, block := k.err, k.block
	k.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !('a' <= r && r <= 'z') })
	var out []schema.Document
	for _, d := range k.docs {
		text := strings.ToLower(d.PageContent + " " + d.Metadata["title"].(string))
		n := 0
		for _, w := range words {
			if len(w) > 3 && strings.Contains(text, w) {
				n++
			}
		}
		if n > 0 {
			d.Score = float32(n) / float32(len(words))
			if k.name != "" {
				d.Metadata = map[string]any{"id": k.name + "/" + d.Metadata["id"].(string), "title": d.Metadata["title"], "source": d.Metadata["source"]}
			}
			out = append(out, d)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out, nil
}

func (k *keywords) Close() error {
	k.closed.Add(1)
	if k.onClose != nil {
		return k.onClose()
	}
	return nil
}

func (k *keywords) asked() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.queries)
}

// texts returns the text of each message of req.
func texts(req llmtest.Request) []string { return describe(req.Messages) }

// Generic retrieval: the passages go with the user's message of that turn
// only, after the history; the memory keeps the message as it was written,
// so the next turn's prompt starts with exactly the previous one's
// remembered exchange (a cacheable prefix) and carries no stale passages.
func TestKnowledgeGenericPromptOnly(t *testing.T) {
	r := &keywords{docs: lore}
	noted := llmtest.ScriptFunc(func(*llmtest.Request) (llmtest.Reply, error) { return llmtest.Reply{Text: "noted"}, nil })
	f := newServerFixture(t, noted, &ai.Config{Knowledge: &ai.Knowledge{Retriever: r, MaxPassages: 2}})
	ctx := begin(t)
	id := memID(t, ctx)
	req := f.req("Who forged Dawnbreaker?")
	req.Method.Tools = nil

	r1 := must[*ai.Reply](t)(f.svc.Chat(ctx, req))
	first := f.requests()[0]
	want1 := ai.AugmentMessage("Who forged Dawnbreaker?", []schema.Document{lore[0], lore[1]})
	wantStrings(t, "first prompt", texts(first), "system: You are terse.", "human: "+want1)
	if !strings.Contains(want1, "[1] Dawnbreaker (lore/dawnbreaker.md)\nDawnbreaker is a sword") {
		t.Fatalf("augmented message:\n%s", want1)
	}
	if got := sourceIDs(r1.Sources); !slices.Equal(got, []string{"dawnbreaker", "aldra"}) {
		t.Fatalf("reply sources %v", got)
	}
	wantStrings(t, "memory after the first turn", f.memory(ctx, id),
		"system: You are terse.", "human: Who forged Dawnbreaker?", "ai: noted")

	req2 := f.req("How many crowns to sharpen?")
	req2.Method.Tools = nil
	must[*ai.Reply](t)(f.svc.Chat(ctx, req2))
	second := f.requests()[1]
	got := texts(second)
	wantStrings(t, "second prompt's prefix", got[:3], f.memory(ctx, id)[:3]...)
	if !strings.Contains(got[3], "twelve crowns") || strings.Contains(got[3], "glows at dawn") {
		t.Fatalf("second turn's message:\n%s", got[3])
	}
	for _, m := range f.memory(ctx, id) {
		if strings.Contains(m, "Passages from the knowledge base") {
			t.Fatalf("the memory holds passages: %q", m)
		}
	}
	if q := r.asked(); !slices.Equal(q, []string{"Who forged Dawnbreaker?", "How many crowns to sharpen?"}) {
		t.Fatalf("queries %q", q)
	}
}

func sourceIDs(src []ai.Source) []string {
	var ids []string
	for _, s := range src {
		ids = append(ids, s.ID)
	}
	return ids
}

// rewriter answers the rewrite request with a fixed query, and everything
// else like echo.
func rewriter(query string) llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if len(req.Messages) > 0 && strings.Contains(texts(*req)[0], "standalone search query") {
			return llmtest.Reply{Text: query}, nil
		}
		return llmtest.Reply{Text: "re: " + req.LastUserText()}, nil
	})
}

// With RewriteWithModel, "and the fees?" is searched as the model's
// standalone rewrite of it; the first turn, without history, asks nothing.
func TestKnowledgeRewriteWithModel(t *testing.T) {
	r := &keywords{docs: lore}
	srv := llmtest.NewServer(rewriter("Sunken Forge fees to reforge a blade"), nil)
	t.Cleanup(srv.Close)
	llm := must[*openai.LLM](t)(srv.Client())
	f := newFixture(t, llm, &ai.Config{Knowledge: &ai.Knowledge{Retriever: r, MaxPassages: 1, Rewrite: ai.RewriteWithModel(llm)}})
	f.srv = srv
	ctx := begin(t)
	req := f.req("Tell me about the Sunken Forge.")
	req.Method.Tools = nil
	must[*ai.Reply](t)(f.svc.Chat(ctx, req))
	if n := len(f.requests()); n != 1 {
		t.Fatalf("%d model calls on the first turn, want 1 (no rewrite without history)", n)
	}
	req2 := f.req("and the fees?")
	req2.Method.Tools = nil
	reply := must[*ai.Reply](t)(f.svc.Chat(ctx, req2))
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	rw := texts(reqs[1])
	if len(rw) != 2 || !strings.Contains(rw[1], "User: Tell me about the Sunken Forge.") || !strings.Contains(rw[1], "Last message: and the fees?") {
		t.Fatalf("rewrite request: %q", rw)
	}
	if q := r.asked(); q[1] != "Sunken Forge fees to reforge a blade" {
		t.Fatalf("queries %q", q)
	}
	if got := sourceIDs(reply.Sources); !slices.Equal(got, []string{"forge-fees"}) {
		t.Fatalf("sources %v", got)
	}
	last := texts(reqs[2])
	if !strings.Contains(last[len(last)-1], "fifty crowns") || !strings.HasSuffix(last[len(last)-1], "Message:\nand the fees?") {
		t.Fatalf("answer's prompt: %q", last)
	}
}

// A Rewrite hook of the application's: its query is searched.
func TestKnowledgeRewriteHook(t *testing.T) {
	r := &keywords{docs: lore}
	var seen []int
	f := newServerFixture(t, echo(), &ai.Config{Knowledge: &ai.Knowledge{Retriever: r, Rewrite: func(_ context.Context, user string, history []llms.MessageContent) (string, error) {
		seen = append(seen, len(history))
		return "nightglass " + user, nil
	}}})
	ctx := begin(t)
	req := f.req("where is it mined?")
	req.Method.Tools = nil
	reply := must[*ai.Reply](t)(f.svc.Chat(ctx, req))
	must[*ai.Reply](t)(f.svc.Chat(ctx, req))
	if q := r.asked(); q[0] != "nightglass where is it mined?" || !slices.Equal(seen, []int{0, 3}) {
		t.Fatalf("queries %q, history lengths %v", q, seen)
	}
	if got := sourceIDs(reply.Sources); len(got) == 0 || got[0] != "nightglass" {
		t.Fatalf("sources %v", got)
	}
}

// searcher calls the search tool once with query, then answers with the
// passages' ids it was given.
func searcher(query string) llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		results := req.LastToolResults()
		if len(results) == 0 {
			if !slices.Contains(req.ToolNames(), ai.DefaultSearchTool) {
				return llmtest.Reply{Text: "no search tool"}, nil
			}
			return calls(call(ai.DefaultSearchTool, fmt.Sprintf(`{"query":%q}`, query))), nil
		}
		var passages []ai.Passage
		if err := json.Unmarshal([]byte(results[0].Content), &passages); err != nil {
			return llmtest.Reply{Text: "error: " + results[0].Content}, nil
		}
		var ids []string
		for _, p := range passages {
			ids = append(ids, p.ID)
		}
		return llmtest.Reply{Text: "from " + strings.Join(ids, ",")}, nil
	})
}

// Agentic retrieval: the model is offered the search tool (after the
// method's own tools), calls it, and reads the passages as JSON; the user
// message goes unchanged.
func TestKnowledgeAgentic(t *testing.T) {
	r := &keywords{docs: lore}
	f := newServerFixture(t, searcher("nightglass hills"), &ai.Config{Knowledge: &ai.Knowledge{Retriever: r, Mode: ai.RetrievalAgentic, MaxPassages: 2}})
	ctx := begin(t)
	reply := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Where is nightglass mined?")))
	if reply.Content != "from nightglass,ember-hills" {
		t.Fatalf("answer %q", reply.Content)
	}
	reqs := f.requests()
	if names := reqs[0].ToolNames(); len(names) != len(testTools)+1 || names[len(names)-1] != ai.DefaultSearchTool {
		t.Fatalf("tools %q", names)
	}
	def := reqs[0].Tools[len(testTools)].Function
	params, _ := json.Marshal(def.Parameters)
	if !strings.Contains(string(params), `"query"`) || def.Description == "" {
		t.Fatalf("search tool %+v", def)
	}
	wantStrings(t, "first prompt", texts(reqs[0]), "system: You are terse.", "human: Where is nightglass mined?")
	if got := sourceIDs(reply.Sources); !slices.Equal(got, []string{"nightglass", "ember-hills"}) {
		t.Fatalf("sources %v", got)
	}
	if q := r.asked(); !slices.Equal(q, []string{"nightglass hills"}) {
		t.Fatalf("queries %q", q)
	}
	ex := reply.Executions[0]
	if ex.Name != ai.DefaultSearchTool || ex.Err != nil || !strings.Contains(ex.Text, `"content":"Nightglass is a dark crystal`) {
		t.Fatalf("execution %+v", ex)
	}
	// The answer's model call read the passages; the memory keeps their ids.
	if got := reqs[1].LastToolResults(); len(got) != 1 || got[0].Content != ex.Text {
		t.Fatalf("the model was told %+v", got)
	}
	compact := `{"passages":["nightglass","ember-hills"],"note":"the passages' text is not remembered: search again to read them"}`
	mem := f.memory(ctx, memID(t, ctx))
	wantStrings(t, "memory", mem,
		"system: You are terse.", "human: Where is nightglass mined?",
		`ai: call search_knowledge {"query":"nightglass hills"}`,
		"tool: result search_knowledge "+compact,
		"ai: from nightglass,ember-hills")
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("And the hills?")))
	if got := texts(f.requests()[2]); got[3] != "tool: result search_knowledge "+compact {
		t.Fatalf("the next turn's prompt: %q", got)
	}
}

// RememberPassages keeps the search results whole in the memory.
func TestKnowledgeAgenticRememberPassages(t *testing.T) {
	f := newServerFixture(t, searcher("nightglass"), &ai.Config{Knowledge: &ai.Knowledge{Retriever: &keywords{docs: lore}, Mode: ai.RetrievalAgentic, MaxPassages: 1, RememberPassages: true}})
	ctx := begin(t)
	reply := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("Where is nightglass mined?")))
	if mem := f.memory(ctx, memID(t, ctx)); mem[3] != "tool: result search_knowledge "+reply.Executions[0].Text {
		t.Fatalf("memory %q", mem)
	}
}

// Modes per method: Methods overrides Mode; RetrievalOff neither searches
// nor offers the tool.
func TestKnowledgeModePerMethod(t *testing.T) {
	r := &keywords{docs: lore}
	f := newServerFixture(t, searcher("forge fees"), &ai.Config{Knowledge: &ai.Knowledge{
		Retriever: r,
		Methods:   map[string]ai.RetrievalMode{"Ask": ai.RetrievalAgentic, "Plain": ai.RetrievalOff},
	}})
	ctx := begin(t)
	must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("fees?")))
	plain := f.req("Sunken Forge fees?")
	plain.Method.Name, plain.Method.Tools = "Plain", nil
	reply := must[*ai.Reply](t)(f.svc.Chat(ctx, plain))
	if reply.Content != "no search tool" || len(reply.Sources) != 0 {
		t.Fatalf("plain: %+v", reply)
	}
	generic := f.req("Sunken Forge fees?")
	generic.Method.Name, generic.Method.Tools = "Generic", nil
	reply = must[*ai.Reply](t)(f.svc.Chat(ctx, generic))
	if reply.Content != "no search tool" || len(reply.Sources) == 0 || !strings.Contains(f.requests()[3].LastUserText(), "twelve crowns") {
		t.Fatalf("generic: %+v", reply)
	}
	if q := r.asked(); !slices.Equal(q, []string{"forge fees", "Sunken Forge fees?"}) {
		t.Fatalf("queries %q", q)
	}
}

// scopes makes one retriever per scope, each labelling its passages with
// its number, and counts them.
type scopes struct {
	mu      sync.Mutex
	made    []*keywords
	inScope []string // the scope id each was made in
}

func (s *scopes) forScope(ctx context.Context) (schema.Retriever, error) {
	id, err := chat.ID(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := &keywords{docs: lore, name: fmt.Sprint("r", len(s.made)+1)}
	s.made = append(s.made, k)
	s.inScope = append(s.inScope, id)
	return k, nil
}

// open returns the number of retrievers made and not closed, and fails the
// test for one closed twice.
func (s *scopes) open(t *testing.T) int {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for i, k := range s.made {
		switch k.closed.Load() {
		case 0:
			n++
		case 1:
		default:
			t.Fatalf("retriever %d closed %d times", i+1, k.closed.Load())
		}
	}
	return n
}

func (s *scopes) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.made)
}

// Per scope: each scope, nested or not, searches its own retriever, made
// on its first retrieval and closed when it ends.
func TestKnowledgePerScope(t *testing.T) {
	sc := &scopes{}
	f := newServerFixture(t, echo(), &ai.Config{Knowledge: &ai.Knowledge{ForScope: sc.forScope, MaxPassages: 1}})
	ctx := begin(t)
	ask := func(text string) *ai.Reply {
		t.Helper()
		req := f.req(text)
		req.Method.Tools = nil
		return must[*ai.Reply](t)(f.svc.Chat(ctx, req))
	}
	if got := sourceIDs(ask("Dawnbreaker?").Sources); !slices.Equal(got, []string{"r1/dawnbreaker"}) {
		t.Fatalf("top scope's sources %v", got)
	}
	if err := chat.PushRoute(ctx, "lore"); err != nil {
		t.Fatal(err)
	}
	if got := sourceIDs(ask("Nightglass?").Sources); !slices.Equal(got, []string{"r2/nightglass"}) {
		t.Fatalf("nested scope's sources %v", got)
	}
	ask("Ember Hills?")
	if sc.count() != 2 || sc.open(t) != 2 {
		t.Fatalf("%d retrievers made, %d open; want 2, 2", sc.count(), sc.open(t))
	}
	if err := chat.Pop(ctx); err != nil {
		t.Fatal(err)
	}
	if sc.open(t) != 1 || sc.made[1].closed.Load() != 1 {
		t.Fatalf("after Pop: %d open, the nested one closed %d times", sc.open(t), sc.made[1].closed.Load())
	}
	if got := sourceIDs(ask("Aldra taught?").Sources); !slices.Equal(got, []string{"r1/aldra"}) {
		t.Fatalf("top scope's sources after Pop %v", got)
	}
	if err := chat.End(ctx); err != nil {
		t.Fatal(err)
	}
	if sc.count() != 2 || sc.open(t) != 0 {
		t.Fatalf("after End: %d made, %d open", sc.count(), sc.open(t))
	}
	// Outside a scope there is no retriever to search.
	req := f.req("Dawnbreaker?")
	req.MemoryID = "explicit"
	req.Method.Tools = nil
	if _, err := f.svc.Chat(context.Background(), req); !errors.Is(err, ai.ErrRetrieval) || !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("outside a scope: %v", err)
	}
}

// Sessions of a router: a route pushes a nested route whose service has a
// knowledge of its own; the page gets the Sources events; closing every
// session releases every per-scope retriever.
func TestKnowledgeSessionsReleaseRetrievers(t *testing.T) {
	leaktest.Check(t)
	srv := llmtest.NewServer(searcher("forge"), nil)
	t.Cleanup(srv.Close)
	llm := must[*openai.LLM](t)(srv.Client())
	topScopes, loreScopes := &scopes{}, &scopes{}
	top := ai.NewService(svcName, &ai.Config{Model: llm, Logger: (&logBuffer{}).logger(), Knowledge: &ai.Knowledge{ForScope: topScopes.forScope, MaxPassages: 1}})
	nested := ai.NewService("example.com/app.Lore", &ai.Config{Model: llm, Logger: (&logBuffer{}).logger(), Knowledge: &ai.Knowledge{ForScope: loreScopes.forScope, Mode: ai.RetrievalAgentic, MaxPassages: 1}})
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}
	p := chatimpl.NewPackage("example.com/app")
	p.AddRoute(chatimpl.RouteSpec{Name: "menu", Default: true, Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		if req.UserMessage() == "lore" {
			return chat.PushRoute(ctx, "lore")
		}
		r, err := top.Chat(ctx, &ai.Request{Method: method, User: req.UserMessage()})
		if err != nil {
			return err
		}
		return chat.Response(ctx).Message(r.Content)
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "lore", Handle: func(ctx context.Context) error {
		req := chat.Request(ctx)
		r, err := nested.Chat(ctx, &ai.Request{Method: method, User: req.UserMessage()})
		if err != nil {
			return err
		}
		return chat.Response(ctx).Message(r.Content)
	}})
	router := must[*chat.Router](t)(chat.NewRouter(nil, p))
	client := chat.NewLocalClient(router)
	defer client.Close()

	const sessions = 4
	var mu sync.Mutex
	var events []string
	var all []chat.Session
	for i := range sessions {
		s, err := client.Builder().On(protocol.EventSources, func(ev chat.Event) {
			var data ai.Sources
			if err := ev.Decode(&data); err != nil {
				t.Error(err)
			}
			mu.Lock()
			events = append(events, fmt.Sprintf("%s %s %s %q %v", data.Query, data.Sources[0].ID, data.Sources[0].Title, data.Sources[0].Source, data.Sources[0].Score > 0))
			mu.Unlock()
		}).Connect(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
		for _, text := range []string{"Dawnbreaker?", "lore", "anything"} {
			if err := s.Chat(context.Background(), text); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			mu.Lock()
			wantStrings(t, "events", events,
				`Dawnbreaker? r1/dawnbreaker Dawnbreaker "lore/dawnbreaker.md" true`,
				`forge r1/dawnbreaker Dawnbreaker "lore/dawnbreaker.md" true`)
			mu.Unlock()
		}
	}
	if topScopes.count() != sessions || loreScopes.count() != sessions {
		t.Fatalf("retrievers made: %d top, %d lore; want %d each", topScopes.count(), loreScopes.count(), sessions)
	}
	for _, s := range all {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if n, m := topScopes.open(t), loreScopes.open(t); n != 0 || m != 0 {
		t.Fatalf("after closing the sessions: %d top and %d lore retrievers open", n, m)
	}
}

// A failing or slow retriever fails the turn with ErrRetrieval before any
// model call: nothing is remembered, and the next turn works.
func TestKnowledgeRetrievalFails(t *testing.T) {
	r := &keywords{docs: lore, err: errors.New("index offline")}
	f := newServerFixture(t, echo(), &ai.Config{Knowledge: &ai.Knowledge{Retriever: r, Timeout: 20 * time.Millisecond}})
	ctx := begin(t)
	id := memID(t, ctx)
	req := f.req("Dawnbreaker?")
	req.Method.Tools = nil
	_, err := f.svc.Chat(ctx, req)
	if !errors.Is(err, ai.ErrRetrieval) || !strings.Contains(err.Error(), "index offline") {
		t.Fatalf("failing retriever: %v", err)
	}
	r.mu.Lock()
	r.err, r.block = nil, true
	r.mu.Unlock()
	_, err = f.svc.Chat(ctx, req)
	if !errors.Is(err, ai.ErrRetrieval) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow retriever: %v", err)
	}
	if f.srv.Calls() != 0 {
		t.Fatalf("%d model calls", f.srv.Calls())
	}
	wantStrings(t, "memory after the failures", f.memory(ctx, id))
	r.mu.Lock()
	r.block = false
	r.mu.Unlock()
	reply := must[*ai.Reply](t)(f.svc.Chat(ctx, req))
	if len(reply.Sources) == 0 {
		t.Fatalf("reply %+v", reply)
	}
	wantStrings(t, "memory", f.memory(ctx, id), "system: You are terse.", "human: Dawnbreaker?", "ai: "+reply.Content)
}

// With Degrade, a failing retriever is logged and the turn answers without
// passages.
func TestKnowledgeRetrievalDegrades(t *testing.T) {
	r := &keywords{docs: lore, err: errors.New("index offline")}
	f := newServerFixture(t, echo(), &ai.Config{Knowledge: &ai.Knowledge{Retriever: r, Degrade: true}})
	ctx := begin(t)
	req := f.req("Dawnbreaker?")
	req.Method.Tools = nil
	reply := must[*ai.Reply](t)(f.svc.Chat(ctx, req))
	if reply.Content != "re: Dawnbreaker?" || len(reply.Sources) != 0 {
		t.Fatalf("reply %+v", reply)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "retrieval failed; answering without passages") || !strings.Contains(logs, "index offline") {
		t.Fatalf("logs: %s", logs)
	}
}

// In agentic mode a failed search is told to the model, which goes on.
func TestKnowledgeAgenticSearchFails(t *testing.T) {
	r := &keywords{docs: lore, err: errors.New("index offline")}
	f := newServerFixture(t, searcher("forge"), &ai.Config{Knowledge: &ai.Knowledge{Retriever: r, Mode: ai.RetrievalAgentic}})
	ctx := begin(t)
	reply := must[*ai.Reply](t)(f.svc.Chat(ctx, f.req("fees?")))
	if !strings.HasPrefix(reply.Content, "error: ") || !strings.Contains(reply.Content, "index offline") || !errors.Is(reply.Executions[0].Err, ai.ErrRetrieval) {
		t.Fatalf("reply %+v", reply)
	}
}

// Check reports a knowledge without a retriever, and a search tool named
// like a generated tool.
func TestKnowledgeCheck(t *testing.T) {
	llm := llmtest.NewModel(echo(), nil)
	svc := ai.NewService(svcName, &ai.Config{Model: llm, Knowledge: &ai.Knowledge{}})
	if err := svc.Check(); !errors.Is(err, ai.ErrNoRetriever) {
		t.Fatalf("no retriever: %v", err)
	}
	svc = ai.NewService(svcName, &ai.Config{Model: llm, Knowledge: &ai.Knowledge{Retriever: &keywords{}, Mode: ai.RetrievalAgentic, ToolName: "weather"}})
	svc.AddMethods(&ai.Method{Name: "Ask", Tools: (&toolbox{}).tools()})
	if err := svc.Check(); !errors.Is(err, ai.ErrToolClash) {
		t.Fatalf("clash: %v", err)
	}
	svc = ai.NewService(svcName, &ai.Config{Model: llm, Knowledge: &ai.Knowledge{Retriever: &keywords{}, Methods: map[string]ai.RetrievalMode{"Aks": ai.RetrievalOff}}})
	svc.AddMethods(&ai.Method{Name: "Ask"})
	if err := svc.Check(); err == nil || !strings.Contains(err.Error(), `names "Aks", which is not a method of the service (its methods: Ask)`) {
		t.Fatalf("unknown method: %v", err)
	}
	svc = ai.NewService(svcName, &ai.Config{Model: llm, Knowledge: &ai.Knowledge{Retriever: &keywords{}, Mode: 9}})
	if err := svc.Check(); err == nil || !strings.Contains(err.Error(), "unknown RetrievalMode(9)") {
		t.Fatalf("unknown mode: %v", err)
	}
}

// A streamed turn retrieves like any other: the passages reach the model,
// and the memory keeps the message as written.
func TestKnowledgeStream(t *testing.T) {
	f := newServerFixture(t, answerWith("Aldra forged it."), &ai.Config{Knowledge: &ai.Knowledge{Retriever: &keywords{docs: lore}, MaxPassages: 1}})
	ctx := begin(t)
	req := f.req("Who forged Dawnbreaker?")
	req.Method.Tools = nil
	var text strings.Builder
	for chunk, err := range f.svc.Stream(ctx, req) {
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(chunk)
	}
	if text.String() != "Aldra forged it." || !f.requests()[0].Stream {
		t.Fatalf("streamed %q", text.String())
	}
	if got := f.requests()[0].LastUserText(); !strings.Contains(got, "glows at dawn") {
		t.Fatalf("the model was sent %q", got)
	}
	wantStrings(t, "memory", f.memory(ctx, memID(t, ctx)), "system: You are terse.", "human: Who forged Dawnbreaker?", "ai: Aldra forged it.")
}

// Telemetry: a retrieval span per retrieval, with the passages' ids and
// scores; their content and the query only with RecordContent.
func TestKnowledgeTelemetry(t *testing.T) {
	for _, content := range []bool{false, true} {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
		f := newServerFixture(t, echo(), &ai.Config{
			Knowledge: &ai.Knowledge{Name: "lore", Retriever: &keywords{docs: lore}, MaxPassages: 1},
			Telemetry: ai.Telemetry{TracerProvider: tp, RecordContent: content},
		})
		ctx := begin(t)
		req := f.req("Dawnbreaker?")
		req.Method.Tools = nil
		must[*ai.Reply](t)(f.svc.Chat(ctx, req))
		var attrs map[string]string
		for _, s := range rec.Ended() {
			if s.Name() == "retrieval lore" {
				attrs = map[string]string{}
				for _, a := range s.Attributes() {
					attrs[string(a.Key)] = a.Value.String()
				}
			}
		}
		if attrs == nil {
			t.Fatal("no retrieval span")
		}
		docs := `[{"id":"dawnbreaker","score":1}]`
		if content {
			docs = `[{"id":"dawnbreaker","score":1,"content":"` + lore[0].PageContent + `"}]`
		}
		if attrs["gen_ai.operation.name"] != "retrieval" || attrs["gen_ai.data_source.id"] != "lore" || attrs["gen_ai.retrieval.documents"] != docs {
			t.Fatalf("content %v: attributes %v", content, attrs)
		}
		if q, ok := attrs["gen_ai.retrieval.query.text"]; ok != content || content && q != "Dawnbreaker?" {
			t.Fatalf("content %v: query %q", content, q)
		}
		_ = tp.Shutdown(context.Background())
	}
}

// A durable conversation that leaves the process (Detach) closes its
// per-scope retrievers; the process that resumes it makes its own on its
// first retrieval, and closes them when the conversation ends.
func TestKnowledgePerScopeDurable(t *testing.T) {
	cs := chat.NewInMemoryConversationStore(nil)
	start := func(node string, sc *scopes) *chat.LocalClient {
		svc := ai.NewService(svcName, &ai.Config{
			Model:     llmtest.NewModel(echo(), nil),
			Memory:    memory.NewManager(&memory.ManagerOptions{Store: chatstoretest.InMemoryMemories(cs), Policy: memory.Window(20, nil)}),
			Logger:    (&logBuffer{}).logger(),
			Knowledge: &ai.Knowledge{ForScope: sc.forScope, MaxPassages: 1},
		})
		method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}
		p := chatimpl.NewPackage("example.com/app")
		p.AddRoute(chatimpl.RouteSpec{Name: "menu", Default: true, Handle: func(ctx context.Context) error {
			req := chat.Request(ctx)
			r, err := svc.Chat(ctx, &ai.Request{Method: method, User: req.UserMessage()})
			if err != nil {
				return err
			}
			return chat.SendValue(ctx, strings.Join(sourceIDs(r.Sources), ","))
		}})
		router := must[*chat.Router](t)(chat.NewRouter(&chat.RouterOptions{Store: cs, Node: node}, p))
		client := chat.NewLocalClient(router)
		t.Cleanup(func() { _ = client.Close() })
		return client
	}
	scA, scB := &scopes{}, &scopes{}
	a := start("a", scA)
	var got messages
	s := must[chat.Session](t)(a.Builder().OnMessage(got.add).Connect(context.Background(), ""))
	id, token := s.ConversationID(), s.ResumeToken()
	chatOK(t, s, "Dawnbreaker?")
	if m := got.take(); m != "r1/dawnbreaker" {
		t.Fatalf("sources %q", m)
	}
	if err := a.Detach(); err != nil {
		t.Fatal(err)
	}
	if scA.count() != 1 || scA.open(t) != 0 {
		t.Fatalf("after Detach: %d made, %d open", scA.count(), scA.open(t))
	}
	b := start("b", scB)
	s2 := must[chat.Session](t)(b.Builder().OnMessage(got.add).Resume(context.Background(), id, token))
	chatOK(t, s2, "Nightglass?")
	if m := got.take(); m != "r1/nightglass" || scB.count() != 1 || scB.inScope[0] != id {
		t.Fatalf("after the resume: sources %q, %d retrievers made in %q", m, scB.count(), scB.inScope)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	if scB.open(t) != 0 {
		t.Fatal("the resumed conversation's retriever is open after Close")
	}
}
