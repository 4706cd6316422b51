package ai_test

import (
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/schema"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// TestLastUserTypedSkipsPassages: with generic knowledge the user message
// the model gets starts with the passages; llmtest.LastUserTyped matches
// only what the user typed, where LastUserContains also matches a
// passage, and Request.UserTyped is the user's message as typed, through
// langchaingo's real OpenAI client.
func TestLastUserTypedSkipsPassages(t *testing.T) {
	policy := []schema.Document{doc("returns", "Returns", "A weapon may be returned within thirty days of its forging.")}
	script := func(match func(string) llmtest.Match) llmtest.Script {
		return llmtest.Rules(
			llmtest.When(match("return"), llmtest.Reply{Text: "You want to return something."}),
		).WithFallback(llmtest.Reply{Text: "Something else."})
	}
	for _, tc := range []struct {
		name  string
		match func(string) llmtest.Match
		want  string
	}{
		{"LastUserContains", llmtest.LastUserContains, "You want to return something."}, // a passage matched
		{"LastUserTyped", llmtest.LastUserTyped, "Something else."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newServerFixture(t, script(tc.match), &ai.Config{Knowledge: &ai.Knowledge{Retriever: &keywords{docs: policy}}})
			ctx := begin(t)
			req := f.req("Is a weapon forged on Monday sharp?")
			req.Method.Tools = nil
			reply, err := f.svc.Chat(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(reply.Sources) != 1 {
				t.Fatalf("sources %v: the passage was not sent", reply.Sources)
			}
			if reply.Content != tc.want {
				t.Fatalf("answer %q, want %q", reply.Content, tc.want)
			}
			got := f.requests()[0]
			if typed := got.UserTyped(); typed != "Is a weapon forged on Monday sharp?" {
				t.Fatalf("UserTyped %q; the message sent: %q", typed, got.LastUserText())
			}
		})
	}
	// Without passages, what was typed is the whole message.
	f := newServerFixture(t, script(llmtest.LastUserTyped), &ai.Config{})
	ctx := begin(t)
	req := f.req("I want to return my sword.")
	req.Method.Tools = nil
	if r, err := f.svc.Chat(ctx, req); err != nil || r.Content != "You want to return something." {
		t.Fatalf("%v, %v", r, err)
	}
	if typed := f.requests()[0].UserTyped(); typed != "I want to return my sword." {
		t.Fatalf("UserTyped %q", typed)
	}
}

// TestUserTypedOfAugmentMessage pins llmtest's reading of
// ai.AugmentMessage: what follows the passages, even when a passage holds
// the line that closes them; a message that holds it itself is read from
// its last one, never from a passage.
func TestUserTypedOfAugmentMessage(t *testing.T) {
	docs := []schema.Document{doc("mail", "Mail", "Subject:\nMessage:\nDear smith, ..."), doc("x", "", "")}
	for user, want := range map[string]string{"hello": "hello", "two\nlines": "two\nlines", "": "", "see\nMessage:\nquoted": "quoted"} {
		req := llmtest.Request{Messages: []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, ai.AugmentMessage(user, docs))}}
		if got := req.UserTyped(); got != want {
			t.Fatalf("UserTyped of %q: %q, want %q", user, got, want)
		}
	}
}
