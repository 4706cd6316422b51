package modeltest

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
)

// The long conversations of the LongConversation check.
const (
	// longTurns is the number of turns of each conversation; every memory
	// is full (and evicts, or summarises) after at most longFull of them.
	longTurns = 70
	longFull  = 15
	// longTokens is the budget of the token memories: about eight turns.
	longTokens = 300
	// longSummary is the summarizer's answer.
	longSummary = "The user chatted and asked about the weather in several cities."
)

// longMemory is a memory a long conversation is played with.
type longMemory struct {
	name   string
	policy func(llms.Model) memory.Policy // nil: the service's default memory
	// compressing is set for a compressing memory, whose summaries are
	// checked too.
	compressing *memory.CompressingPolicy
}

// longMemories returns the memories of the check: the default one (a
// window of memory.DefaultMaxMessages messages), a token window sliding
// and evicting in blocks, and a compressing memory summarising with the
// client's own model.
func longMemories() []*longMemory {
	mems := []*longMemory{
		{name: "default"},
		{name: "TokenWindow", policy: func(llms.Model) memory.Policy { return memory.TokenWindow(longTokens, nil, nil) }},
		{name: "TokenWindow+EvictTo", policy: func(llms.Model) memory.Policy {
			return memory.TokenWindow(longTokens, nil, &memory.WindowOptions{EvictTo: longTokens * 3 / 5})
		}},
		{name: "Compressing"},
	}
	c := mems[3]
	c.policy = func(model llms.Model) memory.Policy {
		c.compressing = memory.Compressing(longTokens, memory.NewModelSummarizer(model, nil), &memory.CompressOptions{Logger: quiet()})
		return c.compressing
	}
	return mems
}

// longUser returns the user message of turn i: small talk, and, with
// tools, one turn in three asks for the weather (in two cities at once
// one time in two), which the model answers with tool calls.
func longUser(i int, tools bool) string {
	cities := []string{"Paris", "Rome", "Oslo", "Lima", "Cairo", "Kyoto", "Quito"}
	switch {
	case tools && i%6 == 1:
		return fmt.Sprintf("weather in %s", cities[i%len(cities)])
	case tools && i%6 == 4:
		return fmt.Sprintf("weather in %s and %s", cities[i%len(cities)], cities[(i+3)%len(cities)])
	}
	return fmt.Sprintf("Turn %d: the forge needs charcoal, and the apprentice is late again.", i)
}

// longAnswer returns the answer the model gives to turn i.
func longAnswer(i int, tools bool) string {
	user := longUser(i, tools)
	rest, ok := strings.CutPrefix(user, "weather in ")
	if !ok {
		return "You said: " + user
	}
	var parts []string
	for _, city := range strings.Split(rest, " and ") {
		parts = append(parts, "sunny in "+city)
	}
	return "So: " + strings.Join(parts, "; ") + "."
}

// longScript answers the conversation of longUser: small talk with
// "You said: …", a weather question with a call of the weather tool per
// city, tool results with "So: …", and a summary request of a
// memory.ModelSummarizer with longSummary.
func longScript() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if isSummaryRequest(req) {
			return llmtest.Reply{Text: longSummary}, nil
		}
		if res := req.LastToolResults(); len(res) > 0 {
			parts := make([]string, len(res))
			for i, r := range res {
				parts[i] = r.Content
			}
			return llmtest.Reply{Text: "So: " + strings.Join(parts, "; ") + "."}, nil
		}
		user := req.LastUserText()
		if rest, ok := strings.CutPrefix(user, "weather in "); ok {
			var r llmtest.Reply
			for _, city := range strings.Split(rest, " and ") {
				r.ToolCalls = append(r.ToolCalls, llmtest.ToolCall{Name: "weather", Arguments: `{"city":"` + city + `"}`})
			}
			return r, nil
		}
		return llmtest.Reply{Text: "You said: " + user}, nil
	})
}

// isSummaryRequest reports whether req is a memory.ModelSummarizer's: its
// system message is the summarizer's instructions.
func isSummaryRequest(req *llmtest.Request) bool {
	for _, m := range req.Messages {
		if m.Role != llms.ChatMessageTypeSystem {
			break
		}
		for _, p := range m.Parts {
			if t, ok := p.(llms.TextContent); ok && strings.HasPrefix(t.Text, memory.DefaultSummaryInstructions) {
				return true
			}
		}
	}
	return false
}

