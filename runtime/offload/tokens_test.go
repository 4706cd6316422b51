package offload_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/offload"
)

// fiftyTurns is the user's side of a tool-heavy conversation: logs of
// 2, 6, 12 and 20 KB fetched in turn, and every fifth turn a question on
// lines of the last log fetched, which the model answers from the history
// or, with offload, by reading them back.
func fiftyTurns() []string {
	sizes := []int{50, 150, 300, 500}
	var out []string
	for i := range 50 {
		if i%5 == 4 {
			out = append(out, "recheck")
			continue
		}
		out = append(out, fmt.Sprintf("logs %d", sizes[i%len(sizes)]))
	}
	return out
}

// recheckScript is script, plus "recheck": read lines 10 to 12 of the
// last log again with read_result when the prompt has a stub, else answer
// from the history — "found" when the log's line 11 is still there.
func recheckScript() llmtest.Script {
	base := script()
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if req.UserTyped() != "recheck" || len(req.LastToolResults()) > 0 {
			return base.Next(req)
		}
		for i := len(req.Messages) - 1; i >= 0; i-- {
			for _, c := range toolContents(llmtest.Request{Messages: req.Messages[i : i+1]}) {
				if strings.HasPrefix(c, `{"offloaded":`) {
					return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: offload.ToolRead, Arguments: fmt.Sprintf(`{"id":%q,"line":10,"lines":3}`, lastStubID(req.Messages[i:i+1]))}}}, nil
				}
				if strings.Contains(c, "00011 forge heat") {
					return llmtest.Reply{Text: "found in the history"}, nil
				}
			}
		}
		return llmtest.Reply{Text: "lost"}, nil
	})
}

// The figure of docs/numbers.md: the prompt tokens of a 50-turn
// tool-heavy conversation (the turns' Reply.Usage, as langchaingo's OpenAI
// client reports llmtest's counts), with a 40-message window, without and
// with offload (the default threshold, 8 KiB). Every recheck must find
// its lines in both; offload must send at most half the tokens.
func TestFiftyTurnsTokens(t *testing.T) {
	run := func(noOffload bool, opts *offload.Options) (tokens, calls int64) {
		mems := memory.NewInMemoryStore()
		n, err := newNodeWith(t, nodeConfig{mems: mems, offStore: mems, noOffload: noOffload, opts: opts, window: 40, script: recheckScript()})
		if err != nil {
			t.Fatal(err)
		}
		rec := &answers{}
		s := rec.connect(t, n, "ada")
		for i, msg := range fiftyTurns() {
			got := say(t, s, rec, msg)
			if msg != "recheck" {
				continue
			}
			switch {
			case got == "found in the history":
			case !noOffload && strings.HasPrefix(got, "read: ") && strings.Contains(readPart(t, got).Text, "00011 forge heat"):
			default:
				t.Fatalf("offload %v, turn %d: the recheck was answered %.200q", !noOffload, i+1, got)
			}
		}
		var server int64
		for _, r := range n.llm.Requests() {
			server += int64(r.PromptTokens)
		}
		if server != n.usage.Load() {
			t.Fatalf("the replies' usage counts %d prompt tokens, the server %d", n.usage.Load(), server)
		}
		return n.usage.Load(), n.calls.Load()
	}
	without, callsWithout := run(true, nil)
	with, callsWith := run(false, nil)
	stubbed, callsStubbed := run(false, &offload.Options{Inline: -1, Logger: quiet()})
	t.Logf("50 turns, 40-message window: %d prompt tokens in %d model calls without offload, %d in %d with (%.0f%%), %d in %d with the stub at once (Inline -1, %.0f%%)",
		without, callsWithout, with, callsWith, 100*float64(with)/float64(without),
		stubbed, callsStubbed, 100*float64(stubbed)/float64(without))
	if with*2 > without || stubbed > with {
		t.Fatalf("offload sent %d prompt tokens (%d with the stub at once), more than half of %d", with, stubbed, without)
	}
}
