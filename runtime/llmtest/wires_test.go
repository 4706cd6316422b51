package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/llmtest/llmclient"
)

// wireServer is what every server of the package has.
type wireServer interface {
	Requests() []llmtest.Request
	Calls() int
	Close()
}

// wire starts one kind of server and langchaingo's client for it.
type wire struct {
	name string
	// start starts a server (not closed by the test's cleanup) and a client.
	start func(t *testing.T, script llmtest.Script) (wireServer, llms.Model)
	// cancels reports whether the client stops reading when its context is
	// cancelled (mistral-go takes no context).
	cancels bool
	// statusText is in the client's error for a 429 answer, and midStream
	// in its error for a stream cut off after its chunks.
	statusText, midStream string
}

// wires are the wires besides OpenAI's, whose own tests cover the same.
var wires = []wire{
	{"anthropic", func(t *testing.T, script llmtest.Script) (wireServer, llms.Model) {
		srv := llmtest.NewAnthropicServer(script, nil)
		llm, err := llmclient.Anthropic(srv)
		if err != nil {
			t.Fatal(err)
		}
		return srv, llm
	}, true, "API returned unexpected status code: 429:", "issue scanning response: unexpected EOF"},
	{"gemini", func(t *testing.T, script llmtest.Script) (wireServer, llms.Model) {
		srv := llmtest.NewGeminiServer(script, nil)
		llm, err := llmclient.GoogleAI(context.Background(), srv)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = llm.Close() })
		return srv, llm
	}, true, "googleapi: Error 429:", "error in stream mode"},
	{"ollama", func(t *testing.T, script llmtest.Script) (wireServer, llms.Model) {
		srv := llmtest.NewOllamaServer(script, nil)
		llm, err := llmclient.Ollama(srv)
		if err != nil {
			t.Fatal(err)
		}
		return srv, llm
	}, true, "", "out of memory"},
	{"mistral", func(t *testing.T, script llmtest.Script) (wireServer, llms.Model) {
		srv := llmtest.NewMistralServer(script, nil)
		llm, err := llmclient.Mistral(srv)
		if err != nil {
			t.Fatal(err)
		}
		return srv, llm
	}, false, "(HTTP Error 429)", "error reading stream response"},
}

// hi is a conversation every client can send.
var hi = []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, "Be brief."), human("Hi")}

func TestWiresDisconnect(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			srv, llm := w.start(t, llmtest.Sequence(llmtest.Reply{Disconnect: true}, llmtest.Reply{Text: "back"}))
			defer srv.Close()
			if _, err := llm.GenerateContent(context.Background(), hi); err == nil {
				t.Fatal("no error for a dropped connection")
			}
			resp, err := llm.GenerateContent(context.Background(), hi)
			if err != nil || !strings.Contains(choicesText(resp), "back") {
				t.Fatalf("after the drop: %v", err)
			}
		})
	}
}

func TestWiresCloseDuringDelay(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			srv, llm := w.start(t, llmtest.Sequence(llmtest.Reply{Text: "late", Delay: time.Hour}))
			errc := make(chan error, 1)
			go func() {
				_, err := llm.GenerateContent(context.Background(), hi)
				errc <- err
			}()
			for srv.Calls() == 0 {
				time.Sleep(time.Millisecond)
			}
			srv.Close()
			if err := <-errc; err == nil {
				t.Fatal("no error when the server closed during the delay")
			}
			srv.Close()
		})
	}
}

// TestWiresCancelMidStream cancels the context after the first streamed
// chunk, while the server waits an hour before the next: the call ends, and
// (checked by TestMain) nothing is left running.
func TestWiresCancelMidStream(t *testing.T) {
	for _, w := range wires {
		if !w.cancels {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			srv, llm := w.start(t, llmtest.Rules().WithFallback(llmtest.Reply{Text: "one two three", ChunkDelay: time.Hour}))
			defer srv.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := llm.GenerateContent(ctx, hi, llms.WithStreamingFunc(func(_ context.Context, chunk []byte) error {
				if string(chunk) == "one " {
					cancel()
				}
				return nil
			}))
			if err == nil && choicesText(resp) == "one two three" {
				t.Fatal("the whole answer came through")
			}
		})
	}
}

func TestWiresRejectOversizedBody(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			srv, llm := w.start(t, llmtest.Rules().WithFallback(llmtest.Reply{Text: "ok"}))
			defer srv.Close()
			big := []llms.MessageContent{hi[0], human(strings.Repeat("x", 8<<20))}
			_, err := llm.GenerateContent(context.Background(), big)
			mustContain(t, err, "request body too large")
			if srv.Calls() != 0 {
				t.Fatalf("calls %d", srv.Calls())
			}
		})
	}
}

// TestWiresInvalidArguments checks that invalid scripted arguments reach
// the clients whose wire carries an object, as {"invalid_arguments": …}.
func TestWiresInvalidArguments(t *testing.T) {
	for _, w := range wires[:2] { // anthropic and gemini: the clients that return tool calls
		for _, streamed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/streamed=%v", w.name, streamed), func(t *testing.T) {
				srv, llm := w.start(t, llmtest.Rules().WithFallback(llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "weather", Arguments: `{"city":`}}}))
				defer srv.Close()
				opts := []llms.CallOption{llms.WithTools([]llms.Tool{weatherTool})}
				if streamed {
					opts = append(opts, llms.WithStreamingFunc(func(context.Context, []byte) error { return nil }))
				}
				resp, err := llm.GenerateContent(context.Background(), hi, opts...)
				if err != nil {
					t.Fatal(err)
				}
				calls := choicesToolCalls(resp)
				if len(calls) != 1 || calls[0].FunctionCall.Arguments != `{"invalid_arguments":"{\"city\":"}` {
					t.Fatalf("calls %q", callSummary(calls))
				}
			})
		}
	}
}

func TestWiresFailures(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			srv, llm := w.start(t, llmtest.Sequence(
				llmtest.Reply{Status: 429, ErrorMessage: "Slow down, please."},
				llmtest.Reply{Text: "partial answer", Err: errors.New("out of memory")},
			))
			defer srv.Close()
			ctx := context.Background()
			_, err := llm.GenerateContent(ctx, hi)
			mustContain(t, err, w.statusText, "Slow down, please.")
			var rec recorder
			_, err = llm.GenerateContent(ctx, hi, llms.WithStreamingFunc(rec.fn))
			mustContain(t, err, w.midStream)
			if strings.Join(rec.got(), "") != "partial answer" {
				t.Fatalf("chunks before the failure %q", rec.got())
			}
		})
	}
}
