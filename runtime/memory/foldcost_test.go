package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// sonnetCosts are Claude Sonnet 4.5's prices ($/MTok) and minimum.
var sonnetCosts = &memory.TokenCosts{Input: 3, CacheWrite: 3.75, CacheRead: 0.3, Output: 15, MinCacheTokens: 1024}

// countingSummarizer writes a short summary and counts its calls.
type countingSummarizer struct{ calls atomic.Int64 }

func (s *countingSummarizer) Summarize(ctx context.Context, req memory.SummaryRequest) (string, error) {
	n := s.calls.Add(1)
	return fmt.Sprintf("summary %d of %d messages", n, len(req.Messages)), nil
}

// playFolds adds turns of about 100 tokens (EstimateTokens) to a
// cost-aware Compressing memory, gap apart on a fake clock, and returns
// the summarizer's calls, after checking before each turn that the
// memory's Stability foretells whether the Add folds.
func playFolds(t *testing.T, costs *memory.TokenCosts, turns int, gap func(i int) time.Duration, sumCosts ...*memory.TokenCosts) int64 {
	t.Helper()
	ctx := t.Context()
	clock := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	sum := &countingSummarizer{}
	p := memory.Compressing(100000, sum, &memory.CompressOptions{
		TriggerTokens: 2000, KeepTokens: 1200, SummaryTokens: 100,
		Costs: costs, Now: func() time.Time { return clock }, Logger: slog.New(slog.DiscardHandler),
	})
	if len(sumCosts) > 0 {
		p = memory.Compressing(100000, sum, &memory.CompressOptions{
			TriggerTokens: 2000, KeepTokens: 1200, SummaryTokens: 100, SummarizerCosts: sumCosts[0],
			Costs: costs, Now: func() time.Time { return clock }, Logger: slog.New(slog.DiscardHandler),
		})
	}
	m, err := p.New(ctx, memory.NewInMemoryStore(), "c")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("a forge word ", 15) // about 50 tokens
	for i := range turns {
		clock = clock.Add(gap(i))
		user := llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("%d %s", i, text))
		st, err := m.(memory.StableMemory).Stability(ctx, []llms.MessageContent{user})
		if err != nil {
			t.Fatal(err)
		}
		held, err := m.Messages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		before := sum.calls.Load()
		if err := m.Add(ctx, user, llms.TextParts(llms.ChatMessageTypeAI, text)); err != nil {
			t.Fatal(err)
		}
		if folded := sum.calls.Load() > before; len(held) > 0 && folded != (st.Keeps < len(held)) {
			t.Fatalf("turn %d: folded %v, but Stability said Keeps %d", i, folded, st.Keeps)
		}
	}
	if s := p.Stats(); s.Compressions != sum.calls.Load() || s.Failures != 0 {
		t.Fatalf("stats %+v, %d summaries", s, sum.calls.Load())
	}
	return sum.calls.Load()
}

// A cost-aware memory whose cache stays warm does not fold as soon as it
// passes its high-water mark: the fold's summary and the rewrite of the
// cache cost more than the cached prefix it shortens saves before its
// bill would pass 1.02× the full history's (here: not in 120 turns).
// When every turn finds the cache expired, the prompt is written again
// anyway and folds pay: the memory folds as often as its guard allows
// (which assumes the worst, that the next turn finds the cache warm).
func TestCompressingFoldsWhenItPays(t *testing.T) {
	const turns = 120
	warm := playFolds(t, sonnetCosts, turns, func(int) time.Duration { return 30 * time.Second })
	cold := playFolds(t, sonnetCosts, turns, func(int) time.Duration { return 10 * time.Minute })
	plain := playFolds(t, nil, turns, func(int) time.Duration { return 30 * time.Second })
	t.Logf("summaries: warm cache %d, expired cache %d, without Costs %d", warm, cold, plain)
	if plain < 10 {
		t.Fatalf("without Costs: %d summaries, want one per crossing of the mark", plain)
	}
	if cold < plain/3 || cold <= warm {
		t.Errorf("expired cache: %d summaries, want about as many as %d, more than %d", cold, plain, warm)
	}
	if warm >= plain/2 {
		t.Errorf("warm cache: %d summaries, want far fewer than %d", warm, plain)
	}
}

