package recall_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/recall"
)

// told is a fact a player tells in an early conversation, asked about in
// a later one with other words, and the word of the fact that shows it
// was in the prompt.
type told struct{ tell, ask, key string }

// twenty are the facts of the 20-conversation benchmark. Recall is
// lexical (BM25, no embedder): each question shares at least one content
// word with its fact, but is phrased otherwise.
var twenty = []told{
	{"My name is Rowan.", "What name should you call me by?", "Rowan"},
	{"My favourite weapon kind is the crossbow.", "Which kind of weapon suits my taste?", "crossbow"},
	{"I am allergic to silver.", "Would a silver hilt be a problem for me?", "allergic"},
	{"My horse is called Pepper.", "Do you remember the horse I ride?", "Pepper"},
	{"I live in the harbour town of Saltmere.", "Which town should the courier deliver to?", "Saltmere"},
	{"My guild is the Lantern Guild.", "Which guild do I belong to?", "Lantern"},
	{"I prefer fire enchantments.", "What sort of enchantment do I like?", "fire"},
	{"My budget is forty gold crowns.", "How much gold can I spend on this?", "forty"},
	{"I fight left-handed.", "Should the grip suit a left or a right hand?", "left-handed"},
	{"My rival is a knight called Brann.", "Who is my rival again?", "Brann"},
	{"I am a level twelve ranger.", "Remind me what rank of ranger I reached.", "twelve"},
	{"My sister Ilse is a blacksmith.", "What does my sister do for a living?", "Ilse"},
	{"I collect dragon scales.", "What do I collect as a hobby?", "dragon"},
	{"My shield must be round.", "What shape should the shield have?", "round"},
	{"I hate heavy armour.", "Which armour should you avoid suggesting?", "heavy"},
	{"My lucky number is seven.", "Is there a number that brings me luck?", "seven"},
	{"I speak Elvish fluently.", "Can you write the inscription in a language I speak?", "Elvish"},
	{"My birthday is in the month of frost.", "When is my birthday?", "frost"},
	{"I am training with a bow master called Quill.", "Who is my master?", "Quill"},
	{"My old sword broke at the battle of Greyford.", "What happened to my previous sword?", "Greyford"},
}

// benchSystem is the system message of the benchmark's service: the size
// of a real assistant's instructions.
const benchSystem = system + ` You know the forges of the realm, their prices and their smiths. A weapon has a kind (sword, axe, bow, crossbow, spear, mace, dagger or staff), a material (iron, steel, bronze, silver, mithril or bone), a grip (one-handed, two-handed, left- or right-handed) and at most one enchantment (fire, frost, storm, venom, light or shadow). Price a weapon from its material and enchantment, tell the player when it exceeds their budget, and never invent a material or an enchantment that is not on these lists. When the player is done, summarise the weapon in one sentence with its price in gold crowns, and ask whether to send it to the forge.`

// TestTwentyConversations is the 20-conversation benchmark: ten early
// conversations tell two facts each among small talk; ten later ones ask
// about them with other words. Generic mode must put the fact in the
// prompt of ≥ 19 of the 20 questions, with ≤ 1.2× the prompt tokens of
// the same conversations without long-term memory. It logs recall@k, the
// token figures and the extraction calls' tokens (go test -v).
func TestTwentyConversations(t *testing.T) {
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: benchSystem}
	type run struct {
		chatPrompt, extractPrompt, extractCompletion, turns int
		answered, extractions                               int
		recalled                                            int // facts placed in the prompts of the questions
	}
	play := func(lt bool) run {
		var r run
		srv := llmtest.NewServer(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
			if isExtraction(req) {
				return extractor(req), nil
			}
			return llmtest.Reply{Text: "Understood. Shall we pick the material next?"}, nil
		}), nil)
		defer srv.Close()
		llm, err := srv.Client()
		if err != nil {
			t.Fatal(err)
		}
		cfg := ai.Config{Model: llm}
		if lt {
			cfg.LongTerm = recall.New(longterm.NewMemStore(nil), nil)
		}
		svc := ai.NewService(svcName, &cfg)
		player := chat.User{ID: "rowan@example.com"}
		say := func(ctx context.Context, msg string) {
			if _, err := svc.Chat(ctx, &ai.Request{Method: method, User: msg}); err != nil {
				t.Fatal(err)
			}
			r.turns++
		}
		for c := range 10 {
			ctx := conversation(t, player)
			say(ctx, "Hello, forge master.")
			say(ctx, twenty[2*c].tell+" "+twenty[2*c+1].tell)
			say(ctx, "Thanks, that is all for today.")
		}
		for c := range 10 {
			ctx := conversation(t, player)
			say(ctx, "Hello again.")
			for _, q := range twenty[2*c : 2*c+2] {
				n := len(srv.Requests())
				say(ctx, q.ask)
				for _, req := range srv.Requests()[n:] {
					if isExtraction(&req) {
						continue
					}
					last := req.LastUserText()
					if strings.Contains(last, q.key) {
						r.answered++
					}
					r.recalled += strings.Count(last, "\n\"")
				}
			}
		}
		for _, req := range srv.Requests() {
			if isExtraction(&req) {
				r.extractions++
				r.extractPrompt += req.PromptTokens
				r.extractCompletion += llmtest.EstimateTextTokens(extractor(&req).Text)
			} else {
				r.chatPrompt += req.PromptTokens
			}
		}
		return r
	}
	with, without := play(true), play(false)
	ratio := float64(with.chatPrompt) / float64(without.chatPrompt)
	t.Logf("20 conversations, %d turns: answered %d/20 (recall@%d = %.2f); %.1f facts per question's prompt",
		with.turns, with.answered, recall.DefaultMaxRecall, float64(with.answered)/20, float64(with.recalled)/20)
	t.Logf("chat prompt tokens: %d with long-term memory, %d without: %.3f×", with.chatPrompt, without.chatPrompt, ratio)
	t.Logf("extraction calls: %d, %d prompt tokens, %d completion tokens", with.extractions, with.extractPrompt, with.extractCompletion)
	if with.answered < 19 {
		t.Errorf("answered %d/20, want ≥ 19", with.answered)
	}
	if without.answered != 0 {
		t.Errorf("without long-term memory %d answers were in the prompt", without.answered)
	}
	if ratio > 1.2 {
		t.Errorf("prompt tokens %.3f× those without long-term memory, want ≤ 1.2×", ratio)
	}

}
