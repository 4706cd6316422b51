package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	airt "github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/longterm/recall"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// The long-conversation benchmark: a scripted 200-turn conversation in
// which the user gives 20 facts in the first 20 turns, talks about other
// things for 160 turns, and asks for each fact in the last 20. It is played
// through an AI service (each turn: the system message, the memory, the
// user message; then the turn is added to the memory in one Add) against
// an llmtest model that simulates a provider's prompt cache, OpenAI's or
// Anthropic's (see convProfiles), with several memories:
//
//   - full history: everything, never evicted (a TokenWindow too big to
//     fill);
//   - token window: TokenWindow(2000), which forgets the oldest messages;
//   - compressing: Compressing(2000) with its default marks (summarise
//     when the messages pass 1000 tokens, down to 500);
//   - summary per eviction: Compressing(2000) with both marks at 1000, so
//     that every Add that must evict summarises (what a summary memory
//     without a low-water mark does, such as LangChain's
//     ConversationSummaryBufferMemory);
//   - cache-aware window: TokenWindow(2000) evicting in blocks down to
//     1200 tokens (memory.WindowOptions.EvictTo), with the breakpoints of the runtime's
//     Anthropic client;
//   - cache-aware compressing: Compressing(2000) summarising at 1800
//     tokens down to 800, with the breakpoints, and a ModelSummarizer that
//     reuses the conversation (ReuseConversation) so that its prompts are
//     served by the cache too.
//
// The other memories are played without breakpoints, as by a framework
// that does not mark its prompts: Anthropic caches none of them (the full
// history has them: it is the baseline to beat). The model summarises
// too, as a service's own model would, sharing the cache. The floor is
// what a memory of 2000 tokens could cost at best: each prompt as big as
// the full history's up to the budget, all read from the cache but the
// turn's new messages. Turns are taken to come within the cache's TTL.
//
// The chat model answers a question from what it was sent: it looks for
// the fact in the prompt. The summarizer is a ModelSummarizer over a
// scripted model that keeps, from the current summary and the messages it
// folds in, every sentence marked as a fact, and drops the rest. Figures
// (per conversation): prompt tokens sent to the models (llmtest's estimate,
// summaries included), of which uncached, read from the cache and written
// to it; the bill in uncached-token equivalents; the share read from the
// cache; model calls (summaries included), summaries, and late questions
// answered out of 20:
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
	calls := 0 // the chat calls so far (the model may serve summaries too)
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		n := calls
		calls++
		user := ownText(req.LastUserText())
		if key, ok := strings.CutPrefix(user, convQuestion); ok {
			key = strings.TrimSuffix(key, "?")
			// The fact is in the history, or in the facts a long-term
			// memory recalled into the user message.
			for _, m := range req.Messages {
				for _, p := range m.Parts {
					text, ok := partText(p)
					if !ok {
						continue
					}
					if _, after, ok := strings.Cut(text, "FACT: "+key+" is "); ok {
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
		return llmtest.Reply{Text: "I see. " + convFiller(n*3+1) + " " + convFiller(n*3+2)}, nil
	})
}

// ownText returns the user's own message of a prompt's user message: what
// follows the line "Message:" after the knowledge passages, recalled
// facts or context blocks the AI service put before it, or all of it.
func ownText(user string) string {
	if i := strings.LastIndex(user, "\nMessage:\n"); i >= 0 {
		return user[i+len("\nMessage:\n"):]
	}
	return user
}

// convExtractor is the extraction model of a long-term memory
// (runtime/longterm/recall): it lists the facts the user's message of the
// turn gives, as written ("FACT: ... is ...."), that the known facts do not
// hold.
func convExtractor(req *llmtest.Request) llmtest.Reply {
	known, turn, _ := strings.Cut(req.LastUserText(), "\nTurn:\n")
	facts := []string{}
	for _, line := range strings.Split(turn, "\n") {
		if rest, ok := strings.CutPrefix(line, "User: "); ok {
			for _, f := range factRe.FindAllString(rest, -1) {
				if !strings.Contains(known, f) {
					facts = append(facts, f)
				}
			}
		}
	}
	out, _ := json.Marshal(map[string][]string{"facts": facts})
	return llmtest.Reply{Text: string(out)}
}

// isExtraction reports whether req is a long-term memory's extraction
// call: its system message is recall.ExtractSystem.
func isExtraction(req *llmtest.Request) bool {
	if len(req.Messages) == 0 || req.Messages[0].Role != llms.ChatMessageTypeSystem || len(req.Messages[0].Parts) == 0 {
		return false
	}
	t, _ := partText(req.Messages[0].Parts[0])
	return t == recall.ExtractSystem
}

// convSummarizer is the summarizing model: the new summary is every fact
// of the current summary and of the messages it folds in, in order, once.
// It reads a ModelSummarizer's transcript, or, with ReuseConversation, the
// conversation: the summary message and the oldest messages after it, as
// many as the instructions say. Asked for a segment to append to the
// summary (memory.SummaryRequest.Append), it writes only the facts the
// summary does not hold yet.
func convSummarizer() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		text := req.LastUserText()
		appends := strings.Contains(text, memory.AppendInstruction)
		prev := "" // the summary a segment is appended to
		if m := foldRe.FindStringSubmatch(text); m != nil {
			n, _ := strconv.Atoi(m[1])
			msgs := req.Messages[1 : len(req.Messages)-1] // after the system message, before the instructions
			var b strings.Builder
			if len(msgs) > 0 {
				if s, ok := memory.SummaryText(unmarked(msgs[0])); ok {
					if appends {
						prev = s
					} else {
						b.WriteString(s)
					}
					msgs = msgs[1:]
				}
			}
			for _, msg := range msgs[:min(n, len(msgs))] {
				for _, p := range msg.Parts {
					if t, ok := partText(p); ok {
						b.WriteString(" " + t)
					}
				}
			}
			text = b.String()
		} else if appends {
			prev, text, _ = strings.Cut(text, "\nMessages to fold into it, oldest first:\n")
		}
		seen := map[string]bool{}
		for _, f := range factRe.FindAllString(prev, -1) {
			seen[f] = true
		}
		var facts []string
		for _, f := range factRe.FindAllString(text, -1) {
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

// foldRe finds how many messages a ModelSummarizer with
// ReuseConversation asks to fold.
var foldRe = regexp.MustCompile(`the (\d+) oldest messages`)

// unmarked returns m without cache marks on its parts.
func unmarked(m llms.MessageContent) llms.MessageContent {
	out := llms.MessageContent{Role: m.Role}
	for _, p := range m.Parts {
		if c, ok := p.(llms.CachedContent); ok {
			p = c.ContentPart
		}
		out.Parts = append(out.Parts, p)
	}
	return out
}

// convModel is the model of a conversation: the assistant, and the
// summarizer when a request is a ModelSummarizer's. One model serves both,
// as when a service's memory summarises with the service's own model, so
// that they share the provider's prompt cache.
func convModel() llmtest.Script {
	chat, sum := convChat(), convSummarizer()
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		switch {
		case isSummaryRequest(req):
			return sum.Next(req)
		case isExtraction(req):
			return convExtractor(req), nil
		}
		return chat.Next(req)
	})
}

