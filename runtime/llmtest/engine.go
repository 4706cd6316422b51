package llmtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// DefaultModelName is the model name a [Model] or [Server] reports unless
// [Options.ModelName] sets another.
const DefaultModelName = "scripted"

// Options configures a [Model] ([NewModel]) or a server ([NewServer],
// [NewAnthropicServer], [NewGeminiServer], [NewMistralServer],
// [NewOllamaServer]). A nil *Options and the zero value are the defaults:
// the model name [DefaultModelName], history validation on, no prompt
// cache.
type Options struct {
	// ModelName is the model name reported in responses and by
	// GET /v1/models, and used in-process when the call names none; ""
	// means DefaultModelName.
	ModelName string
	// NoHistoryValidation turns off the checks the OpenAI API makes on a
	// conversation's tool messages, on by default. With them on, a
	// request is rejected with status 400 (in-process: a [*StatusError]),
	// before the script sees it, when its messages are empty, when a tool
	// message does not answer a tool call of the assistant message it
	// follows, answers one twice or lacks a tool_call_id, or when an
	// assistant message's tool calls are not all answered by the tool
	// messages right after it. Rejected requests are not recorded.
	NoHistoryValidation bool
	// PromptCache, when not nil, makes the model or server simulate its
	// provider's prompt cache, as *PromptCache configures it (it is
	// copied). Each call reads the longest cached prefix of its prompt and
	// writes its own, by the rules of PromptCache.Rules (a reply that
	// fails with a Status, an Err or a Disconnect changes nothing), and
	// reports what it read and wrote in the usage it returns
	// ([Usage.CacheReadTokens] and [Usage.CacheWriteTokens], unless the
	// script set either) and in the recorded [Request]. Without it no
	// server caches, so scripted usage figures stay as they are.
	//
	// The cache is keyed on content, block by block, in the order the
	// provider reads a prompt: the tools, then the messages (the system
	// prompt first), each content part a block; its token counts are the
	// package's estimates ([EstimatePromptTokens]), cumulated block by
	// block. The cache belongs to the server: all its clients share it, as
	// an organization's requests share a provider's cache.
	PromptCache *PromptCache
}

// config is the configuration shared by Model and Server.
type config struct {
	name     string
	validate bool
	cache    *PromptCache
}

// newConfig applies opts, which may be nil, to the defaults.
func newConfig(opts *Options) config {
	c := config{name: DefaultModelName, validate: true}
	if opts == nil {
		return c
	}
	if opts.ModelName != "" {
		c.name = opts.ModelName
	}
	c.validate = !opts.NoHistoryValidation
	if opts.PromptCache != nil {
		pc := *opts.PromptCache
		c.cache = &pc
	}
	return c
}

// engine is the part shared by Model and the servers: the script, the
// recorded requests and the tool-call id counter.
type engine struct {
	script Script
	// toolID formats the n-th generated tool-call id (n counts from 1);
	// nil means call_n, the OpenAI form.
	toolID func(n int) string
	// cache is the simulated prompt cache; nil when there is none.
	cache *promptCache

	mu       sync.Mutex
	requests []Request
	toolSeq  int
}

// play numbers and records req, asks the script for a reply and resolves it.
// shape, when not nil, adapts the reply to what the wire can carry before it
// is resolved (for instance, drops reasoning a request did not ask for).
func (e *engine) play(req *Request, shape func(*Reply)) (*resolved, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	req.Index = len(e.requests)
	e.requests = append(e.requests, req.clone())
	reply, err := e.script.Next(req)
	if err != nil {
		return nil, err
	}
	if shape != nil {
		shape(&reply)
	}
	r, err := resolve(req, reply, func() string {
		e.toolSeq++
		if e.toolID != nil {
			return e.toolID(e.toolSeq)
		}
		return fmt.Sprintf("call_%d", e.toolSeq)
	})
	if err != nil || e.cache == nil || r.failing() || r.Disconnect || r.Err != nil {
		return r, err
	}
	u := e.cache.use(req)
	req.Cache = u
	e.requests[req.Index].Cache = u
	if r.Usage.CacheReadTokens == 0 && r.Usage.CacheWriteTokens == 0 {
		r.Usage.CacheReadTokens = min(u.ReadTokens, r.Usage.PromptTokens)
		r.Usage.CacheWriteTokens = min(u.WriteTokens, r.Usage.PromptTokens-r.Usage.CacheReadTokens)
	}
	return r, nil
}

// recorded returns a deep copy of the recorded requests.
func (e *engine) recorded() []Request {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Request, len(e.requests))
	for i := range e.requests {
		out[i] = e.requests[i].clone()
	}
	return out
}

// calls returns the number of recorded requests.
func (e *engine) calls() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.requests)
}

// reset forgets the recorded requests, restarts tool-call ids at call_1 and
// rewinds the script when it has a Reset method.
func (e *engine) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.requests = nil
	e.toolSeq = 0
	if r, ok := e.script.(interface{ Reset() }); ok {
		r.Reset()
	}
}

// wait sleeps for d, returning early with ctx's error when ctx is done or
// with errServerClosed when closed is closed (closed may be nil).
func wait(ctx context.Context, d time.Duration, closed <-chan struct{}) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return errServerClosed
	}
}

// validateHistory makes the checks the OpenAI API makes on tool messages
// and returns a message describing the first violation, or "".
func validateHistory(msgs []llms.MessageContent) string {
	if len(msgs) == 0 {
		return "messages must not be empty"
	}
	var (
		open     []string        // unanswered call ids of the last assistant message, in order
		pending  map[string]bool // the same, as a set
		answered map[string]bool
		openAt   = -1
	)
	missing := func() string {
		return fmt.Sprintf("messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages "+
			"responding to each 'tool_call_id'; the following tool_call_ids did not have response messages: %s",
			openAt, strings.Join(unanswered(open, pending), ", "))
	}
	for i, m := range msgs {
		if m.Role == llms.ChatMessageTypeTool {
			for _, p := range m.Parts {
				tr, ok := p.(llms.ToolCallResponse)
				if !ok {
					continue
				}
				switch {
				case tr.ToolCallID == "":
					return fmt.Sprintf("messages[%d]: tool message without tool_call_id", i)
				case answered[tr.ToolCallID]:
					return fmt.Sprintf("messages[%d]: tool_call_id %q is answered twice", i, tr.ToolCallID)
				case !pending[tr.ToolCallID]:
					return fmt.Sprintf("messages[%d]: messages with role 'tool' must be a response to a preceding "+
						"message with 'tool_calls' (tool_call_id %q answers no call of the preceding assistant message)",
						i, tr.ToolCallID)
				}
				delete(pending, tr.ToolCallID)
				answered[tr.ToolCallID] = true
			}
			continue
		}
		if len(pending) > 0 {
			return missing()
		}
		open, pending, answered, openAt = nil, nil, nil, -1
		if m.Role != llms.ChatMessageTypeAI {
			continue
		}
		for _, p := range m.Parts {
			tc, ok := p.(llms.ToolCall)
			if !ok {
				continue
			}
			if tc.ID == "" {
				return fmt.Sprintf("messages[%d]: tool call without id", i)
			}
			if pending == nil {
				pending, answered, openAt = map[string]bool{}, map[string]bool{}, i
			}
			open = append(open, tc.ID)
			pending[tc.ID] = true
		}
	}
	if len(pending) > 0 {
		return missing()
	}
	return ""
}

// unanswered returns the ids of open still in pending, in order.
func unanswered(open []string, pending map[string]bool) []string {
	var out []string
	for _, id := range open {
		if pending[id] {
			out = append(out, id)
		}
	}
	return out
}
