package agent_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/ws"
)

// The sequential and loop agents of the guide's Agents chapter, written
// by hand as chatgen generates them: a writer, an editor and a critic, and
// the routes "write" and "refine" that run them.

const (
	writerSystem = "Write one short paragraph on the topic you are given."
	editorSystem = "Improve the paragraph you are given, following the review if there is one. Answer with the paragraph only."
	criticSystem = "Review the paragraph. Answer APPROVED if it needs no change; otherwise say what to change."
	maxRounds    = 3
)

// studio serves the two routes; the critic approves the draft once it
// has been revised approveAfter times (never when it is larger than
// maxRounds).
func studio(t *testing.T, approveAfter int) (*llmtest.Server, string) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		user := lastHuman(req.Messages)
		switch text(req.Messages[0]) {
		case writerSystem:
			return llmtest.Reply{Text: "draft of " + user}, nil
		case editorSystem:
			draft, _, _ := strings.Cut(user, "\n\nReview: ")
			return llmtest.Reply{Text: draft + "+"}, nil
		case criticSystem:
			if strings.Count(user, "+") >= approveAfter {
				return llmtest.Reply{Text: "APPROVED"}, nil
			}
			return llmtest.Reply{Text: "more detail"}, nil
		}
		return llmtest.Reply{}, fmt.Errorf("unexpected request %q", describe(req.Messages))
	}), nil)
	t.Cleanup(srv.Close)
	llm, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ai.Config{Model: llm, Memory: memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(50, nil)})}
	call := func(name, system string) func(ctx context.Context, msg string) (string, error) {
		svc := ai.NewService("example.com/studio."+name, cfg)
		m := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: system}
		return func(ctx context.Context, msg string) (string, error) {
			r, err := svc.Chat(ctx, &ai.Request{Method: m, User: msg})
			if err != nil {
				return "", err
			}
			return r.Content, nil
		}
	}
	draft, edit, review := call("Writer", writerSystem), call("Editor", editorSystem), call("Critic", criticSystem)
	p := chatimpl.NewPackage("example.com/studio")
	p.AddRoute(chatimpl.RouteSpec{Name: "write", Default: true, Handle: func(ctx context.Context) error {
		d, err := draft(ctx, chat.Request(ctx).UserMessage())
		if err != nil {
			return err
		}
		if err := chat.Response(ctx).Thinking("draft: " + d); err != nil {
			return err
		}
		out, err := edit(ctx, d)
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, out)
	}})
	p.AddRoute(chatimpl.RouteSpec{Name: "refine", Handle: func(ctx context.Context) error {
		d, err := draft(ctx, chat.Request(ctx).UserMessage())
		for round := 1; err == nil && round <= maxRounds; round++ {
			var r string
			if r, err = review(ctx, d); err != nil || r == "APPROVED" {
				break
			}
			if err = chat.Response(ctx).Thinking(fmt.Sprintf("round %d: %s", round, r)); err == nil {
				d, err = edit(ctx, d+"\n\nReview: "+r)
			}
		}
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, d)
	}})
	router, err := chat.NewRouter(nil, p)
	if err != nil {
		t.Fatal(err)
	}
	s := ws.NewServer(router, nil)
	hs := httptest.NewServer(s)
	t.Cleanup(func() {
		s.Close()
		hs.Close()
	})
	return srv, hs.URL
}

// The sequential agent: the writer's draft is the editor's input, each
// step's progress reaches the client.
func TestSequentialAgent(t *testing.T) {
	srv, url := studio(t, 1)
	c := (&app{url: url}).dial(t, "write")
	wantStrings(t, "the events", c.say(t, "owls"), "Thinking: draft: draft of owls", "Message: draft of owls+")
	var order []string
	for _, r := range srv.Requests() {
		order = append(order, describe(r.Messages)...)
	}
	wantStrings(t, "the model's requests", order,
		"system: "+writerSystem, "human: owls",
		"system: "+editorSystem, "human: draft of owls")
}

// The loop agent: critic and editor take turns until the critic
// approves, and never more than maxRounds rounds.
func TestLoopAgent(t *testing.T) {
	t.Run("approved", func(t *testing.T) {
		srv, url := studio(t, 2)
		c := (&app{url: url}).dial(t, "refine")
		wantStrings(t, "the events", c.say(t, "owls"),
			"Thinking: round 1: more detail", "Thinking: round 2: more detail", "Message: draft of owls++")
		if n := len(srv.Requests()); n != 1+3+2 { // the draft, three reviews, two edits
			t.Fatalf("%d model calls", n)
		}
		// The editor remembers the earlier round.
		last := srv.Requests()[len(srv.Requests())-2]
		wantStrings(t, "the editor's second request", describe(last.Messages),
			"system: "+editorSystem, "human: draft of owls\n\nReview: more detail", "ai: draft of owls+",
			"human: draft of owls+\n\nReview: more detail")
	})
	t.Run("bounded", func(t *testing.T) {
		srv, url := studio(t, maxRounds+1)
		c := (&app{url: url}).dial(t, "refine")
		wantStrings(t, "the events", c.say(t, "owls"),
			"Thinking: round 1: more detail", "Thinking: round 2: more detail", "Thinking: round 3: more detail", "Message: draft of owls+++")
		if n := len(srv.Requests()); n != 1+3+3 {
			t.Fatalf("%d model calls", n)
		}
	})
}