// isSummaryRequest reports whether req is a ModelSummarizer's: its system
// message, or with ReuseConversation its last user message, starts with
// the instructions.
func isSummaryRequest(req *llmtest.Request) bool {
	if strings.HasPrefix(req.LastUserText(), memory.DefaultSummaryInstructions) {
		return true
	}
	if len(req.Messages) == 0 || len(req.Messages[0].Parts) == 0 {
		return false
	}
	t, _ := partText(req.Messages[0].Parts[0])
	return req.Messages[0].Role == llms.ChatMessageTypeSystem && t == memory.DefaultSummaryInstructions
}

// convProfile is a provider's prompt cache and price list: the rules the
// scripted models' simulated cache follows (llmtest.Options.PromptCache) and
// the multipliers of the input price it bills cache reads and writes at.
type convProfile struct {
	name        string
	rules       llmtest.CacheRules
	model       string  // the model name, for the cache's minimum length
	read, write float64 // price of a token read from or written to the cache, per uncached token
}

// convProfiles: OpenAI bills cached input at half price (gpt-4o; newer
// models at 0.25× or 0.1×) and writes nothing extra; Anthropic bills
// reads at 0.1× and 5-minute writes at 1.25×.
var convProfiles = []convProfile{
	{"openai", llmtest.CacheRulesOpenAI, "gpt-4o", 0.5, 1},
	{"anthropic", llmtest.CacheRulesAnthropic, "claude-sonnet-4-5", 0.1, 1.25},
}

// convMemory is a memory the conversation is played with.
type convMemory struct {
	name   string
	policy func(sum memory.Summarizer) memory.Policy
	// marks plays the conversation through the runtime's Anthropic client
	// shaping, which places cache breakpoints (with the OpenAI profile,
	// whose cache is automatic, it changes nothing). Without it no
	// breakpoint is sent, as by a framework that does not mark its
	// prompts, and Anthropic caches nothing.
	marks bool
	// reuse makes the summarizer send the conversation as the chat model
	// was sent it (ModelSummarizerOptions.ReuseConversation).
	reuse bool
}

