package llmtest_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/anthropic"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newClock() *fakeClock { return &fakeClock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

// longText is a text of about n tokens (4 bytes each).
func longText(n int) string { return strings.Repeat("abc ", n) }

// intInfo reads an int of GenerationInfo.
func intInfo(t *testing.T, info map[string]any, key string) int {
	t.Helper()
	n, ok := info[key].(int)
	if !ok {
		t.Fatalf("GenerationInfo[%q] = %#v, want an int (info %v)", key, info[key], info)
	}
	return n
}

// TestPromptCacheOpenAI: the OpenAI server caches a prompt of 1,024 tokens
// or more, reads the longest cached prefix in 128-token increments after
// the first 1,024, reports it in prompt_tokens_details.cached_tokens (the
// client's PromptCachedTokens), and forgets it after the TTL of inactivity.
func TestPromptCacheOpenAI(t *testing.T) {
	clock := newClock()
	srv, llm := newServer(t, llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), &llmtest.Options{PromptCache: &llmtest.PromptCache{Now: clock.Now}})
	ctx := context.Background()
	sys := system(longText(1500))
	turn := []llms.MessageContent{sys, human("first question")}
	cached := func(msgs []llms.MessageContent) int {
		t.Helper()
		resp, err := llm.GenerateContent(ctx, msgs)
		if err != nil {
			t.Fatal(err)
		}
		return intInfo(t, resp.Choices[0].GenerationInfo, "PromptCachedTokens")
	}
	if got := cached(turn); got != 0 {
		t.Fatalf("first call read %d cached tokens, want 0", got)
	}
	prefix := srv.Requests()[0].PromptTokens // the whole first prompt is a prefix of the next
	next := append(turn[:2:2], aiText("ok"), human("second question"))
	want := 1024 + (prefix-1024)/128*128
	if got := cached(next); got != want {
		t.Fatalf("second call read %d cached tokens, want %d (prefix %d rounded to 1024+128n)", got, want, prefix)
	}
	if got := srv.Requests()[1].Cache; got.ReadTokens != want || got.WriteTokens != 0 {
		t.Fatalf("recorded cache use %+v, want a read of %d and no write", got, want)
	}
	// A different system prompt shares nothing.
	if got := cached([]llms.MessageContent{system(longText(1500) + "!"), human("first question")}); got != 0 {
		t.Fatalf("a different prefix read %d cached tokens", got)
	}
	clock.advance(llmtest.DefaultCacheTTL + time.Second)
	if got := cached(next); got != 0 {
		t.Fatalf("after the TTL, read %d cached tokens, want 0", got)
	}
	// A short prompt is never cached.
	short := []llms.MessageContent{system("Be brief."), human("hi")}
	cached(short)
	if got := cached(short); got != 0 {
		t.Fatalf("a short prompt read %d cached tokens", got)
	}
}

// TestPromptCacheOff: without Options.PromptCache nothing is cached, and a
// script's own cache figures are sent as they are.
func TestPromptCacheOff(t *testing.T) {
	_, llm := newServer(t, llmtest.Sequence(llmtest.Reply{Text: "a"}, llmtest.Reply{Text: "b", Usage: llmtest.Usage{CacheReadTokens: 7}}), nil)
	msgs := []llms.MessageContent{system(longText(1500)), human("hi")}
	for i, want := range []int{0, 7} {
		resp, err := llm.GenerateContent(context.Background(), msgs)
		if err != nil {
			t.Fatal(err)
		}
		if got := intInfo(t, resp.Choices[0].GenerationInfo, "PromptCachedTokens"); got != want {
			t.Fatalf("call %d: cached %d, want %d", i, got, want)
		}
	}
}

// cached wraps a text in a part with an ephemeral breakpoint.
func cached(text string) llms.ContentPart {
	return llms.CachedContent{ContentPart: llms.TextContent{Text: text}, CacheControl: anthropic.EphemeralCache()}
}

