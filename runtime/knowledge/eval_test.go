package knowledge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/embeddings"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/chatscopes/chatgen/runtime/knowledge"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// loreDir is the lore corpus shipped with the weaponbuilder example, which
// the evaluation questions are about.
const loreDir = "../../examples/weaponbuilder/lore"

// evalQuestion is a question of testdata/eval/questions.json, the
// documents that answer it and quotes of the answers: a passage is
// relevant when it comes from one of the documents and holds one of the
// quotes (spaces compared loosely), whatever the chunking.
type evalQuestion struct {
	Question string   `json:"question"`
	Sources  []string `json:"sources"`
	Answers  []string `json:"answers"`
}

// answers reports whether c answers q.
func (q *evalQuestion) answers(c knowledge.Chunk) bool {
	text := strings.Join(strings.Fields(c.Text), " ")
	return slices.Contains(q.Sources, c.Source) &&
		slices.ContainsFunc(q.Answers, func(a string) bool { return strings.Contains(text, a) })
}

// loadQuestions reads the evaluation questions.
func loadQuestions(t testing.TB) []evalQuestion {
	t.Helper()
	b, err := os.ReadFile("testdata/eval/questions.json")
	if err != nil {
		t.Fatal(err)
	}
	var qs []evalQuestion
	if err := json.Unmarshal(b, &qs); err != nil {
		t.Fatal(err)
	}
	return qs
}

// loreIndex loads the lore corpus into a new index with opts.
func loreIndex(t testing.TB, opts *knowledge.IndexOptions) *knowledge.Index {
	t.Helper()
	o := &knowledge.IndexDirOptions{Load: knowledge.LoadOptions{ChunkSize: 300}}
	if opts != nil {
		o.Index = *opts
	}
	ix, err := knowledge.IndexDir(context.Background(), os.DirFS(loreDir), o)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// llmtestEmbedder returns langchaingo's OpenAI embedder over an llmtest
// server's embeddings endpoint.
func llmtestEmbedder(t testing.TB) (embeddings.Embedder, *llmtest.Server) {
	t.Helper()
	return llmtestEmbedderDims(t, 0)
}

// llmtestEmbedderDims is llmtestEmbedder asking for vectors of dims
// dimensions (0: the server's default).
func llmtestEmbedderDims(t testing.TB, dims int) (embeddings.Embedder, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Sequence(), nil)
	t.Cleanup(srv.Close)
	opts := []openai.Option{openai.WithEmbeddingModel("text-embedding-3-small")}
	if dims > 0 {
		opts = append(opts, openai.WithEmbeddingDimensions(dims))
	}
	llm, err := srv.Client(opts...)
	if err != nil {
		t.Fatal(err)
	}
	e, err := embeddings.NewEmbedder(llm)
	if err != nil {
		t.Fatal(err)
	}
	return e, srv
}

// recallAt returns, for each k of ks, the share of questions with a
// passage answering them among the first k hits of mode.
func recallAt(t testing.TB, ix *knowledge.Index, qs []evalQuestion, mode knowledge.Mode, ks []int) []float64 {
	t.Helper()
	found := make([]int, len(ks))
	for _, q := range qs {
		hits, err := ix.Search(context.Background(), q.Question, slices.Max(ks), mode, 0)
		if err != nil {
			t.Fatalf("%s: %q: %v", mode, q.Question, err)
		}
		first := len(hits) + 1 // rank of the first relevant hit, from 1
		for i, h := range hits {
			if q.answers(h.Chunk) {
				first = i + 1
				break
			}
		}
		if first > 1 && testing.Verbose() {
			t.Logf("%s: %q: first relevant hit at %d of %v", mode, q.Question, first, sources(hits))
		}
		for i, k := range ks {
			if first <= k {
				found[i]++
			}
		}
	}
	out := make([]float64, len(ks))
	for i := range ks {
		out[i] = float64(found[i]) / float64(len(qs))
	}
	return out
}

// sources lists the sources of hits.
func sources(hits []knowledge.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.Source)
	}
	return out
}

// TestEvaluationRecall measures recall@1, 3 and 5 of each search mode on
// the lore questions, logs them as a table (the figures of
// docs/numbers.md) and fails when a mode falls below its floor. The floors
// are set a little below the measured figures (two or three questions
// fewer) and far above chance: with 44 passages of which one or two answer
// a question, a random ranking puts one in the top 5 about 15% of the
// time.
func TestEvaluationRecall(t *testing.T) {
	qs := loadQuestions(t)
	e, _ := llmtestEmbedder(t)
	ix := loreIndex(t, &knowledge.IndexOptions{Embedder: e})
	for _, q := range qs { // each question has a passage that answers it
		if !slices.ContainsFunc(ix.Chunks(), q.answers) {
			t.Fatalf("no passage of %v holds an answer %q to %q", q.Sources, q.Answers, q.Question)
		}
	}
	ks := []int{1, 3, 5}
	floors := map[knowledge.Mode][]float64{
		knowledge.Lexical:  {0.75, 0.85, 0.9},
		knowledge.Semantic: {0.6, 0.85, 0.9},
		knowledge.Hybrid:   {0.75, 0.9, 0.9},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%d questions, %d chunks\n| mode | recall@1 | recall@3 | recall@5 |\n|---|---|---|---|\n", len(qs), ix.Len())
	for _, mode := range []knowledge.Mode{knowledge.Lexical, knowledge.Semantic, knowledge.Hybrid} {
		r := recallAt(t, ix, qs, mode, ks)
		fmt.Fprintf(&table, "| %s | %.2f | %.2f | %.2f |\n", mode, r[0], r[1], r[2])
		for i, k := range ks {
			if r[i] < floors[mode][i] {
				t.Errorf("%s recall@%d = %.2f, below the floor %.2f", mode, k, r[i], floors[mode][i])
			}
		}
	}
	t.Log("\n" + table.String())
}

// TestEvaluationTokens logs what the retrieved passages weigh in a prompt
// against the whole corpus (llmtest's estimate, one token per 4 bytes):
// the cost side of putting the corpus in the system prompt instead.
func TestEvaluationTokens(t *testing.T) {
	qs := loadQuestions(t)
	ix := loreIndex(t, nil)
	files, err := filepath.Glob(filepath.Join(loreDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var corpus int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		corpus += llmtest.EstimateTextTokens(string(b))
	}
	for _, k := range []int{1, 3, 5} {
		var sum int
		for _, q := range qs {
			hits, err := ix.Search(context.Background(), q.Question, k, knowledge.Lexical, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hits {
				sum += llmtest.EstimateTextTokens(h.Text)
			}
		}
		mean := float64(sum) / float64(len(qs))
		t.Logf("top %d passages: %.0f tokens per question on average; the %d documents: %d tokens", k, mean, len(files), corpus)
		if mean <= 0 || mean >= float64(corpus) {
			t.Errorf("top %d passages weigh %.0f tokens, the corpus %d", k, mean, corpus)
		}
	}
}