// convMemories are the memories of the benchmark.
func convMemories(logger *slog.Logger) []convMemory {
	return []convMemory{
		{"full-history", func(memory.Summarizer) memory.Policy { return memory.TokenWindow(1<<30, nil, nil) }, true, false},
		{"token-window", func(memory.Summarizer) memory.Policy { return memory.TokenWindow(convBudget, nil, nil) }, false, false},
		{"compressing", func(sum memory.Summarizer) memory.Policy {
			return memory.Compressing(convBudget, sum, &memory.CompressOptions{Logger: logger})
		}, false, false},
		{"summary-per-eviction", func(sum memory.Summarizer) memory.Policy {
			return memory.Compressing(convBudget, sum, &memory.CompressOptions{
				TriggerTokens: convBudget / 2, KeepTokens: convBudget / 2, Logger: logger,
			})
		}, false, false},
		{"cache-aware-window", func(memory.Summarizer) memory.Policy {
			return memory.TokenWindow(convBudget, nil, &memory.WindowOptions{EvictTo: convWindowLow})
		}, true, false},
		{"cache-aware-compressing", func(sum memory.Summarizer) memory.Policy {
			return memory.Compressing(convBudget, sum, &memory.CompressOptions{
				TriggerTokens: convCacheTrigger, KeepTokens: convCacheKeep, Logger: logger,
			})
		}, true, true},
	}
}

// The marks of the cache-aware memories.
const (
	// convWindowLow: the window evicts down to 60% of its budget.
	convWindowLow = convBudget * 3 / 5
	// convCacheTrigger and convCacheKeep: compress late (the cap, summary
	// included, comes first) and keep enough that the prompt after a
	// compression is about the cache's minimum (1,024 tokens): the gap
	// between compressions is wide, and every prompt cacheable.
	convCacheTrigger = convBudget * 9 / 10
	convCacheKeep    = convBudget * 2 / 5
)

// convResult is what one conversation cost and achieved. Tokens are
// llmtest's estimates; the summarizer's prompts count as input too.
type convResult struct {
	promptTokens, calls, summaries, summaryTokens, answered, maxPrompt int
	// cached and written are the prompt tokens read from and written to
	// the simulated cache; billed is the input bill in uncached tokens
	// (uncached + read×cached + write×written).
	cached, written int
	billed          float64
}

// uncached is the prompt tokens neither read from nor written to the cache.
func (r convResult) uncached() int { return r.promptTokens - r.cached - r.written }

// partText returns the text of a part, marked for caching or not.
func partText(p llms.ContentPart) (string, bool) {
	if c, ok := p.(llms.CachedContent); ok {
		p = c.ContentPart
	}
	t, ok := p.(llms.TextContent)
	return t.Text, ok
}

// playConversation plays the conversation with mem through an AI service,
// the models simulating profile's prompt cache.
func playConversation(ctx context.Context, profile convProfile, mem convMemory) (convResult, error) {
	model := llmtest.NewModel(convModel(), &llmtest.Options{ModelName: profile.model, PromptCache: &llmtest.PromptCache{Rules: profile.rules, Now: func() time.Time { return time.Unix(0, 0) }}})
	client := airt.ClientOpenAI
	opts := &memory.ModelSummarizerOptions{ReuseConversation: mem.reuse}
	if mem.marks {
		client = airt.ClientAnthropic
		if profile.rules == llmtest.CacheRulesAnthropic {
			opts.CacheControl = &llms.CacheControl{Type: "ephemeral"}
		}
	}
	quiet := slog.New(slog.DiscardHandler)
	svc := airt.NewService("example.com/armory.Assistant", &airt.Config{
		Model: model, Client: client, Logger: quiet,
		Memory: memory.NewManager(&memory.ManagerOptions{Policy: mem.policy(memory.NewModelSummarizer(model, opts))}),
	})
	method := &airt.Method{Name: "Chat", System: convSystem}
	var r convResult
	for i := range convTurns {
		reply, err := svc.Chat(ctx, &airt.Request{Method: method, MemoryID: "conversation", User: convUser(i)})
		if err != nil {
			return r, err
		}
		if i >= convTurns-convFacts {
			_, value := convFact(i - (convTurns - convFacts))
			if strings.Contains(reply.Content, value) {
				r.answered++
			}
		}
	}
	for _, req := range model.Requests() {
		r.calls++
		r.promptTokens += req.PromptTokens
		r.cached += req.Cache.ReadTokens
		r.written += req.Cache.WriteTokens
		if isSummaryRequest(&req) {
			r.summaries++
			r.summaryTokens += req.PromptTokens
		} else {
			r.maxPrompt = max(r.maxPrompt, req.PromptTokens)
		}
	}
	r.billed = float64(r.uncached()) + profile.read*float64(r.cached) + profile.write*float64(r.written)
	return r, nil
}