// checkLongConversation plays a conversation of longTurns turns (text
// turns, and tool turns when the client carries tools) with each memory of
// longMemories, in a session of its own: every memory is full after a few
// turns and then evicts, or summarises, on most of the others. Every turn
// must be answered; every request (the summarizer's too) must start,
// after the system message, with a user message, and the chat's must
// hold the previous turn; a compressing memory's summaries must all
// succeed.
func checkLongConversation(t *testing.T, c Client) error {
	var errs []error
	for _, mem := range longMemories() {
		if err := playLong(t, c, mem); err != nil {
			errs = append(errs, fmt.Errorf("memory %s: %w", mem.name, err))
		}
	}
	return errors.Join(errs...)
}

// playLong plays the long conversation with mem.
func playLong(t *testing.T, c Client, mem *longMemory) error {
	a, err := newApp(t, c, longScript(), appOptions{tools: c.Tools, policy: mem.policy})
	if err != nil {
		return err
	}
	ctx := checkContext(t)
	s, err := a.session(ctx)
	if err != nil {
		return err
	}
	failed, full := 0, -1 // full: the first turn whose request lacks the first turn
	var first error
	for i := range longTurns {
		ans, err := a.ask(ctx, s, longUser(i, c.Tools))
		if err == nil && ans != longAnswer(i, c.Tools) {
			err = fmt.Errorf("answered %q, want %q", ans, longAnswer(i, c.Tools))
		}
		if err == nil && i > 0 {
			// The request of this turn's first model call holds the
			// previous turn: the memory is replayed.
			err = a.turnRequestHolds(longAnswer(i-1, c.Tools))
		}
		if err == nil && full < 0 && i > 0 && !a.turnRequestHas(longUser(0, c.Tools)) {
			full = i
		}
		if err != nil {
			failed++
			if first == nil {
				first = fmt.Errorf("turn %d: %w", i, err)
			}
		}
	}
	// The requests the provider accepted: they too must start with a
	// user message, which some providers do not check.
	reqs := a.rec.Requests()
	bad := 0
	var firstBad error
	for _, req := range reqs {
		if err := startsWithUser(req.Messages); err != nil {
			bad++
			if firstBad == nil {
				firstBad = fmt.Errorf("request %d: %w", req.Index, err)
			}
		}
	}
	switch {
	case failed > 0 || bad > 0:
		return fmt.Errorf("%d of %d turns failed, %d of the %d requests received start with an AI or tool message; the first failure: %w",
			failed, longTurns, bad, len(reqs), cmp.Or(first, firstBad))
	case full < 0 || full > longFull:
		return fmt.Errorf("the memory still held the first turn at turn %d: the conversation did not run past its window", min(full, longTurns))
	}
	if p := mem.compressing; p != nil {
		if st := p.Stats(); st.Compressions == 0 || st.Failures > 0 || st.Dropped > 0 {
			return fmt.Errorf("the compressing memory %+v: it must summarise, and never fail nor drop messages", st)
		}
	}
	return nil
}

// turnRequest returns the chat request of the first model call of the
// last turn: the last request that is not a summarizer's and does not end
// in tool results.
func (a *app) turnRequest() (llmtest.Request, error) {
	reqs := a.rec.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if !isSummaryRequest(&reqs[i]) && len(reqs[i].LastToolResults()) == 0 {
			return reqs[i], nil
		}
	}
	return llmtest.Request{}, errors.New("the server received no request")
}

// turnRequestHolds reports an error unless the request of the last turn
// holds an AI message with text.
func (a *app) turnRequestHolds(text string) error {
	req, err := a.turnRequest()
	if err != nil {
		return err
	}
	return contains("the turn's request", describe(req.Messages), "ai: "+text)
}

// turnRequestHas reports whether the request of the last turn holds a user
// message with text.
func (a *app) turnRequestHas(text string) bool {
	req, err := a.turnRequest()
	return err == nil && contains("", describe(req.Messages), "human: "+text) == nil
}

// startsWithUser reports an error unless msgs, after the system messages,
// start with a user message.
func startsWithUser(msgs []llms.MessageContent) error {
	for _, m := range msgs {
		switch m.Role {
		case llms.ChatMessageTypeSystem:
			continue
		case llms.ChatMessageTypeHuman:
			return nil
		}
		return fmt.Errorf("the conversation starts with a %s message:\n\t%s", m.Role, strings.Join(describe(msgs), "\n\t"))
	}
	return nil
}
