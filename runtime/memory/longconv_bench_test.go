package memory_test

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// The long-conversation benchmark: a scripted 200-turn conversation in
// which the user gives 20 facts in the first 20 turns, talks about other
// things for 160 turns, and asks for each fact in the last 20. It is played
// as an AI service plays a turn (the system message, the memory, the user
// message; then the turn is added to the memory in one Add) against
// llmtest models, with several memories:
//
//   - full history: everything, never evicted (a TokenWindow too big to
//     fill);
//   - token window: TokenWindow(2000), which forgets the oldest messages;
//   - compressing: Compressing(2000) with its default marks (summarise
//     when the messages pass 1000 tokens, down to 500);
//   - summary per eviction: Compressing(2000) with both marks at 1000, so
//     that every Add that must evict summarises (what a summary memory
//     without a low-water mark does, such as LangChain's
//     ConversationSummaryBufferMemory).
//
// The chat model answers a question from what it was sent: it looks for
// the fact in the prompt. The summarizer is a ModelSummarizer over a
// scripted model that keeps, from the current summary and the messages it
// folds in, every sentence marked as a fact, and drops the rest. Figures
// (per conversation): prompt tokens sent to the models (llmtest's estimate,
// summaries included), model calls (summaries included), summaries, and
// late questions answered out of 20:
//
//	go test ./runtime/memory -run '^$' -bench LongConversation -benchtime 1x
const (
	convTurns    = 200
	convFacts    = 20
	convBudget   = 2000
	convSystem   = "You are the armorer's assistant. Answer briefly and precisely."
	convQuestion = "QUESTION: what is "
)

// convFact returns the key and value of fact i.
func convFact(i int) (key, value string) {
	places := []string{"north gate", "vault", "forge", "armory", "cellar", "tower", "stable", "chapel", "mill", "harbour"}
	words := []string{"obsidian", "ember", "falcon", "granite", "willow", "cobalt", "thistle", "marrow", "quartz", "saffron"}
	return fmt.Sprintf("the password of the %s %d", places[i%len(places)], i/len(places)+1),
		fmt.Sprintf("%s-%d", words[(i*7)%len(words)], 1000+i*37)
}

// convFiller returns the n-th sentence of small talk.
func convFiller(n int) string {
	subjects := []string{"The blade", "My old shield", "The apprentice", "That axe head", "The quench tank", "The new bellows", "Our supplier", "The guild inspector"}
	verbs := []string{"needs more work on", "looked better after", "keeps complaining about", "was damaged during", "will be ready before", "smells of"}
	objects := []string{"the spring festival", "yesterday's storm", "the long winter", "the tournament in the capital", "the last delivery of charcoal", "the night shift"}
	return fmt.Sprintf("%s %s %s, or so I heard in week %d.", subjects[n%len(subjects)], verbs[(n/3)%len(verbs)], objects[(n/7)%len(objects)], n%52+1)
}

// convUser returns the user message of turn i.
func convUser(i int) string {
	switch {
	case i < convFacts:
		key, value := convFact(i)
		return fmt.Sprintf("Please keep this in mind. FACT: %s is %s. %s", key, value, convFiller(i))
	case i >= convTurns-convFacts:
		key, _ := convFact(i - (convTurns - convFacts))
		return convQuestion + key + "?"
	default:
		var b strings.Builder
		for j := range 2 + i%3 {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(convFiller(i*5 + j))
		}
		return b.String()
	}
}

var factRe = regexp.MustCompile(`FACT: [^.]*\.`)

// convChat is the assistant: it answers a question with the fact if the
// prompt holds it, and small talk with small talk.
func convChat() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		user := req.LastUserText()
		if key, ok := strings.CutPrefix(user, convQuestion); ok {
			key = strings.TrimSuffix(key, "?")
			for _, m := range req.Messages[:len(req.Messages)-1] {
				for _, p := range m.Parts {
					t, ok := p.(llms.TextContent)
					if !ok {
						continue
					}
					if _, after, ok := strings.Cut(t.Text, "FACT: "+key+" is "); ok {
						value, _, _ := strings.Cut(after, ".")
						return llmtest.Reply{Text: fmt.Sprintf("%s is %s.", key, value)}, nil
					}
				}
			}
			return llmtest.Reply{Text: "I do not remember that."}, nil
		}
		if strings.Contains(user, "FACT: ") {
			return llmtest.Reply{Text: "Noted, I will remember it."}, nil
		}
		return llmtest.Reply{Text: "I see. " + convFiller(req.Index*3+1) + " " + convFiller(req.Index*3+2)}, nil
	})
}

// convSummarizer is the summarizing model: the new summary is every fact
// of the current summary and of the messages, in order, once.
func convSummarizer() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		seen := map[string]bool{}
		var facts []string
		for _, f := range factRe.FindAllString(req.LastUserText(), -1) {
			if !seen[f] {
				seen[f] = true
				facts = append(facts, f)
			}
		}
		if len(facts) == 0 {
			return llmtest.Reply{Text: "The user and the assistant talked about the forge; nothing to remember."}, nil
		}
		return llmtest.Reply{Text: "The user gave these facts: " + strings.Join(facts, " ")}, nil
	})
}

// convResult is what one conversation cost and achieved.
type convResult struct {
	promptTokens, calls, summaries, summaryTokens, answered, maxPrompt int
}