// A prompt under the cache's minimum is billed at the input price on
// every turn: a fold that leaves one does not pay while the full history
// is read from the cache.
func TestCompressingFoldsNotUnderTheCacheMinimum(t *testing.T) {
	haiku := &memory.TokenCosts{Input: 1, CacheWrite: 1.25, CacheRead: 0.1, Output: 5, MinCacheTokens: 4096}
	if n := playFolds(t, haiku, 150, func(int) time.Duration { return 30 * time.Second }); n != 0 {
		t.Errorf("%d summaries, want none", n)
	}
}

// A summarizer whose transcripts (all of countingSummarizer's: it does
// not read the conversation) cost less makes folds pay sooner.
func TestCompressingSummarizerCosts(t *testing.T) {
	warm := func(int) time.Duration { return 30 * time.Second }
	same := playFolds(t, sonnetCosts, 150, warm)
	cheap := playFolds(t, sonnetCosts, 150, warm, &memory.TokenCosts{Input: 0.3, Output: 1.5})
	t.Logf("summaries: Sonnet's prices %d, a tenth of them %d", same, cheap)
	if cheap <= same {
		t.Errorf("a summarizer ten times cheaper: %d summaries, want more than %d", cheap, same)
	}
}

// Bad costs are refused when the memory is made.
func TestCompressingInvalidCosts(t *testing.T) {
	for _, opts := range []*memory.CompressOptions{
		{Costs: &memory.TokenCosts{Input: -1}},
		{Costs: &memory.TokenCosts{Output: math.NaN()}},
		{Costs: &memory.TokenCosts{CacheRead: math.Inf(1)}},
		{Costs: &memory.TokenCosts{MinCacheTokens: -1}},
		{Costs: sonnetCosts, CacheTTL: -time.Second},
		{Costs: sonnetCosts, SummarizerCosts: &memory.TokenCosts{Output: -1}},
	} {
		_, err := memory.Compressing(1000, &countingSummarizer{}, opts).New(t.Context(), memory.NewInMemoryStore(), "c")
		if !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("%+v: got %v, want ErrInvalid", opts, err)
		}
	}
}

// A cost-aware memory loaded from its store, or cleared, goes on
// estimating its bill from what it holds: its Stability still foretells
// its folds.
func TestCompressingCostsAfterRestartAndClear(t *testing.T) {
	ctx := t.Context()
	clock := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	sum := &countingSummarizer{}
	p := memory.Compressing(100000, sum, &memory.CompressOptions{
		TriggerTokens: 2000, KeepTokens: 1200, SummaryTokens: 100,
		Costs: sonnetCosts, Now: func() time.Time { return clock }, Logger: slog.New(slog.DiscardHandler),
	})
	store := memory.NewInMemoryStore()
	text := strings.Repeat("a forge word ", 15)
	turn := 0
	play := func(m memory.Memory, n int) {
		t.Helper()
		for range n {
			clock = clock.Add(10 * time.Minute)
			user := llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("%d %s", turn, text))
			turn++
			st, err := m.(memory.StableMemory).Stability(ctx, []llms.MessageContent{user})
			if err != nil {
				t.Fatal(err)
			}
			held, err := m.Messages(ctx)
			if err != nil {
				t.Fatal(err)
			}
			before := sum.calls.Load()
			if err := m.Add(ctx, user, llms.TextParts(llms.ChatMessageTypeAI, text)); err != nil {
				t.Fatal(err)
			}
			if folded := sum.calls.Load() > before; len(held) > 0 && folded != (st.Keeps < len(held)) {
				t.Fatalf("turn %d: folded %v, but Stability said Keeps %d of %d", turn, folded, st.Keeps, len(held))
			}
		}
	}
	m, err := p.New(ctx, store, "c")
	if err != nil {
		t.Fatal(err)
	}
	play(m, 60)
	again, err := p.New(ctx, store, "c")
	if err != nil {
		t.Fatal(err)
	}
	play(again, 60)
	if err := again.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	play(again, 60)
	if sum.calls.Load() == 0 {
		t.Error("no fold in 180 turns whose cache always expired")
	}
}

