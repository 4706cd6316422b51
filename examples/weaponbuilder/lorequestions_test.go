package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/schema"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/protocol"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// loreEval is a question of runtime/knowledge's evaluation set on the
// lore corpus, with quotes of the passages that answer it.
type loreEval struct {
	Question string   `json:"question"`
	Answers  []string `json:"answers"`
}

// loreEvalSet reads the evaluation set.
func loreEvalSet(t testing.TB) []loreEval {
	t.Helper()
	raw, err := os.ReadFile("../../runtime/knowledge/testdata/eval/questions.json")
	if err != nil {
		t.Fatal(err)
	}
	var qs []loreEval
	if err := json.Unmarshal(raw, &qs); err != nil {
		t.Fatal(err)
	}
	return qs
}

// loreSearch returns what the Main Menu's knowledge finds for query: the
// passages its search tool gives the model.
func loreSearch(t testing.TB, query string) []schema.Document {
	t.Helper()
	k, err := loreKnowledge(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	docs, err := k.Retriever.GetRelevantDocuments(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// squash returns s with its runs of white space made single spaces.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestLoreQuestionsAnsweredFromTheCorpus asks the Main Menu every
// question of the evaluation set through the Go websocket client, on the
// offline script: each is answered at the menu (no hand-off), after one
// search whose Sources event reaches the client with the passages the
// index ranks first for the question, and the answer is a sentence of one
// of those passages, with its title. It counts the answers that hold the
// evaluation's quote: what retrieval and the script's sentence picking
// achieve together.
func TestLoreQuestionsAnsweredFromTheCorpus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := serveOffline(t)
	client, err := ws.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+ws.RoutesPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	var (
		mu       sync.Mutex
		found    []ai.Sources
		answer   strings.Builder
		handOffs []string
	)
	session, err := client.Builder().
		On(protocol.EventSources, func(ev chat.Event) {
			var s ai.Sources
			if err := ev.Decode(&s); err != nil {
				t.Errorf("a Sources event that does not decode: %v", err)
			}
			mu.Lock()
			found = append(found, s)
			mu.Unlock()
		}).
		OnStream(func(c string) { mu.Lock(); answer.WriteString(c); mu.Unlock() }).
		On("conversation", func(ev chat.Event) { mu.Lock(); handOffs = append(handOffs, ev.Text()); mu.Unlock() }).
		Connect(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	questions := loreEvalSet(t)
	quoted := 0
	for _, q := range questions {
		mu.Lock()
		found, handOffs = nil, nil
		answer.Reset()
		mu.Unlock()
		if err := session.Chat(ctx, q.Question); err != nil {
			t.Fatalf("%q: %v", q.Question, err)
		}
		mu.Lock()
		got, said, moved := found, answer.String(), handOffs
		mu.Unlock()
		if len(moved) > 0 {
			t.Errorf("%q handed the player over: %v", q.Question, moved)
			continue
		}
		docs := loreSearch(t, q.Question)
		var want []ai.Source
		for _, d := range docs {
			want = append(want, ai.Source{ID: d.Metadata["id"].(string), Title: d.Metadata["title"].(string), Source: d.Metadata["source"].(string), Score: d.Score})
		}
		if len(got) != 1 || got[0].Query != q.Question || !slices.Equal(got[0].Sources, want) {
			t.Errorf("%q: Sources events %+v, want one with %+v", q.Question, got, want)
			continue
		}
		// The answer is a sentence of a passage the search returned, and
		// names that passage's title.
		sentence, title, ok := strings.Cut(said, " (so says *")
		title, closed := strings.CutSuffix(title, "*)")
		if !ok || !closed {
			t.Errorf("%q: the answer %q names no passage", q.Question, said)
			continue
		}
		if !slices.ContainsFunc(docs, func(d schema.Document) bool {
			return d.Metadata["title"] == title && strings.Contains(squash(d.PageContent), sentence)
		}) {
			t.Errorf("%q: the answer %q is not a sentence of a passage titled %q among those searched", q.Question, sentence, title)
		}
		if slices.ContainsFunc(q.Answers, func(quote string) bool { return strings.Contains(sentence, squash(quote)) }) {
			quoted++
		}
	}
	t.Logf("%d of %d lore answers hold the evaluation's quote", quoted, len(questions))
	// The floor is two under the measured 23 (docs/numbers.md).
	if floor := 21; quoted < floor {
		t.Errorf("%d of %d lore answers hold the evaluation's quote, fewer than %d", quoted, len(questions), floor)
	}
}

// TestTerminalLore: in the terminal, a lore question at the counter prints
// the passages searched, then the answer drawn from them; without the MCP
// lore server a legend is searched for in the corpus too; a question the
// lore cannot answer is told so; the weapon builder nested under the menu
// has no lore to search.
func TestTerminalLore(t *testing.T) {
	model := llmtest.NewModel(llmtest.ScriptFunc(playArmorer), nil)
	a, err := newApp(context.Background(), model, slog.New(slog.DiscardHandler), storage{})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	in := strings.NewReader("who forged Dawnbreaker?\ntell me the legend of mithril\nwhat do the zorblax eat?\nbuild a sword\nwho forged Dawnbreaker?\n")
	if err := runTerminal(context.Background(), a.router, in, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	showsInOrder(t, got,
		"[lore: Dawnbreaker — dawnbreaker.md ",
		"armorer: It was forged for Queen Isolde in the year of the Long Winter",
		"(so says *Dawnbreaker*)",
		"[lore: Mithril — mithril.md ",
		"armorer: Mithril was forged in starfire", // the MCP server's legend, told by the corpus
		"(so says *Mithril*)",
		"armorer: The old books say nothing of that.",
		"── » Weapon builder ──",
		"armorer: A fine sword! What shall we call it?",
		"armorer: A fine sword! What shall we call it?", // no lore in the builder
	)
	if n := strings.Count(got, "[lore: "); n != 2 {
		t.Fatalf("%d lore searches printed, want 2 (the zorblax are in no passage):\n%s", n, got)
	}
	for _, req := range model.Requests() {
		offered := req.ToolNames()
		if slices.Contains(offered, "buildWeapon") != slices.Contains(offered, ai.DefaultSearchTool) {
			t.Fatalf("a request offered %v: the lore search belongs to the Main Menu only", offered)
		}
	}
}