// TestPromptCacheAnthropic: through langchaingo's anthropic client, a
// breakpoint writes its prefix (cache_creation_input_tokens), a later
// request whose breakpoint follows it within 20 blocks reads it
// (cache_read_input_tokens), input_tokens is the rest, and a prefix under
// the model's minimum is neither written nor read.
func TestPromptCacheAnthropic(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "message", true: "stream"}[stream], func(t *testing.T) {
			clock := newClock()
			srv, llm := newAnthropic(t, llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), &llmtest.Options{PromptCache: &llmtest.PromptCache{Now: clock.Now}})
			ctx := context.Background()
			var opts []llms.CallOption
			if stream {
				opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
			}
			call := func(msgs ...llms.MessageContent) (read, write, input int) {
				t.Helper()
				resp, err := llm.GenerateContent(ctx, msgs, opts...)
				if err != nil {
					t.Fatal(err)
				}
				info := resp.Choices[0].GenerationInfo
				return intInfo(t, info, "CacheReadInputTokens"), intInfo(t, info, "CacheCreationInputTokens"), intInfo(t, info, "InputTokens")
			}
			sys := system(longText(1200))
			first := llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{cached("first question")}}
			read, write, input := call(sys, first)
			total := srv.Requests()[0].PromptTokens
			if read != 0 || write != total || input != 0 {
				t.Fatalf("first call: read %d, write %d, input %d; want 0, %d, 0", read, write, input, total)
			}
			// The next turn: the old breakpoint's prefix is read, the new
			// turn written up to the new breakpoint, the last message not.
			second := llms.MessageContent{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{cached("second question")}}
			read, write, input = call(sys, human("first question"), aiText("ok"), second, aiText("fine"), human("and?"))
			req := srv.Requests()[1]
			if read != total || write <= 0 || input <= 0 || read+write+input != req.PromptTokens {
				t.Fatalf("second call: read %d, write %d, input %d of %d; want a read of %d", read, write, input, req.PromptTokens, total)
			}
			if req.Cache.ReadTokens != read || req.Cache.WriteTokens != write {
				t.Fatalf("recorded %+v, reported read %d write %d", req.Cache, read, write)
			}
			// Without a breakpoint nothing is read or written.
			if read, write, _ = call(sys, human("first question")); read != 0 || write != 0 {
				t.Fatalf("no breakpoint: read %d, write %d", read, write)
			}
			// Under the minimum nothing is written.
			if _, write, _ = call(system("Be brief."), first); write != 0 {
				t.Fatalf("short prefix: wrote %d", write)
			}
			clock.advance(llmtest.DefaultCacheTTL + time.Second)
			if read, _, _ = call(sys, first); read != 0 {
				t.Fatalf("after the TTL: read %d", read)
			}
		})
	}
}

// TestPromptCacheAnthropicLookback: a breakpoint finds a prefix written
// at most 20 blocks before it, not further; a second breakpoint on the old
// position finds it however far the conversation went on.
func TestPromptCacheAnthropicLookback(t *testing.T) {
	ctx := context.Background()
	base := []llms.MessageContent{system(longText(1200)), {Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{cached("q0")}}}
	written := 0
	// start returns a model whose cache holds base's prefix only.
	start := func() *llmtest.Model {
		model := llmtest.NewModel(llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), &llmtest.Options{PromptCache: &llmtest.PromptCache{Rules: llmtest.CacheRulesAnthropic, Now: newClock().Now}})
		if _, err := model.GenerateContent(ctx, base); err != nil {
			t.Fatal(err)
		}
		written = model.Requests()[0].Cache.WriteTokens
		return model
	}
	grow := func(blocks int, mark bool) []llms.MessageContent {
		msgs := []llms.MessageContent{base[0], human("q0")}
		if mark {
			msgs[1] = base[1]
		}
		for i := range blocks / 2 {
			msgs = append(msgs, aiText("ok"), human("q"+string(rune('a'+i%26))))
		}
		last := &msgs[len(msgs)-1]
		last.Parts = []llms.ContentPart{llms.CachedContent{ContentPart: last.Parts[0], CacheControl: anthropic.EphemeralCache()}}
		return msgs
	}
	for _, tc := range []struct {
		blocks   int
		mark     bool
		wantRead int
	}{
		{20, false, -1}, // 20 blocks back: found
		{22, false, 0},  // 22 back: not found
		{40, true, -1},  // found through the second breakpoint
	} {
		model := start()
		if tc.wantRead < 0 {
			tc.wantRead = written
		}
		if _, err := model.GenerateContent(ctx, grow(tc.blocks, tc.mark)); err != nil {
			t.Fatal(err)
		}
		reqs := model.Requests()
		if got := reqs[len(reqs)-1].Cache.ReadTokens; got != tc.wantRead {
			t.Fatalf("%d blocks later (second breakpoint %v): read %d, want %d", tc.blocks, tc.mark, got, tc.wantRead)
		}
	}
}

