package ai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/llmtest"
)

// BenchmarkAITurnPeerLangchaingo is BenchmarkAITurn's turn written by hand
// on langchaingo alone, the floor an AI service is measured against: the
// same system and user messages, the same two tools offered, the same
// scripted model (one tool call, then the answer), and a history kept
// across turns and cut to the same window (the system message and the
// last 9 messages, what a memory.Window of memory.DefaultMaxMessages
// holds). Compare it with BenchmarkAITurn in the same run:
//
//	go test ./runtime/ai -run '^$' -bench 'AITurn' -benchmem -count 6
//
// Fairness: the loop below is what a careful langchaingo user writes, and
// no more. It does not copy messages into or out of its history (a
// caller can change the history through them), check tool arguments
// against their schema, keep a memory per chat scope, count usage, log, or
// serialise concurrent turns, all of which the service does. Both variants
// pay the scripted model and the tool's JSON decoding.
func BenchmarkAITurnPeerLangchaingo(b *testing.B) {
	run := func(b *testing.B, model llms.Model, reset func()) {
		ctx := context.Background()
		a := &peerAgent{
			model:  model,
			system: llms.TextParts(llms.ChatMessageTypeSystem, "You are terse."),
			opts:   []llms.CallOption{llms.WithTools(peerTools)},
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			answer, calls, err := a.turn(ctx, "Weather in Paris?")
			if err != nil {
				b.Fatal(err)
			}
			if calls != 2 || answer != "It is sunny in Paris." {
				b.Fatalf("%d model calls, answer %q", calls, answer)
			}
			if i++; reset != nil && i%1000 == 0 {
				reset() // llmtest.Model records every request
			}
		}
		if len(a.history) != peerWindow {
			b.Fatalf("history holds %d messages, want %d", len(a.history), peerWindow)
		}
	}
	b.Run("llmtest.Model", func(b *testing.B) {
		m := llmtest.NewModel(llmtest.Rules(
			llmtest.When(llmtest.AfterToolResult(""), llmtest.Reply{Text: "It is sunny in Paris."}),
			llmtest.When(nil, llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":"Paris"}`}}}),
		), nil)
		run(b, m, m.Reset)
	})
	b.Run("bare-model", func(b *testing.B) {
		run(b, newFastModel(), nil) // BenchmarkAITurn's bare model
	})
}

// peerTools are the definitions of the tools BenchmarkAITurn offers, the
// []llms.Tool a langchaingo user passes to llms.WithTools.
var peerTools = []llms.Tool{benchTools[0].Definition, benchTools[1].Definition}

const (
	// peerWindow is how many messages besides the system message the
	// history keeps.
	peerWindow = 9
	// peerMaxCalls bounds the model calls of a turn, as the service does.
	peerMaxCalls = 10
)

// peerAgent is a chat agent written by hand on langchaingo: a model, the
// system message, the call options and the history.
type peerAgent struct {
	model   llms.Model
	system  llms.MessageContent
	opts    []llms.CallOption
	history []llms.MessageContent
}

// turn answers user: it calls the model with the system message, the
// history and the user message, runs the tools the model asks for until it
// answers, and adds the turn to the history. It returns the answer and the
// number of model calls.
func (a *peerAgent) turn(ctx context.Context, user string) (string, int, error) {
	prompt := make([]llms.MessageContent, 0, len(a.history)+6)
	prompt = append(prompt, a.system)
	prompt = append(prompt, a.history...)
	start := len(prompt)
	prompt = append(prompt, llms.TextParts(llms.ChatMessageTypeHuman, user))
	for calls := 1; calls <= peerMaxCalls; calls++ {
		resp, err := a.model.GenerateContent(ctx, prompt, a.opts...)
		if err != nil {
			return "", calls, err
		}
		if len(resp.Choices) == 0 {
			return "", calls, errors.New("no choice")
		}
		choice := resp.Choices[0]
		if len(choice.ToolCalls) == 0 {
			prompt = append(prompt, llms.TextParts(llms.ChatMessageTypeAI, choice.Content))
			a.remember(prompt[start:])
			return choice.Content, calls, nil
		}
		call := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: make([]llms.ContentPart, 0, len(choice.ToolCalls))}
		for _, tc := range choice.ToolCalls {
			call.Parts = append(call.Parts, tc)
		}
		prompt = append(prompt, call)
		for _, tc := range choice.ToolCalls {
			prompt = append(prompt, llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
				llms.ToolCallResponse{ToolCallID: tc.ID, Name: tc.FunctionCall.Name, Content: peerDispatch(tc.FunctionCall)},
			}})
		}
	}
	return "", peerMaxCalls, fmt.Errorf("still calling tools after %d model calls", peerMaxCalls)
}

// remember appends a turn to the history and keeps its last peerWindow
// messages.
func (a *peerAgent) remember(turn []llms.MessageContent) {
	a.history = append(a.history, turn...)
	if over := len(a.history) - peerWindow; over > 0 {
		a.history = append(a.history[:0], a.history[over:]...)
	}
}

// peerDispatch runs a tool call and returns what the model is told.
func peerDispatch(fc *llms.FunctionCall) string {
	switch fc.Name {
	case "weather":
		var args struct {
			City string `json:"city"`
		}
		if err := json.Unmarshal([]byte(fc.Arguments), &args); err != nil {
			return "error: invalid arguments: " + err.Error()
		}
		return "sunny in " + args.City
	case "price":
		return "10"
	}
	return fmt.Sprintf("error: unknown tool %q", fc.Name)
}
