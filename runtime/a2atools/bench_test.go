package a2atools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chatscopes/chatgen/runtime/a2atools"
)

// BenchmarkCall measures one call of a remote agent's tool over loopback,
// streamed and plain: against @a2a-js/sdk's server in Node (A2A 1.0, this
// package's client; the allocations are the client's) and a2a-go's in
// process (A2A 0.3, a2a-go's client; the allocations are the client's and
// the server's).
func BenchmarkCall(b *testing.B) {
	for _, ag := range agents {
		u := ag.start(b)
		for _, plain := range []bool{false, true} {
			name := ag.name + "/stream"
			if plain {
				name = ag.name + "/plain"
			}
			b.Run(name, func(b *testing.B) {
				src, err := a2atools.Connect(context.Background(), &a2atools.Options{URL: u, NoStream: plain, Logger: quiet})
				if err != nil {
					b.Fatal(err)
				}
				defer src.Close()
				call := src.ListTools()[0].Invoke
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					res, err := call(ctx, `{"message":"hello"}`)
					if err != nil {
						b.Fatal(err)
					}
					if s, _ := res.(string); !strings.HasSuffix(s, "of this context: hello") {
						b.Fatalf("result %q", res)
					}
				}
			})
		}
	}
}

// BenchmarkTurn measures a whole turn over the websocket whose model
// calls the remote agent's tool once (two model calls on llmtest's
// loopback OpenAI server): what the remote call adds to a turn.
func BenchmarkTurn(b *testing.B) {
	for _, ag := range agents {
		b.Run(ag.name, func(b *testing.B) {
			c := newApp(b, nil, nil, connect(b, ag.start(b), nil)).dial(b)
			b.ReportAllocs()
			for b.Loop() {
				if got := c.chat(b, "new Smith: hello"); !strings.HasSuffix(got, "of this context: hello") {
					b.Fatalf("answer %q", got)
				}
				c.takeAgentEvents()
			}
		})
	}
}