// TestPromptCacheGemini: Gemini's implicit cache through the googleai
// client, reported as cachedContentTokenCount (the client's CachedTokens).
func TestPromptCacheGemini(t *testing.T) {
	_, llm := newGemini(t, llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), &llmtest.Options{PromptCache: &llmtest.PromptCache{Now: newClock().Now}})
	ctx := context.Background()
	sys := system(longText(1500))
	if _, err := llm.GenerateContent(ctx, []llms.MessageContent{sys, human("one")}); err != nil {
		t.Fatal(err)
	}
	resp, err := llm.GenerateContent(ctx, []llms.MessageContent{sys, human("one"), aiText("ok"), human("two")})
	if err != nil {
		t.Fatal(err)
	}
	if got := intInfo32(t, resp.Choices[0].GenerationInfo, "CachedTokens"); got < 1500 {
		t.Fatalf("cached %d tokens, want the system prompt's 1500 at least", got)
	}
}

// intInfo32 reads an int32 of GenerationInfo (llms/googleai's type).
func intInfo32(t *testing.T, info map[string]any, key string) int {
	t.Helper()
	n, ok := info[key].(int32)
	if !ok {
		t.Fatalf("GenerationInfo[%q] = %#v, want an int32", key, info[key])
	}
	return int(n)
}

// aiText returns an AI message of text.
func aiText(text string) llms.MessageContent { return llms.TextParts(llms.ChatMessageTypeAI, text) }

// TestPromptCacheAnthropicTools: a breakpoint on the last tool caches the
// tools (read first by Anthropic): a request that changes only its
// messages reads them back; the raw usage has input_tokens as the rest.
func TestPromptCacheAnthropicTools(t *testing.T) {
	srv := llmtest.NewAnthropicServer(llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}), &llmtest.Options{PromptCache: &llmtest.PromptCache{Now: newClock().Now}})
	defer srv.Close()
	headers := []string{"x-api-key", "k", "anthropic-version", llmtest.AnthropicVersion}
	tools := `[{"name":"forge","description":"` + longText(1100) + `","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]`
	usage := func(user string) map[string]int {
		t.Helper()
		body := `{"model":"claude-sonnet-4-5","max_tokens":100,"tools":` + tools + `,"messages":[{"role":"user","content":"` + user + `"}]}`
		status, got := rawPost(t, srv.HTTPClient(), srv.URL+"/messages", body, headers...)
		var m struct {
			Usage map[string]int `json:"usage"`
		}
		if err := json.Unmarshal([]byte(got), &m); status != 200 || err != nil {
			t.Fatalf("%d %s", status, got)
		}
		return m.Usage
	}
	first := usage("hello")
	reqs := srv.Requests()
	tokens := reqs[0].PromptTokens - llmtest.EstimatePromptTokens(reqs[0].Messages, nil)
	if first["cache_creation_input_tokens"] != tokens || first["cache_read_input_tokens"] != 0 {
		t.Fatalf("first usage %v, want the tools' %d tokens written", first, tokens)
	}
	second := usage("something else")
	if second["cache_read_input_tokens"] != tokens || second["cache_creation_input_tokens"] != 0 ||
		second["input_tokens"] != srv.Requests()[1].PromptTokens-tokens {
		t.Fatalf("second usage %v, want the tools' %d tokens read", second, tokens)
	}
}