// conversationSummarizer wants the conversation and records whether each
// call got it.
type conversationSummarizer struct {
	countingSummarizer
	withConv atomic.Int64
	fail     atomic.Bool
}

func (s *conversationSummarizer) WantsConversation() bool { return true }

func (s *conversationSummarizer) Summarize(ctx context.Context, req memory.SummaryRequest) (string, error) {
	if s.fail.Load() {
		return "", errors.New("summarizer down")
	}
	if req.Conversation != nil {
		s.withConv.Add(1)
	}
	return s.countingSummarizer.Summarize(ctx, req)
}

// Before a request the cache has expired for, Messages folds past the
// low-water mark (the request writes its whole prompt anyway), without
// sending the summarizer the conversation; within the TTL it folds
// nothing; a failing summarizer keeps the messages; it tries once per gap.
func TestCompressingFoldsBeforeAColdRequest(t *testing.T) {
	ctx := t.Context()
	clock := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	sum := &conversationSummarizer{}
	p := memory.Compressing(100000, sum, &memory.CompressOptions{
		TriggerTokens: 4000, KeepTokens: 1200, SummaryTokens: 100,
		Costs: sonnetCosts, Now: func() time.Time { return clock }, Logger: slog.New(slog.DiscardHandler),
	})
	m, err := p.New(ctx, memory.NewInMemoryStore(), "c")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("a forge word ", 15) // about 50 tokens
	for i := range 25 {                         // about 2,500 tokens: past KeepTokens, under TriggerTokens
		clock = clock.Add(30 * time.Second)
		if _, err := m.Messages(ctx); err != nil {
			t.Fatal(err)
		}
		user := llms.TextParts(llms.ChatMessageTypeHuman, fmt.Sprintf("%d %s", i, text))
		if err := m.Add(ctx, user, llms.TextParts(llms.ChatMessageTypeAI, text)); err != nil {
			t.Fatal(err)
		}
	}
	if n := sum.calls.Load(); n != 0 {
		t.Fatalf("%d summaries under the trigger with a warm cache", n)
	}
	held, err := m.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}

	clock = clock.Add(10 * time.Minute)
	sum.fail.Store(true)
	got, err := m.Messages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(held) || p.Stats().Failures != 1 {
		t.Fatalf("failing summarizer: %d messages (want %d), stats %+v", len(got), len(held), p.Stats())
	}
	sum.fail.Store(false)
	if got, err = m.Messages(ctx); err != nil || len(got) != len(held) || sum.calls.Load() != 0 {
		t.Fatalf("second read in the same gap: %d messages, %v, %d summaries; want it not retried", len(got), err, sum.calls.Load())
	}

	// The next gap: the summarizer works.
	user := llms.TextParts(llms.ChatMessageTypeHuman, "25 "+text)
	if err := m.Add(ctx, user, llms.TextParts(llms.ChatMessageTypeAI, text)); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(10 * time.Minute)
	if got, err = m.Messages(ctx); err != nil {
		t.Fatal(err)
	}
	if sum.calls.Load() != 1 || sum.withConv.Load() != 0 {
		t.Fatalf("%d summaries, %d with the conversation; want 1 without", sum.calls.Load(), sum.withConv.Load())
	}
	if len(got) >= len(held) {
		t.Fatalf("after the cold fold: %d messages, want fewer than %d", len(got), len(held))
	}
	if _, ok := memory.SummaryText(got[0]); !ok {
		t.Fatalf("after the cold fold: the first message is %+v, want the summary", got[0])
	}
	if st, err := m.(memory.StableMemory).Stability(ctx, nil); err != nil || st.Kept != 0 {
		t.Fatalf("Stability after the fold: %+v, %v; want nothing kept", st, err)
	}
	if s := p.Stats(); s.Compressions != 1 {
		t.Fatalf("stats %+v", s)
	}
}
