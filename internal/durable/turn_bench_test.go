package durable_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

// backend is where a router keeps its conversations: Store nil is a
// router without a store (conversations live in the process only).
type backend struct {
	Store    chatstore.ConversationStore
	Memories memory.Store          // the AI memories' store; nil: memory's in-memory store
	trips    *redistest.RoundTrips // Redis only
}

// backends are the four configurations the benchmarks compare.
var backends = []struct {
	name string
	open func(b *testing.B) backend
}{
	{"store=none", func(*testing.B) backend { return backend{} }},
	{"store=inmemory", func(*testing.B) backend {
		s := chat.NewInMemoryConversationStore(nil)
		return backend{Store: s, Memories: chatstoretest.InMemoryMemories(s)}
	}},
	{"store=bolt", func(b *testing.B) backend {
		s, err := boltstore.Open(filepath.Join(b.TempDir(), "chat.db"), &boltstore.Options{TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return backend{Store: s, Memories: s.Memories()}
	}},
	{"store=redis", func(b *testing.B) backend {
		c := redistest.Client(b)
		trips := new(redistest.RoundTrips)
		c.AddHook(trips)
		s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(b, c, "chatgen-durable-test"), TTL: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		return backend{Store: s, Memories: s.Memories(), trips: trips}
	}},
}

// counter is a chat-scoped durable bean: the state a route keeps.
type counter struct{ N int }

var counterBean = chat.NewDurableBean("github.com/chatscopes/chatgen/internal/durable.counter", chat.KindChat,
	func(context.Context) (*counter, error) { return &counter{}, nil })

// askMethod is what chatgen generates for a chat-scoped AI method with a
// constant system message and no tools.
var askMethod = ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are terse."}

// app is the routes of the benchmarks: "count" (the default) counts its
// turns in counterBean; "ask" asks the AI service.
func app(svc *ai.Service) *chat.Package {
	p := chat.NewPackage("github.com/chatscopes/chatgen/internal/durable")
	p.AddRoute(chat.RouteSpec{Name: "count", Default: true, Handle: func(ctx context.Context, req *chat.RouteRequest) error {
		c, err := chat.Lookup(ctx, counterBean)
		if err != nil {
			return err
		}
		c.N++
		return chat.SendValue(ctx, strconv.Itoa(c.N)+": "+req.UserMessage())
	}})
	p.AddRoute(chat.RouteSpec{Name: "ask", Handle: func(ctx context.Context, req *chat.RouteRequest) error {
		r, err := svc.Chat(ctx, &ai.Request{Method: &askMethod, User: req.UserMessage()})
		if err != nil {
			return err
		}
		return chat.SendValue(ctx, r.Content)
	}})
	return p
}

// newAI returns the AI service of the benchmarks: llmtest's in-process
// model, and a window memory of 20 messages in mem (full after ten turns;
// then each turn evicts two).
func newAI(mem memory.Store) (*ai.Service, *llmtest.Model) {
	model := llmtest.NewModel(llmtest.Rules(llmtest.When(nil, llmtest.Reply{Text: "It is sunny in Paris."})))
	svc := ai.NewService("github.com/chatscopes/chatgen/internal/durable.Assistant", ai.Config{
		Model:  model,
		Memory: memory.NewManager(memory.Config{Policy: memory.Window(20), Store: mem}),
	})
	return svc, model
}

// benchTurns runs turns of a session of route over each backend, the
// first warm turns unmeasured (the AI memory's window fills), and
// reports the Redis round trips per turn.
func benchTurns(b *testing.B, route string) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			store := be.open(b)
			svc, model := newAI(store.Memories)
			r, err := chat.NewRouter(&chat.RouterOptions{Store: store.Store, Logger: slog.New(slog.DiscardHandler)}, app(svc))
			if err != nil {
				b.Fatal(err)
			}
			client := chat.NewLocalClient(r)
			b.Cleanup(func() { _ = client.Close() })
			ctx := context.Background()
			var got string
			s, err := client.Builder().OnMessage(func(m string) { got = m }).Connect(ctx, route)
			if err != nil {
				b.Fatal(err)
			}
			turn := func(i int) {
				if err := s.Chat(ctx, "Weather in Paris?"); err != nil {
					b.Fatal(err)
				}
				if got == "" {
					b.Fatal("no answer")
				}
				if i%1000 == 0 {
					model.Reset() // llmtest.Model records every request
				}
			}
			for i := range 12 {
				turn(i)
			}
			if route == "count" && got != "12: Weather in Paris?" {
				b.Fatalf("after 12 turns: %q", got)
			}
			var start int64
			if store.trips != nil {
				start = store.trips.N()
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				turn(i)
			}
			if store.trips != nil {
				b.ReportMetric(float64(store.trips.N()-start)/float64(b.N), "roundtrips/op")
			}
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			if st := r.Stats(); st.Scopes != 0 {
				b.Fatalf("after Close: %+v", st)
			}
		})
	}
}

// BenchmarkLocalTurn is a full turn through chat.LocalClient of a route
// that updates a chat-scoped durable bean, over each store: with a store,
// the turn's extra cost is its save (the bean's JSON, the state, the
// version check, the lease).
func BenchmarkLocalTurn(b *testing.B) { benchTurns(b, "count") }

// BenchmarkAITurn is a full turn through chat.LocalClient of a route that
// asks an AI service (runtime/ai with llmtest's in-process model; a full
// window memory of 20 messages in the store's Memories(), which gets the
// turn's two messages and evicts two), over each store: the save then
// also commits the memory's edit.
func BenchmarkAITurn(b *testing.B) { benchTurns(b, "ask") }