// playConversation plays the conversation with policy; summarizer is the
// model behind policy's Summarizer, if any.
func playConversation(ctx context.Context, policy memory.Policy, summarizer *llmtest.Model) (convResult, error) {
	chat := llmtest.NewModel(convChat())
	mem, err := policy.New(ctx, memory.NewInMemoryStore(), "conversation")
	if err != nil {
		return convResult{}, err
	}
	system := llms.TextParts(llms.ChatMessageTypeSystem, convSystem)
	var r convResult
	for i := range convTurns {
		history, err := mem.Messages(ctx)
		if err != nil {
			return r, err
		}
		user := llms.TextParts(llms.ChatMessageTypeHuman, convUser(i))
		prompt := make([]llms.MessageContent, 0, len(history)+2)
		prompt = append(prompt, system)
		for _, m := range history {
			if m.Role != llms.ChatMessageTypeSystem {
				prompt = append(prompt, m)
			}
		}
		prompt = append(prompt, user)
		resp, err := chat.GenerateContent(ctx, prompt)
		if err != nil {
			return r, err
		}
		answer := resp.Choices[0].Content
		if i >= convTurns-convFacts {
			_, value := convFact(i - (convTurns - convFacts))
			if strings.Contains(answer, value) {
				r.answered++
			}
		}
		if err := mem.Add(ctx, system, user, llms.TextParts(llms.ChatMessageTypeAI, answer)); err != nil {
			return r, err
		}
	}
	for _, req := range chat.Requests() {
		r.calls++
		r.promptTokens += req.PromptTokens
		r.maxPrompt = max(r.maxPrompt, req.PromptTokens)
	}
	if summarizer != nil {
		for _, req := range summarizer.Requests() {
			r.calls++
			r.summaries++
			r.promptTokens += req.PromptTokens
			r.summaryTokens += req.PromptTokens
		}
	}
	return r, nil
}

func BenchmarkLongConversation(b *testing.B) {
	quiet := slog.New(slog.DiscardHandler)
	for _, v := range []struct {
		name   string
		policy func(sum memory.Summarizer) memory.Policy
	}{
		{"memory=full-history", func(memory.Summarizer) memory.Policy { return memory.TokenWindow(1<<30, nil) }},
		{"memory=token-window", func(memory.Summarizer) memory.Policy { return memory.TokenWindow(convBudget, nil) }},
		{"memory=compressing", func(sum memory.Summarizer) memory.Policy {
			return memory.Compressing(convBudget, sum, &memory.CompressOptions{Logger: quiet})
		}},
		{"memory=summary-per-eviction", func(sum memory.Summarizer) memory.Policy {
			return memory.Compressing(convBudget, sum, &memory.CompressOptions{
				TriggerTokens: convBudget / 2, KeepTokens: convBudget / 2, Logger: quiet,
			})
		}},
	} {
		b.Run(v.name, func(b *testing.B) {
			var r convResult
			for b.Loop() {
				summarizer := llmtest.NewModel(convSummarizer())
				var err error
				r, err = playConversation(b.Context(), v.policy(memory.NewModelSummarizer(summarizer, nil)), summarizer)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(r.promptTokens), "prompt-tokens/conv")
			b.ReportMetric(float64(r.calls), "model-calls/conv")
			b.ReportMetric(float64(r.summaries), "summaries/conv")
			b.ReportMetric(float64(r.summaryTokens), "summary-prompt-tokens/conv")
			b.ReportMetric(float64(r.maxPrompt), "max-prompt-tokens")
			b.ReportMetric(float64(r.answered), "answered/20")
		})
	}
}

// TestLongConversation pins what the benchmark shows: the compressing
// memory answers every late question, as the full history does, for a
// fraction of its tokens, where the token window answers none; and it
// summarises far less often than a summary per eviction.
func TestLongConversation(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	play := func(p func(memory.Summarizer) memory.Policy) convResult {
		t.Helper()
		summarizer := llmtest.NewModel(convSummarizer())
		r, err := playConversation(t.Context(), p(memory.NewModelSummarizer(summarizer, nil)), summarizer)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	full := play(func(memory.Summarizer) memory.Policy { return memory.TokenWindow(1<<30, nil) })
	window := play(func(memory.Summarizer) memory.Policy { return memory.TokenWindow(convBudget, nil) })
	compressing := play(func(sum memory.Summarizer) memory.Policy {
		return memory.Compressing(convBudget, sum, &memory.CompressOptions{Logger: quiet})
	})
	perEviction := play(func(sum memory.Summarizer) memory.Policy {
		return memory.Compressing(convBudget, sum, &memory.CompressOptions{TriggerTokens: convBudget / 2, KeepTokens: convBudget / 2, Logger: quiet})
	})
	t.Logf("full %+v\nwindow %+v\ncompressing %+v\nper eviction %+v", full, window, compressing, perEviction)
	switch {
	case full.answered != convFacts || compressing.answered != convFacts || perEviction.answered != convFacts:
		t.Fatalf("answered: full %d, compressing %d, per eviction %d; want %d", full.answered, compressing.answered, perEviction.answered, convFacts)
	case window.answered != 0:
		t.Fatalf("the token window answered %d: the facts were not evicted, the benchmark shows nothing", window.answered)
	case compressing.promptTokens*3 > full.promptTokens:
		t.Fatalf("compressing sent %d tokens, more than a third of the full history's %d", compressing.promptTokens, full.promptTokens)
	case compressing.maxPrompt > convBudget+100:
		t.Fatalf("compressing sent a prompt of %d tokens, over its budget", compressing.maxPrompt)
	case compressing.summaries*4 > perEviction.summaries:
		t.Fatalf("compressing summarised %d times, a summary per eviction %d: batching saves too little", compressing.summaries, perEviction.summaries)
	}
}