// convFloor is the least a conversation with a memory of convBudget
// tokens could be billed: every prompt as big as the full history's, up to
// the budget, all of it read from the cache but the turn's new messages
// (the previous answer and the user message), which are written.
func convFloor(profile convProfile, full []llmtest.Request) float64 {
	floor, prev := 0.0, 0
	for _, req := range full {
		size := min(req.PromptTokens, convBudget)
		fresh := min(size, req.PromptTokens-prev)
		prev = req.PromptTokens
		floor += profile.read*float64(size-fresh) + profile.write*float64(fresh)
	}
	return floor
}

func BenchmarkLongConversation(b *testing.B) {
	quiet := slog.New(slog.DiscardHandler)
	for _, profile := range convProfiles {
		for _, mem := range convMemories(quiet) {
			b.Run("provider="+profile.name+"/memory="+mem.name, func(b *testing.B) {
				var r convResult
				for b.Loop() {
					var err error
					if r, err = playConversation(b.Context(), profile, mem); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(r.promptTokens), "prompt-tokens/conv")
				b.ReportMetric(float64(r.uncached()), "uncached-tokens/conv")
				b.ReportMetric(float64(r.cached), "cached-tokens/conv")
				b.ReportMetric(float64(r.written), "written-tokens/conv")
				b.ReportMetric(r.billed, "billed-tokens/conv")
				b.ReportMetric(100*float64(r.cached)/float64(r.promptTokens), "%cached")
				b.ReportMetric(float64(r.calls), "model-calls/conv")
				b.ReportMetric(float64(r.summaries), "summaries/conv")
				b.ReportMetric(float64(r.maxPrompt), "max-prompt-tokens")
				b.ReportMetric(float64(r.answered), "answered/20")
			})
		}
		b.Run("provider="+profile.name+"/memory=floor", func(b *testing.B) {
			chat := llmtest.NewModel(convChat(), nil)
			for b.Loop() {
				chat.Reset()
				if _, err := playFull(b.Context(), chat); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(convFloor(profile, chat.Requests()), "billed-tokens/conv")
		})
	}
}

// playFull plays the conversation with the full history on chat, for the
// sizes of its prompts.
func playFull(ctx context.Context, chat llms.Model) (*airt.Reply, error) {
	svc := airt.NewService("example.com/armory.Assistant", &airt.Config{
		Model: chat, Logger: slog.New(slog.DiscardHandler),
		Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.TokenWindow(1<<30, nil, nil)}),
	})
	method := &airt.Method{Name: "Chat", System: convSystem}
	var reply *airt.Reply
	for i := range convTurns {
		var err error
		if reply, err = svc.Chat(ctx, &airt.Request{Method: method, MemoryID: "conversation", User: convUser(i)}); err != nil {
			return nil, err
		}
	}
	return reply, nil
}

// TestLongConversation pins what the benchmark shows: the compressing
// memory answers every late question, as the full history does, for a
// fraction of its tokens, where the token window answers none; and it
// summarises far less often than a summary per eviction.
func TestLongConversation(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	results := map[string]convResult{} // by profile/memory
	for _, profile := range convProfiles {
		for _, mem := range convMemories(quiet) {
			r, err := playConversation(t.Context(), profile, mem)
			if err != nil {
				t.Fatal(err)
			}
			results[profile.name+"/"+mem.name] = r
			t.Logf("%s/%s: %+v", profile.name, mem.name, r)
		}
	}
	full, window, compressing, perEviction := results["openai/full-history"], results["openai/token-window"],
		results["openai/compressing"], results["openai/summary-per-eviction"]
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

	// The cache figures: a sliding window caches little; evicting in
	// blocks, most of its prompts are served from the cache (OpenAI).
	// With Anthropic, the full history is served well by the cache, and
	// the cache-aware compressing memory still answers. What the memories
	// cost, output and summaries included, on a clock that moves, is the
	// business of TestConversationCost (longconv_cost_test.go): this
	// benchmark's clock stands still and bills no output, so its bill is
	// no goal.
	share := func(r convResult) float64 { return float64(r.cached) / float64(r.promptTokens) }
	blocks := results["openai/cache-aware-window"]
	aFull, aCompressing := results["anthropic/full-history"], results["anthropic/cache-aware-compressing"]
	switch {
	case share(window) > 0.2:
		t.Fatalf("the sliding window had %.0f%% of its prompt tokens from the cache: the benchmark shows nothing", 100*share(window))
	case share(blocks) < 0.7:
		t.Fatalf("the block-evicting window had %.0f%% of its prompt tokens from the cache, want 70%% at least", 100*share(blocks))
	case aCompressing.answered != convFacts:
		t.Fatalf("cache-aware compressing answered %d, want %d", aCompressing.answered, convFacts)
	case share(aFull) < 0.9:
		t.Fatalf("the full history had %.0f%% of its prompt tokens from Anthropic's cache: the breakpoints do not work", 100*share(aFull))
	}
}
