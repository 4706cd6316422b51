package llmtest

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// ErrScriptExhausted is returned (wrapped) by a [Sequence] asked for more
// replies than it holds. Its text reads "llmtest: script exhausted after N
// replies".
var ErrScriptExhausted = errors.New("llmtest: script exhausted")

// ErrNoRuleMatched is returned (wrapped) by a [Rules] script when no rule
// matches a request and there is no fallback.
var ErrNoRuleMatched = errors.New("llmtest: no rule matched")

// Script chooses the model's reply to each request.
//
// [Model] and [Server] call Next with their lock held, so calls of one Model
// or Server are serialized and numbered in order; Next must not call back
// into the Model or Server. The scripts of this package are also safe to
// share between several Models and Servers. An error from Next is a broken
// test script, not a scripted model failure (use [Reply.Err] or
// [Reply.Status] for those): in-process GenerateContent returns it, the
// server answers 500 with its text.
type Script interface {
	// Next returns the reply to req, whose Index is already set.
	Next(req *Request) (Reply, error)
}

// ScriptFunc adapts a function to a [Script].
type ScriptFunc func(req *Request) (Reply, error)

// Next calls f(req).
func (f ScriptFunc) Next(req *Request) (Reply, error) { return f(req) }

// SequenceScript plays its replies in order. Create one with [Sequence].
type SequenceScript struct {
	mu      sync.Mutex
	replies []Reply
	next    int
}

// Sequence returns a script that answers the n-th request with the n-th
// reply. Asked for more, it returns an error wrapping [ErrScriptExhausted]:
// "llmtest: script exhausted after N replies".
func Sequence(replies ...Reply) *SequenceScript {
	return &SequenceScript{replies: append([]Reply(nil), replies...)}
}

// Next returns the next reply of the sequence.
func (s *SequenceScript) Next(*Request) (Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.replies) {
		return Reply{}, fmt.Errorf("%w after %d replies", ErrScriptExhausted, len(s.replies))
	}
	r := s.replies[s.next]
	s.next++
	return r, nil
}

// Remaining is the number of replies not played yet.
func (s *SequenceScript) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.replies) - s.next
}

// Reset rewinds the sequence to its first reply. [Model.Reset] and
// [Server.Reset] call it.
func (s *SequenceScript) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = 0
}

// Match reports whether a rule applies to a request.
type Match func(req *Request) bool

// Rule is one rule of a [Rules] script: when Match accepts a request, the
// rule produces the reply. Create rules with [When] and [WhenFunc].
type Rule struct {
	match Match
	reply func(req *Request) (Reply, error)
}

// When returns a rule answering reply to the requests match accepts. A nil
// match accepts every request.
func When(match Match, reply Reply) Rule {
	return Rule{match: match, reply: func(*Request) (Reply, error) { return reply, nil }}
}

// WhenFunc returns a rule answering the requests match accepts with the
// reply f computes from the request. A nil match accepts every request.
func WhenFunc(match Match, f func(req *Request) (Reply, error)) Rule {
	return Rule{match: match, reply: f}
}

// RuleScript answers with the first matching rule. Create one with [Rules].
// It is immutable and safe for concurrent use (as long as the rules' own
// functions are).
type RuleScript struct {
	rules    []Rule
	fallback func(req *Request) (Reply, error)
}

// Rules returns a script that answers each request with the first rule
// whose match accepts it. Without a match and without a fallback (see
// [RuleScript.WithFallback]) Next returns an error wrapping
// [ErrNoRuleMatched] that quotes the last user message.
func Rules(rules ...Rule) *RuleScript {
	return &RuleScript{rules: append([]Rule(nil), rules...)}
}

// WithFallback returns a copy of s that answers reply when no rule matches.
func (s *RuleScript) WithFallback(reply Reply) *RuleScript {
	return s.WithFallbackFunc(func(*Request) (Reply, error) { return reply, nil })
}

// WithFallbackFunc returns a copy of s that answers with f when no rule
// matches.
func (s *RuleScript) WithFallbackFunc(f func(req *Request) (Reply, error)) *RuleScript {
	return &RuleScript{rules: s.rules, fallback: f}
}

// Next returns the reply of the first matching rule, else of the fallback.
func (s *RuleScript) Next(req *Request) (Reply, error) {
	for _, r := range s.rules {
		if r.match == nil || r.match(req) {
			return r.reply(req)
		}
	}
	if s.fallback != nil {
		return s.fallback(req)
	}
	return Reply{}, fmt.Errorf("%w request %d (last user message %q)", ErrNoRuleMatched, req.Index, truncate(req.LastUserText(), 80))
}

// truncate shortens s to at most n bytes (on a rune boundary), marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// LastUserContains matches requests whose last user (human) message
// contains sub, ignoring case. The message is the whole text the model
// got: with runtime/ai's generic knowledge, the passages retrieved come
// first in it, so sub may match a passage; [LastUserTyped] matches only
// what the user typed.
//
// The user's message stays the last human message while tool results
// follow it, so this keeps matching the follow-up calls of a tool loop:
// list rules using [AfterToolResult] before it.
func LastUserContains(sub string) Match {
	sub = strings.ToLower(sub)
	return func(req *Request) bool {
		return strings.Contains(strings.ToLower(req.LastUserText()), sub)
	}
}

// LastUserMatches matches requests whose last user (human) message matches
// re. See [LastUserContains] about tool loops.
func LastUserMatches(re *regexp.Regexp) Match {
	return func(req *Request) bool { return re.MatchString(req.LastUserText()) }
}

// LastUserTyped matches requests in which what the user typed of the last
// user (human) message contains sub, ignoring case: the message without
// the passages runtime/ai's generic knowledge adds to it (see
// [Request.UserTyped]). Use it rather than [LastUserContains] for a
// service with knowledge, so that a rule fires on the user's words, not
// on a passage's. See [LastUserContains] about tool loops.
func LastUserTyped(sub string) Match {
	sub = strings.ToLower(sub)
	return func(req *Request) bool {
		return strings.Contains(strings.ToLower(req.UserTyped()), sub)
	}
}

// LastUserTypedMatches matches requests in which what the user typed of
// the last user (human) message matches re (see [LastUserTyped]).
func LastUserTypedMatches(re *regexp.Regexp) Match {
	return func(req *Request) bool { return re.MatchString(req.UserTyped()) }
}

// HasTool matches requests that offer the tool name to the model.
func HasTool(name string) Match {
	return func(req *Request) bool {
		for _, t := range req.Tools {
			if t.Function != nil && t.Function.Name == name {
				return true
			}
		}
		return false
	}
}

// AfterToolResult matches requests that end with tool results (the tool
// messages after the last assistant message) of which one answers a call
// of the tool name. An empty name matches a result of any tool. Tool names
// come from the results, or else from the assistant's tool call with the
// same id.
func AfterToolResult(name string) Match {
	return func(req *Request) bool {
		for _, r := range req.LastToolResults() {
			if name == "" || r.Name == name {
				return true
			}
		}
		return false
	}
}

// All matches requests that every m matches.
func All(m ...Match) Match {
	return func(req *Request) bool {
		for _, f := range m {
			if !f(req) {
				return false
			}
		}
		return true
	}
}

// Any matches requests that at least one m matches.
func Any(m ...Match) Match {
	return func(req *Request) bool {
		for _, f := range m {
			if f(req) {
				return true
			}
		}
		return false
	}
}

// Not matches requests that m does not match.
func Not(m Match) Match {
	return func(req *Request) bool { return !m(req) }
}
