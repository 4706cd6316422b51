package ai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/knowledge"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// The lore corpus of the weaponbuilder example and runtime/knowledge's
// evaluation questions on it.
const (
	loreDir       = "../../examples/weaponbuilder/lore"
	loreQuestions = "../knowledge/testdata/eval/questions.json"
)

// loreTurns is how many questions of the evaluation set the conversation
// of TestKnowledgeLoreCorpusTokens asks, one per turn.
const loreTurns = 8

// TestKnowledgeLoreCorpusTokens measures the prompt tokens of an 8-turn
// conversation on the real lore corpus, indexed by runtime/knowledge
// (BM25), answered three ways — generic retrieval, agentic retrieval (one
// search a turn) and the whole corpus in the system prompt — and in how
// many turns a quote of the answer (the evaluation set's) reached the
// model. The questions are every third of the evaluation set. The passages
// are split as the weaponbuilder splits them (300 characters) and as
// runtime/knowledge does by default (800). The figures are logged for
// docs/numbers.md; the test checks that retrieval sends fewer tokens than
// the corpus and still gets the answer to the model in at least 7 turns of
// 8.
func TestKnowledgeLoreCorpusTokens(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile(loreQuestions)
	if err != nil {
		t.Fatal(err)
	}
	var questions []struct {
		Question string   `json:"question"`
		Answers  []string `json:"answers"`
	}
	if err := json.Unmarshal(raw, &questions); err != nil {
		t.Fatal(err)
	}
	corpus, files := loreCorpusText(t)
	const system = "You answer questions on the lore of the realm, tersely, from the passages you are given."
	answer := "It is told in the lore you asked about; the passages say so."
	for _, split := range []struct {
		chunkSize, k int
	}{{300, 3}, {800, 2}, {800, 3}} {
		ix, err := knowledge.IndexDir(ctx, os.DirFS(loreDir), &knowledge.IndexDirOptions{Load: knowledge.LoadOptions{ChunkSize: split.chunkSize}})
		if err != nil {
			t.Fatal(err)
		}
		strategies := []struct {
			name   string
			cfg    ai.Config
			system string
			script llmtest.Script
		}{
			{"generic", ai.Config{Knowledge: &ai.Knowledge{Retriever: ix.Retriever(split.k, nil)}}, system, answerWith(answer)},
			{"agentic", ai.Config{Knowledge: &ai.Knowledge{Retriever: ix.Retriever(split.k, nil), Mode: ai.RetrievalAgentic}}, system, searchThenAnswer(answer)},
			{"corpus in system prompt", ai.Config{}, system + "\n\nThe lore:\n\n" + corpus, answerWith(answer)},
		}
		totals := map[string]int{}
		for _, st := range strategies {
			f := newServerFixture(t, st.script, &st.cfg)
			c := begin(t)
			reached := 0
			for i := range loreTurns {
				q := questions[i*3%len(questions)]
				req := f.req(q.Question)
				req.Method.System, req.Method.Tools = st.system, nil
				n := len(f.requests())
				must[*ai.Reply](t)(f.svc.Chat(c, req))
				if quoteSent(f.requests()[n:], q.Answers) {
					reached++
				}
			}
			var line []string
			uncached := 0
			for _, c := range costs(f.requests(), loreTurns) {
				line = append(line, fmt.Sprint(c.prompt))
				totals[st.name] += c.prompt
				uncached += c.uncached
			}
			t.Logf("passages of %d characters, k=%d, %s: per turn %s; total %d, uncached %d; the answer's quote reached the model in %d/%d turns",
				split.chunkSize, split.k, st.name, strings.Join(line, " "), totals[st.name], uncached, reached, loreTurns)
			if reached < loreTurns-1 {
				t.Errorf("passages of %d characters, k=%d, %s: the answer's quote reached the model in %d turns of %d", split.chunkSize, split.k, st.name, reached, loreTurns)
			}
		}
		if corpusTotal := totals["corpus in system prompt"]; totals["generic"] >= corpusTotal || totals["agentic"] >= corpusTotal {
			t.Errorf("passages of %d characters, k=%d: retrieval costs no less than the corpus in the prompt: %v", split.chunkSize, split.k, totals)
		}
	}
	t.Logf("corpus: %d files, %d bytes", files, len(corpus))
}

// loreCorpusText returns the lore files, one after the other, and how
// many there are.
func loreCorpusText(t *testing.T) (string, int) {
	t.Helper()
	names, err := fs.Glob(os.DirFS(loreDir), "*.md")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, name := range names {
		text, err := os.ReadFile(loreDir + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(text)
		b.WriteString("\n")
	}
	return b.String(), len(names)
}

// quoteSent reports whether one of quotes is in what reqs sent the model
// (white space aside, as a passage may break a quote across lines).
func quoteSent(reqs []llmtest.Request, quotes []string) bool {
	for _, r := range reqs {
		sent := squash(strings.ReplaceAll(strings.Join(describe(r.Messages), " "), `\n`, " "))
		for _, q := range quotes {
			if strings.Contains(sent, squash(q)) {
				return true
			}
		}
	}
	return false
}

// squash returns s with its runs of white space made single spaces.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }
