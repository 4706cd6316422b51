package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"
	"github.com/tmc/langchaingo/llms/openai"

	airt "github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/recall"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// The cost benchmark: the 200-turn conversation of the long-conversation
// benchmark (convUser, convModel) played through an AI service and
// langchaingo's real OpenAI or Anthropic client against llmtest's server
// of that wire, whose simulated prompt cache follows a model profile
// (llmtest.ModelProfiles: the provider's rules, the model's minimum
// cacheable prompt, a 5-minute TTL) on a clock that moves: each turn comes
// costTurnGap after the previous one, plus the gap of a pause pattern. The
// bill is what the server reported over the wire, response by response
// (usage: uncached input, cache writes, cache reads, output), priced with
// the profile's list prices; the summarizer's calls go to the same server
// and are billed too. It is reported cumulated after 25, 50, 100 and 200
// turns, relative to the full history's bill under the same profile and
// pattern, with the floors: what a memory of costSmallBudget or
// costBigBudget tokens could cost at best. Deterministic: token counts, a fake clock and a
// seeded pause pattern, no timing.
//
// By default TestConversationCost plays the profiles of the goals (Sonnet
// 4.5 and Haiku 4.5, whose minimum is 4,096) and checks them; with
// CHATGEN_NUMBERS=1 it plays every profile and prints the tables of
// docs/numbers.md:
//
//	CHATGEN_NUMBERS=1 go test ./runtime/memory -run '^TestConversationCost$' -count=1 -v -timeout 30m
const (
	// costTurnGap is the time between two turns without a pause: the
	// user reads the answer and types.
	costTurnGap = 30 * time.Second
	// costBigBudget is the budget of the guide's previous recipe,
	// Compressing(8000,7200/4400); the floors are computed for it and
	// for costSmallBudget.
	costBigBudget   = 8000
	costSmallBudget = 2000
)

// costCuts are the conversation lengths the bill is reported at.
var costCuts = []int{25, 50, 100, 200}

// costPause is a pause pattern: the extra time before turn i.
type costPause struct {
	name string
	gap  func(i int, rng *rand.Rand) time.Duration
	// draws is how many seeds of its random gaps the marks are weighed
	// over (0: one, the tables' seed); the tables show the first.
	draws int
}

// costSeed is the seed of the random pause pattern's gaps in the tables;
// its further draws take the next ones.
const costSeed = 36

// costPauses are the pause patterns of the benchmark.
func costPauses() []costPause {
	return []costPause{
		{"none", func(int, *rand.Rand) time.Duration { return 0 }, 0},
		{"10min/20turns", func(i int, _ *rand.Rand) time.Duration {
			if i > 0 && i%20 == 0 {
				return 10 * time.Minute
			}
			return 0
		}, 0},
		{"random0-15min", func(i int, rng *rand.Rand) time.Duration {
			return time.Duration(rng.Int64N(int64(15*time.Minute) + 1))
		}, costUnreliableDraws},
		{"8h@100", func(i int, _ *rand.Rand) time.Duration {
			if i == 100 {
				return 8 * time.Hour
			}
			return 0
		}, 0},
	}
}

// costMemory is a memory of the cost benchmark.
type costMemory struct {
	name string
	// policy returns the memory's policy over the summarizer sum, for
	// the model of env.
	policy func(sum memory.Summarizer, env costEnv) memory.Policy
	// reuse: the summarizer reuses the conversation
	// (ModelSummarizerOptions.ReuseConversation), with, on Anthropic, the
	// service's breakpoint (CacheControl).
	reuse bool
	// cheap: the summarizer's transcripts (the folds before a cold
	// request), and the long-term memory's extractions, go to the
	// profile's cheaper model, costCheapSummarizer's
	// (ModelSummarizerOptions.TranscriptCallOptions,
	// recall.Options.ExtractCallOptions), billed at its prices.
	cheap bool
	// longTerm: the service has a long-term memory (runtime/longterm/recall,
	// generic mode over an in-memory store): the facts relevant to each
	// user message are recalled into it, and a model call after each turn
	// extracts the turn's facts, billed with the turn.
	longTerm bool
}

// costCheapSummarizer names, by profile, the profile of the cheaper model
// of the same provider a summarizer may send its transcripts to.
var costCheapSummarizer = map[string]string{
	"sonnet-4.5": "haiku-4.5", "sonnet-4.6": "haiku-4.5", "opus-4.5": "haiku-4.5", "opus-4.6": "haiku-4.5",
}

// costEnv is what a memory of the benchmark may know of the model its
// prompts go to: the profile's prices and cache, and the clock.
type costEnv struct {
	profile llmtest.ModelProfile
	now     func() time.Time
	// summarizer is the profile of the model the summarizer's transcripts
	// go to; nil: the profile's.
	summarizer *llmtest.ModelProfile
}

// sumCosts returns the prices of the summarizer's transcripts; nil when
// they go to the profile's model.
func (e costEnv) sumCosts() *memory.TokenCosts {
	if e.summarizer == nil {
		return nil
	}
	return costEnv{profile: *e.summarizer}.costs()
}

// costs returns the profile's prices and minimum as a memory weighs them.
func (e costEnv) costs() *memory.TokenCosts {
	p := e.profile.Prices
	return &memory.TokenCosts{Input: p.Input, CacheWrite: p.CacheWrite, CacheRead: p.CacheRead, Output: p.Output, MinCacheTokens: e.profile.MinCacheTokens}
}

// costMemories are the memories of the benchmark; the recommended one is
// the guide's (docs/guide.md, "Prompt caching").
func costMemories() []costMemory {
	quiet := slog.New(slog.DiscardHandler)
	recommended := func(s memory.Summarizer, env costEnv) memory.Policy {
		return memory.Compressing(costRecommendedMax, s, &memory.CompressOptions{
			TriggerTokens: 2400, KeepTokens: 1200, SummaryTokens: 400, AppendSummaries: true,
			Costs: env.costs(), SummarizerCosts: env.sumCosts(), CacheTTL: env.profile.CacheTTL, Now: env.now, Logger: quiet,
		})
	}
	return []costMemory{
		{name: "full-history", policy: func(memory.Summarizer, costEnv) memory.Policy { return memory.TokenWindow(1<<30, nil, nil) }},
		{name: "Window(20)", policy: func(memory.Summarizer, costEnv) memory.Policy { return memory.Window(memory.DefaultMaxMessages, nil) }},
		{name: "TokenWindow(2000)", policy: func(memory.Summarizer, costEnv) memory.Policy { return memory.TokenWindow(2000, nil, nil) }},
		{name: "TokenWindow(4000,EvictTo 2400)", policy: func(memory.Summarizer, costEnv) memory.Policy {
			return memory.TokenWindow(4000, nil, &memory.WindowOptions{EvictTo: 2400})
		}},
		{name: "Compressing(2000)", policy: func(s memory.Summarizer, _ costEnv) memory.Policy {
			return memory.Compressing(2000, s, &memory.CompressOptions{Logger: quiet})
		}},
		{name: "Compressing(2000,1800/800,reuse)", reuse: true, policy: func(s memory.Summarizer, _ costEnv) memory.Policy {
			return memory.Compressing(2000, s, &memory.CompressOptions{TriggerTokens: 1800, KeepTokens: 800, Logger: quiet})
		}},
		{name: "Compressing(4000,3600/1600,reuse)", reuse: true, policy: func(s memory.Summarizer, _ costEnv) memory.Policy {
			return memory.Compressing(4000, s, &memory.CompressOptions{TriggerTokens: 3600, KeepTokens: 1600, Logger: quiet})
		}},
		{name: "Compressing(8000,7200/4400,reuse)", reuse: true, policy: func(s memory.Summarizer, _ costEnv) memory.Policy {
			return memory.Compressing(costBigBudget, s, &memory.CompressOptions{TriggerTokens: 7200, KeepTokens: 4400, Logger: quiet})
		}},
		{name: costPrevious, reuse: true, policy: func(s memory.Summarizer, env costEnv) memory.Policy {
			return memory.Compressing(costRecommendedMax, s, &memory.CompressOptions{
				TriggerTokens: 2400, KeepTokens: 1200, SummaryTokens: 400,
				Costs: env.costs(), CacheTTL: env.profile.CacheTTL, Now: env.now, Logger: quiet,
			})
		}},
		{name: costRecommended, reuse: true, cheap: true, policy: recommended},
		{name: "TokenWindow(4000,EvictTo 2400)+recall", cheap: true, longTerm: true, policy: func(memory.Summarizer, costEnv) memory.Policy {
			return memory.TokenWindow(4000, nil, &memory.WindowOptions{EvictTo: 2400})
		}},
		{name: "recommended+recall", reuse: true, cheap: true, longTerm: true, policy: recommended},
	}
}

// costRecommended names the recommended memory: the guide's recipe. Its
// summaries grow by appended segments (CompressOptions.AppendSummaries),
// and its folds before a cold request go to the provider's cheaper model
// where the profile has one (costCheapSummarizer).
const costRecommended = "recommended: Compressing(32000,2400/1200,reuse,costs,append,cheap cold)"

// costPrevious names the guide's previous recipe: the recommended one
// without appended segments or a cheaper model.
const costPrevious = "Compressing(32000,2400/1200,reuse,costs)"

// costRecommendedMax is the recommended memory's cap: the fold is the
// cost model's decision below it.
const costRecommendedMax = 32000

// wireUsage is the usage one response reported, in the provider's terms,
// and the model that answered.
type wireUsage struct {
	uncached, written, read, output int
	model                           string
}

// usageRecorder is an http.RoundTripper that records the usage of every
// response from an OpenAI or Anthropic server (not streamed).
type usageRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	all  []wireUsage
}

// RoundTrip implements http.RoundTripper.
func (r *usageRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var v struct {
		Model string `json:"model"`
		Usage struct {
			// OpenAI
			PromptTokens        int `json:"prompt_tokens"`
			CompletionTokens    int `json:"completion_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
			// Anthropic
			InputTokens              int `json:"input_tokens"`
			OutputTokens             int `json:"output_tokens"`
			CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
			CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("usage recorder: %w", err)
	}
	u := v.Usage
	var w wireUsage
	if u.PromptTokens > 0 { // OpenAI: the cached tokens are part of prompt_tokens
		w = wireUsage{uncached: u.PromptTokens - u.PromptTokensDetails.CachedTokens, read: u.PromptTokensDetails.CachedTokens, output: u.CompletionTokens}
	} else { // Anthropic: input_tokens is the uncached rest
		w = wireUsage{uncached: u.InputTokens, written: u.CacheCreationInputTokens, read: u.CacheReadInputTokens, output: u.OutputTokens}
	}
	w.model = v.Model
	r.mu.Lock()
	r.all = append(r.all, w)
	r.mu.Unlock()
	return resp, nil
}

// usages returns the usages recorded so far.
func (r *usageRecorder) usages() []wireUsage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]wireUsage(nil), r.all...)
}

// unmarkedModel is a model that strips every prompt-cache breakpoint from
// what it is sent: the conversation played without chatgen's automatic
// breakpoints, as by a framework that places none.
type unmarkedModel struct{ llms.Model }

// GenerateContent implements llms.Model.
func (m unmarkedModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, opts ...llms.CallOption) (*llms.ContentResponse, error) {
	out := make([]llms.MessageContent, len(msgs))
	for i, msg := range msgs {
		out[i] = unmarked(msg)
	}
	return m.Model.GenerateContent(ctx, out, opts...)
}

// costRun is one conversation's bill.
type costRun struct {
	// bill is the cumulative bill in dollars after each turn (bill[i]:
	// after turns 0..i).
	bill []float64
	// tokens are the totals over the conversation.
	tokens   wireUsage
	calls    int
	answered int
	// chat are the usages of the chat calls (not the summarizer's), for
	// the floor; prompts their prompt sizes.
	prompts []int
	outputs []int
	// folds are the turns (from 1) that made more than one call: the
	// summarizer's.
	folds []int
}

// at returns the cumulative bill after n turns.
func (r costRun) at(n int) float64 { return r.bill[n-1] }

// playCost plays the conversation with mem against a server of profile's
// wire, paused by pause with the gaps of seed; marks false strips the
// runtime's breakpoints.
func playCost(ctx context.Context, profile llmtest.ModelProfile, pause costPause, mem costMemory, marks bool, seed uint64) (costRun, error) {
	var clock atomic.Int64 // nanoseconds since start
	start := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { return start.Add(time.Duration(clock.Load())) }
	opts := &llmtest.Options{ModelName: profile.Model, PromptCache: profile.PromptCache(now)}
	rec := &usageRecorder{}
	var (
		llm    llms.Model
		client airt.Client
		reqs   func() []llmtest.Request
	)
	sumOpts := &memory.ModelSummarizerOptions{ReuseConversation: mem.reuse}
	env := costEnv{profile: profile, now: now}
	if name, ok := costCheapSummarizer[profile.Name]; ok && mem.cheap {
		for _, p := range llmtest.ModelProfiles() {
			if p.Name == name {
				env.summarizer = &p
			}
		}
		sumOpts.TranscriptCallOptions = []llms.CallOption{llms.WithModel(env.summarizer.Model)}
	}
	switch profile.Rules {
	case llmtest.CacheRulesAnthropic:
		srv := llmtest.NewAnthropicServer(convModel(), opts)
		defer srv.Close()
		rec.base = srv.HTTPClient().Transport
		a, err := llmclient.Anthropic(srv, anthropic.WithHTTPClient(&http.Client{Transport: rec}))
		if err != nil {
			return costRun{}, err
		}
		llm, client, reqs = a, airt.ClientAnthropic, srv.Requests
		if mem.reuse && marks {
			sumOpts.CacheControl = anthropic.EphemeralCache()
		}
	default:
		srv := llmtest.NewServer(convModel(), opts)
		defer srv.Close()
		rec.base = srv.HTTPClient().Transport
		o, err := srv.Client(openai.WithHTTPClient(&http.Client{Transport: rec}))
		if err != nil {
			return costRun{}, err
		}
		llm, client, reqs = o, airt.ClientOpenAI, srv.Requests
	}
	if !marks {
		llm = unmarkedModel{llm}
	}
	cfg := &airt.Config{
		Model: llm, Client: client, Logger: slog.New(slog.DiscardHandler),
		Now: now, PromptCacheTTL: profile.CacheTTL,
		Memory: memory.NewManager(&memory.ManagerOptions{Policy: mem.policy(memory.NewModelSummarizer(llm, sumOpts), env)}),
	}
	if mem.longTerm {
		opts := &recall.Options{Anonymous: "player", Logger: slog.New(slog.DiscardHandler)}
		if env.summarizer != nil {
			opts.ExtractCallOptions = []llms.CallOption{llms.WithModel(env.summarizer.Model)}
		}
		cfg.LongTerm = recall.New(longterm.NewMemStore(nil), opts)
	}
	svc := airt.NewService("example.com/armory.Assistant", cfg)
	method := &airt.Method{Name: "Chat", System: convSystem}
	rng := rand.New(rand.NewPCG(seed, 2026))
	var r costRun
	total := 0.0
	seen := 0
	for i := range convTurns {
		if i > 0 {
			clock.Add(int64(costTurnGap + pause.gap(i, rng)))
		}
		reply, err := svc.Chat(ctx, &airt.Request{Method: method, MemoryID: "conversation", User: convUser(i)})
		if err != nil {
			return r, fmt.Errorf("turn %d: %w", i, err)
		}
		if i >= convTurns-convFacts {
			if _, value := convFact(i - (convTurns - convFacts)); strings.Contains(reply.Content, value) {
				r.answered++
			}
		}
		us := rec.usages()
		for _, u := range us[seen:] {
			// Each response at the prices of the model that answered.
			prices := profile.Prices
			if p, ok := llmtest.LookupModelProfile(u.model); ok && u.model != "" {
				prices = p.Prices
			}
			total += prices.Bill(u.uncached, u.written, u.read, u.output)
			r.tokens.uncached += u.uncached
			r.tokens.written += u.written
			r.tokens.read += u.read
			r.tokens.output += u.output
		}
		if len(us)-seen > 1 {
			r.folds = append(r.folds, i+1)
		}
		seen = len(us)
		r.bill = append(r.bill, total)
	}
	us := rec.usages()
	all := reqs()
	r.calls = len(all)
	if len(all) != len(us) {
		return r, fmt.Errorf("the server recorded %d requests, the client got %d answers", len(all), len(us))
	}
	for i := range all {
		if !isSummaryRequest(&all[i]) {
			r.prompts = append(r.prompts, all[i].PromptTokens)
			r.outputs = append(r.outputs, us[i].output)
		}
	}
	return r, nil
}

// costFloor is the least a memory of budget tokens could be billed after
// each turn of the full history's conversation full (one chat call per
// turn): every prompt as big as the full history's up to the budget, all
// of it read from the cache but the turn's new messages, which are
// written (Anthropic) or sent uncached (OpenAI), and the full history's
// answers. No summary, no expiry, no minimum.
func costFloor(profile llmtest.ModelProfile, full costRun, budget int) []float64 {
	out := make([]float64, len(full.prompts))
	total, prev := 0.0, 0
	for i, size := range full.prompts {
		fresh := min(size, size-prev)
		size = min(size, budget)
		fresh = min(fresh, size)
		prev = full.prompts[i]
		written, uncached := fresh, 0
		if profile.Rules != llmtest.CacheRulesAnthropic {
			written, uncached = 0, fresh
		}
		total += profile.Prices.Bill(uncached, written, size-fresh, full.outputs[i])
		out[i] = total
	}
	return out
}

// costKey identifies one conversation of the benchmark: draw is the
// random pause pattern's seed, counted from costSeed.
type costKey struct {
	profile, pause, memory string
	draw                   int
}

// costResults are the conversations played, by key, with and without the
// runtime's breakpoints.
type costResults struct {
	marked, unmarked map[costKey]costRun
}

// playCosts plays every memory under every profile and pause pattern,
// two conversations at a time; on Anthropic's wire also without the
// runtime's breakpoints.
func playCosts(t *testing.T, profiles []llmtest.ModelProfile) costResults {
	type job struct {
		key     costKey
		profile llmtest.ModelProfile
		pause   costPause
		mem     costMemory
		marks   bool
	}
	var jobs []job
	for _, p := range profiles {
		for _, pause := range costPauses() {
			for _, mem := range costMemories() {
				for d := range max(1, pause.draws) {
					k := costKey{p.Name, pause.name, mem.name, d}
					if d == 0 {
						jobs = append(jobs, job{k, p, pause, mem, true})
					}
					if p.Rules == llmtest.CacheRulesAnthropic {
						if d > 0 {
							jobs = append(jobs, job{k, p, pause, mem, true})
						}
						jobs = append(jobs, job{k, p, pause, mem, false})
					}
				}
			}
		}
	}
	res := costResults{marked: map[costKey]costRun{}, unmarked: map[costKey]costRun{}}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs []error
	)
	work := make(chan job)
	for range 2 {
		wg.Go(func() {
			for j := range work {
				r, err := playCost(t.Context(), j.profile, j.pause, j.mem, j.marks, costSeed+uint64(j.key.draw))
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, fmt.Errorf("%v (marks %v): %w", j.key, j.marks, err))
				case j.marks:
					res.marked[j.key] = r
				default:
					res.unmarked[j.key] = r
				}
				mu.Unlock()
			}
		})
	}
	for _, j := range jobs {
		work <- j
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	return res
}

// costProfiles returns the profiles named, in the order of
// llmtest.ModelProfiles; all of them when names is empty.
func costProfiles(t *testing.T, names ...string) []llmtest.ModelProfile {
	var out []llmtest.ModelProfile
	for _, p := range llmtest.ModelProfiles() {
		for _, n := range names {
			if p.Name == n {
				out = append(out, p)
			}
		}
		if len(names) == 0 {
			out = append(out, p)
		}
	}
	if len(names) > 0 && len(out) != len(names) {
		t.Fatalf("profiles %v: found %d", names, len(out))
	}
	return out
}

// costTable writes the tables of res: per profile and pause pattern, each
// memory's cumulative bill at the cuts relative to the full history's,
// then the floor and the full history's bill in dollars.
func costTable(w io.Writer, profiles []llmtest.ModelProfile, res costResults) {
	for _, p := range profiles {
		for _, pause := range costPauses() {
			full := res.marked[costKey{p.Name, pause.name, "full-history", 0}]
			fmt.Fprintf(w, "\n#### %s (%s, minimum %d), pauses: %s\n\n", p.Name, p.Model, p.MinCacheTokens, pause.name)
			fmt.Fprintf(w, "| memory | %s | worst turn | answered | no marks @200 |\n|---|%s---|---|---|\n",
				strings.Join(cutHeads(), " | "), strings.Repeat("---:|", len(costCuts)))
			for _, mem := range costMemories() {
				k := costKey{p.Name, pause.name, mem.name, 0}
				r := res.marked[k]
				var cells []string
				for _, n := range costCuts {
					cells = append(cells, fmt.Sprintf("%.2f×", r.at(n)/full.at(n)))
				}
				worst := 0.0
				for i := range r.bill {
					worst = max(worst, r.bill[i]/full.bill[i])
				}
				nomarks := "—"
				if u, ok := res.unmarked[k]; ok {
					nomarks = fmt.Sprintf("%.2f×", u.at(convTurns)/full.at(convTurns))
				}
				fmt.Fprintf(w, "| %s | %s | %.3f× | %d/20 | %s |\n", mem.name, strings.Join(cells, " | "), worst, r.answered, nomarks)
			}
			for _, budget := range []int{costSmallBudget, costBigBudget} {
				floor := costFloor(p, full, budget)
				var cells []string
				for _, n := range costCuts {
					cells = append(cells, fmt.Sprintf("%.2f×", floor[n-1]/full.at(n)))
				}
				fmt.Fprintf(w, "| floor (%d tokens) | %s | | | |\n", budget, strings.Join(cells, " | "))
			}
			var dollars []string
			for _, n := range costCuts {
				dollars = append(dollars, fmt.Sprintf("$%.3f", full.at(n)))
			}
			fmt.Fprintf(w, "| full history, $ | %s | | | |\n", strings.Join(dollars, " | "))
		}
	}
}

// costMarksTable writes, for the patterns whose gaps are drawn more than
// once, each memory's bill over 200 turns with the runtime's breakpoints
// over its bill without them, summed over the draws, and the largest
// ratio of one draw.
func costMarksTable(w io.Writer, profiles []llmtest.ModelProfile, res costResults) {
	marks := costMarks(res)
	for _, pause := range costPauses() {
		if pause.draws <= 1 {
			continue
		}
		fmt.Fprintf(w, "\n#### Breakpoints under %s, %d draws of the gaps: with ÷ without, over 200 turns\n\n", pause.name, pause.draws)
		var heads []string
		for _, p := range profiles {
			if p.Rules == llmtest.CacheRulesAnthropic {
				heads = append(heads, p.Name)
			}
		}
		fmt.Fprintf(w, "| memory | %s |\n|---|%s\n", strings.Join(heads, " | "), strings.Repeat("---:|", len(heads)))
		for _, mem := range costMemories() {
			var cells []string
			for _, p := range profiles {
				if m, ok := marks[costKey{p.Name, pause.name, mem.name, 0}]; ok {
					cells = append(cells, fmt.Sprintf("%.3f× (worst %.3f×)", m.marked/m.unmarked, m.worst))
				}
			}
			fmt.Fprintf(w, "| %s | %s |\n", mem.name, strings.Join(cells, " | "))
		}
	}
}

// cutHeads returns the column heads of the cuts.
func cutHeads() []string {
	var out []string
	for _, n := range costCuts {
		out = append(out, fmt.Sprintf("%d turns", n))
	}
	return out
}

// TestConversationCost plays the cost benchmark and checks, on the Sonnet
// 4.5 profile (1,024-token minimum) and the Haiku 4.5 one (4,096; with
// CHATGEN_NUMBERS=1 Opus 4.5 and 4.6 too), what holds of its goals: under
// every pause pattern the recommended memory answers the late questions as
// the full history does and bills at most 1.02× the full history after
// every turn (on every profile played); under the random gap before each turn (costUnreliablePause),
// and on Sonnet 4.5 with 10 minutes every 20 turns too (costMetGoals), it
// bills at most 0.45× the full history over 200 turns, and on Sonnet 4.5
// at most 0.7× over 100; with 10 minutes every 20 turns at most 0.7× over
// 200, with one 8-hour gap at most 0.9× (costColdGoals); no memory bills
// more with the runtime's automatic breakpoints than without them, under
// the random pattern summed over costUnreliableDraws draws of its gaps,
// one of which may lose the runtime's bet. The goals of 0.7× at 100 turns
// and 0.45× at 200 are not met under the other patterns: docs/numbers.md
// has the figures.
// With CHATGEN_NUMBERS=1 it plays every profile and prints the tables.
func TestConversationCost(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("the cost benchmark plays 200-turn conversations over loopback HTTP")
	case raceEnabled:
		// Its figures do not depend on it, and its code paths (the real
		// clients, llmtest's servers, the service) are raced by
		// TestLongConversationThroughAnthropic and runtime/ai's tests.
		t.Skip("the cost benchmark takes minutes under the race detector")
	}
	profiles := costProfiles(t, "sonnet-4.5", "haiku-4.5")
	all := os.Getenv("CHATGEN_NUMBERS") != ""
	if all {
		profiles = costProfiles(t)
	}
	res := playCosts(t, profiles)
	var b strings.Builder
	costTable(&b, profiles, res)
	costMarksTable(&b, profiles, res)
	if all {
		fmt.Print(b.String())
	} else {
		t.Log(b.String())
	}
	for k, m := range costMarks(res) {
		if m.marked > m.unmarked*1.0001 {
			t.Errorf("%v: billed $%.4f with the runtime's breakpoints, $%.4f without (over %d draws of its gaps)", k, m.marked, m.unmarked, m.draws)
		}
	}
	for k, r := range res.marked {
		if k.draw > 0 {
			continue // weighed with the marks below
		}
		full := res.marked[costKey{k.profile, k.pause, "full-history", 0}]
		switch k.memory {
		case "full-history":
			if r.answered != convFacts {
				t.Errorf("%v: answered %d of %d late questions", k, r.answered, convFacts)
			}
		case "TokenWindow(4000,EvictTo 2400)+recall", "recommended+recall":
			// The long-term memory recalls the facts the window lost.
			if r.answered != convFacts {
				t.Errorf("%v: answered %d of %d late questions", k, r.answered, convFacts)
			}
		case costRecommended:
			if r.answered != convFacts {
				t.Errorf("%v: answered %d of %d late questions", k, r.answered, convFacts)
			}
			if costGoalProfiles[k.profile] {
				// Where the goals at 100 and 200 turns hold: when gaps
				// expire the cache (docs/numbers.md has the others).
				at100, at200 := r.at(100)/full.at(100), r.at(200)/full.at(200)
				met := k.pause == costUnreliablePause || costMetGoals[k.profile+" "+k.pause]
				if met && (at200 > 0.45 || k.profile == "sonnet-4.5" && at100 > 0.7) {
					t.Errorf("%v: billed %.3f× the full history after 100 turns, %.3f× after 200", k, at100, at200)
				}
				if goal, ok := costColdGoals[k.pause]; ok && at200 > goal {
					t.Errorf("%v: billed %.3f× the full history after 200 turns, over %.2f×", k, at200, goal)
				}
			}
			// Never dearer than the full history, on every profile.
			for i := range r.bill {
				if got := r.bill[i] / full.bill[i]; got > costWorstGoal {
					t.Errorf("%v: billed %.3f× the full history after %d turns, over %.2f×", k, got, i+1, costWorstGoal)
					break
				}
			}
		}
	}
}

// costMetGoals are the profiles and pause patterns but the random one
// under which the recommended memory meets the goals of 0.45× the full
// history after 200 turns and, on Sonnet 4.5, 0.7× after 100.
var costMetGoals = map[string]bool{"sonnet-4.5 10min/20turns": true}

// costColdGoals are the most the recommended memory may bill after 200
// turns, relative to the full history, under the pause patterns whose
// gaps expire the cache now and then: it folds before those requests.
var costColdGoals = map[string]float64{"10min/20turns": 0.7, "8h@100": 0.9}

// costWorstGoal is the most the recommended memory may bill, cumulated
// after any turn, relative to the full history.
const costWorstGoal = 1.02

// costGoalProfiles are the profiles of the goals: Sonnet 4.5's 1,024-token
// minimum and the 4,096 ones.
var costGoalProfiles = map[string]bool{"sonnet-4.5": true, "opus-4.5": true, "opus-4.6": true, "haiku-4.5": true}

// costUnreliablePause is the pause pattern under which a prompt-cache
// breakpoint may not pay: a gap of 0 to 15 minutes before every turn, so
// that under a third of the turns come within the cache's 5 minutes.
const costUnreliablePause = "random0-15min"

// costUnreliableDraws is how many seeds of costUnreliablePause's gaps the
// runtime's breakpoints are weighed over: under it a breakpoint is a bet
// that pays in expectation (a write at 1.25× pays when the next request
// reads it more than 22% of the time, and about 30% do), and one draw of
// the gaps may lose it.
const costUnreliableDraws = 8

// costMark is what a memory billed over 200 turns with the runtime's
// breakpoints and without them, summed over the draws of its pause
// pattern's gaps, and the largest ratio of one draw.
type costMark struct {
	marked, unmarked, worst float64
	draws                   int
}

// costMarks returns the costMark of every profile, pattern and memory
// played without breakpoints (draw 0 in the keys).
func costMarks(res costResults) map[costKey]costMark {
	out := map[costKey]costMark{}
	for k, u := range res.unmarked {
		r, ok := res.marked[k]
		if !ok {
			continue
		}
		sum := k
		sum.draw = 0
		m := out[sum]
		m.marked += r.at(convTurns)
		m.unmarked += u.at(convTurns)
		m.worst = max(m.worst, r.at(convTurns)/u.at(convTurns))
		m.draws++
		out[sum] = m
	}
	return out
}
