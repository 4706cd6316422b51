package ai_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// relics returns a synthetic corpus of n passages of about 90 tokens each
// (the size of a small text-split chunk), the first five being lore's.
func relics(n int) []schema.Document {
	docs := append([]schema.Document(nil), lore...)
	adjs := []string{"gilded", "cracked", "ancient", "humming", "frozen", "ashen"}
	things := []string{"shield", "lantern", "crown", "spear", "chalice", "horn"}
	places := []string{"the Ember Hills", "the Sunken Forge", "the capital's vault", "the northern abbey"}
	for i := len(docs); i < n; i++ {
		id := fmt.Sprintf("relic-%02d", i)
		text := fmt.Sprintf("Relic %d is a %s %s kept in %s. It was made in the year %d of the old calendar by a guild whose name is lost, "+
			"and it is said to answer only to those who speak its true name. Pilgrims pay %d crowns to see it, and the keepers record every visit in a ledger.",
			i, adjs[i%len(adjs)], things[i%len(things)], places[i%len(places)], 300+7*i, 3+i%11)
		docs = append(docs, doc(id, fmt.Sprintf("Relic %d", i), text))
	}
	return docs
}

// costTurns is the scripted conversation the strategies are measured on:
// the third message needs the conversation to be understood.
var costTurns = []string{
	"Who forged Dawnbreaker?",
	"Where is nightglass mined?",
	"And what does the forge charge to sharpen a blade?",
	"Tell me about Relic 12.",
}

// turnCost is what one turn cost, over all its model calls.
type turnCost struct{ calls, prompt, uncached int }

// costs sums the prompt tokens of reqs by turn: a request that does not
// carry tool results starts a turn. uncached counts, per request, the
// tokens after the longest message prefix it shares with an earlier
// request (what a provider caching prompt prefixes bills in full).
func costs(reqs []llmtest.Request, turns int) []turnCost {
	out := make([]turnCost, turns)
	turn := -1
	for i, r := range reqs {
		if len(r.LastToolResults()) == 0 {
			turn++
		}
		c := &out[turn]
		c.calls++
		c.prompt += r.PromptTokens
		shared := 0
		for _, p := range reqs[:i] {
			shared = max(shared, commonPrefix(p.Messages, r.Messages))
		}
		c.uncached += r.PromptTokens - llmtest.EstimatePromptTokens(r.Messages[:shared], r.Tools)
	}
	return out
}

// commonPrefix returns the number of leading messages a and b share.
func commonPrefix(a, b []llms.MessageContent) int {
	da, db := describe(a), describe(b)
	n := 0
	for n < len(da) && n < len(db) && da[n] == db[n] {
		n++
	}
	return n
}

// The prompt tokens per turn of a scripted four-turn conversation, answered
// from a corpus in three ways: generic retrieval (two passages per turn),
// agentic retrieval (one search per turn, two passages), and the whole
// corpus in the system message. The figures are logged for docs/numbers.md;
// the test checks that retrieval costs less than the corpus as soon as the
// corpus is more than a handful of passages, and that generic retrieval
// keeps every earlier prompt a cacheable prefix.
func TestKnowledgePromptTokens(t *testing.T) {
	const system = "You answer questions on the lore of the realm, tersely, from the passages you are given."
	answer := "It is told in the lore you asked about; the passages say so."
	for _, size := range []int{5, 40} {
		corpus := relics(size)
		strategies := []struct {
			name   string
			script llmtest.Script
			cfg    ai.Config
			system string
		}{
			{"generic", answerWith(answer), ai.Config{Knowledge: &ai.Knowledge{Retriever: &keywords{docs: corpus}, MaxPassages: 2}}, system},
			{"agentic", searchThenAnswer(answer), ai.Config{Knowledge: &ai.Knowledge{Retriever: &keywords{docs: corpus}, MaxPassages: 2, Mode: ai.RetrievalAgentic}}, system},
			{"corpus in system prompt", answerWith(answer), ai.Config{}, system + "\n\nThe lore:\n\n" + corpusText(corpus)},
		}
		totals := map[string]int{}
		for _, st := range strategies {
			f := newServerFixture(t, st.script, &st.cfg)
			ctx := begin(t)
			for _, text := range costTurns {
				req := f.req(text)
				req.Method.System, req.Method.Tools = st.system, nil
				must[*ai.Reply](t)(f.svc.Chat(ctx, req))
			}
			var line []string
			for i, c := range costs(f.requests(), len(costTurns)) {
				line = append(line, fmt.Sprintf("turn %d: %d calls %d tokens (%d uncached)", i+1, c.calls, c.prompt, c.uncached))
				totals[st.name] += c.prompt
			}
			t.Logf("corpus of %d passages, %s: %s; total %d", size, st.name, strings.Join(line, "; "), totals[st.name])
			if st.name == "generic" {
				reqs := f.requests()
				for i := 1; i < len(reqs); i++ {
					// The previous turn's remembered exchange is this prompt's prefix.
					if n := commonPrefix(reqs[i-1].Messages, reqs[i].Messages); n != len(reqs[i-1].Messages)-1 {
						t.Fatalf("generic: request %d shares %d messages with the previous one, want %d", i+1, n, len(reqs[i-1].Messages)-1)
					}
				}
			}
		}
		if size >= 40 && (totals["generic"] >= totals["corpus in system prompt"] || totals["agentic"] >= totals["corpus in system prompt"]) {
			t.Fatalf("corpus of %d: retrieval costs no less than the corpus in the prompt: %v", size, totals)
		}
	}
}

func answerWith(text string) llmtest.Script {
	return llmtest.ScriptFunc(func(*llmtest.Request) (llmtest.Reply, error) { return llmtest.Reply{Text: text}, nil })
}

// searchThenAnswer searches with the user's message, then answers.
func searchThenAnswer(text string) llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if len(req.LastToolResults()) == 0 {
			return calls(call(ai.DefaultSearchTool, fmt.Sprintf(`{"query":%q}`, req.LastUserText()))), nil
		}
		return llmtest.Reply{Text: text}, nil
	})
}

func corpusText(docs []schema.Document) string {
	var b strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&b, "## %s\n%s\n\n", d.Metadata["title"], d.PageContent)
	}
	return b.String()
}
