package offload_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/internal/pgtest"
	"github.com/chatscopes/chatgen/internal/redistest"
	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/boltstore"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/chatimpl"
	"github.com/chatscopes/chatgen/runtime/chatstore"
	"github.com/chatscopes/chatgen/runtime/chatstore/chatstoretest"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/offload"
	"github.com/chatscopes/chatgen/runtime/pgstore"
	"github.com/chatscopes/chatgen/runtime/redisstore"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// logLines returns n numbered lines of a log, 40 bytes each.
func logLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%05d forge heat nominal, anvil steady.\n", i)
	}
	return b.String()
}

// lastStubID returns the id of the newest stub in msgs.
func lastStubID(msgs []llms.MessageContent) string {
	id := ""
	for _, m := range msgs {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok && strings.HasPrefix(r.Content, `{"offloaded":`) {
				var s struct {
					ID string `json:"offloaded"`
				}
				if json.Unmarshal([]byte(r.Content), &s) == nil {
					id = s.ID
				}
			}
		}
	}
	return id
}

// script is the model: "logs N" calls fetch_logs for N lines, "huge"
// calls huge, "read ARGS" calls read_result with ARGS (a JSON object
// whose "id" "last" stands for the newest stub's id in the prompt), and
// a request ending with tool results is answered with what they say.
func script() llmtest.Script {
	return llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if res := req.LastToolResults(); len(res) > 0 {
			r := res[0]
			switch {
			case strings.HasPrefix(r.Content, `{"offloaded":`):
				return llmtest.Reply{Text: "stub: " + r.Content}, nil
			case r.Name == offload.ToolRead:
				return llmtest.Reply{Text: "read: " + r.Content}, nil
			}
			return llmtest.Reply{Text: fmt.Sprintf("whole: %d bytes", len(r.Content))}, nil
		}
		typed := req.UserTyped()
		switch {
		case strings.HasPrefix(typed, "logs "):
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "fetch_logs", Arguments: `{"lines":` + strings.TrimPrefix(typed, "logs ") + `}`}}}, nil
		case typed == "huge":
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: "huge", Arguments: `{}`}}}, nil
		case strings.HasPrefix(typed, "read "):
			args := strings.ReplaceAll(strings.TrimPrefix(typed, "read "), `"last"`, fmt.Sprintf("%q", lastStubID(req.Messages)))
			return llmtest.Reply{ToolCalls: []llmtest.ToolCall{{Name: offload.ToolRead, Arguments: args}}}, nil
		}
		return llmtest.Reply{Text: "ok: " + typed}, nil
	})
}

// node is one process serving conversations over a shared store.
type node struct {
	llm    *llmtest.Server
	off    *offload.Offloader
	router *chat.Router
	client *chat.LocalClient
	// usage sums the prompt tokens of the turns' replies, calls their
	// model calls.
	usage, calls atomic.Int64
}

// huge is the size of the huge tool's result.
const huge = 10 << 20

func tools() []ai.Tool {
	return []ai.Tool{
		{
			Name: "fetch_logs", Description: "Fetches the forge's log.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"lines":{"type":"integer"}},"required":["lines"]}`),
			Invoke: func(_ context.Context, args string) (any, error) {
				var a struct{ Lines int }
				if err := json.Unmarshal([]byte(args), &a); err != nil {
					return nil, &ai.ArgumentsError{Err: err}
				}
				return logLines(a.Lines), nil
			},
		},
		{
			Name: "huge", Description: "Returns 10 MB.",
			Parameters: json.RawMessage(`{"type":"object","properties":{}}`),
			Invoke:     func(context.Context, string) (any, error) { return strings.Repeat("é", huge/2), nil },
		},
	}
}

// newNode returns a node over store and mems (its memory side), with an
// offloader keeping results in offStore. "nest" pushes a scope, "back"
// pops it, "wipe" clears the scope's memory.
func newNode(t *testing.T, store chatstore.ConversationStore, mems, offStore memory.Store, opts *offload.Options) (*node, error) {
	return newNodeWith(t, nodeConfig{store: store, mems: mems, offStore: offStore, opts: opts, window: 200})
}

// nodeConfig configures a node: its stores, its offloader's options (none
// with noOffload) and its memory window.
type nodeConfig struct {
	store          chatstore.ConversationStore
	mems, offStore memory.Store
	opts           *offload.Options
	noOffload      bool
	window         int
	script         llmtest.Script
}

func newNodeWith(t *testing.T, nc nodeConfig) (*node, error) {
	t.Helper()
	if nc.script == nil {
		nc.script = script()
	}
	n := &node{llm: llmtest.NewServer(nc.script, nil)}
	t.Cleanup(n.llm.Close)
	o := offload.Options{Logger: quiet()}
	if nc.opts != nil {
		o = *nc.opts
	}
	o.Store = nc.offStore
	model, err := n.llm.Client()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &ai.Config{Model: model, Logger: quiet(),
		Memory: memory.NewManager(&memory.ManagerOptions{Store: nc.mems, Policy: memory.Window(nc.window, nil)})}
	if !nc.noOffload {
		n.off = offload.New(&o)
		cfg.ToolSources = []ai.ToolSource{n.off}
	}
	store := nc.store
	svc := ai.NewService("example.com/forge.Smith", cfg)
	method := &ai.Method{Name: "Ask", Kind: chat.KindChat, System: "You are the forge's assistant.", Tools: tools()}
	svc.AddMethods(method)
	p := chatimpl.NewPackage("example.com/forge")
	p.AddStoreCheck(svc.CheckStore)
	p.AddRoute(chatimpl.RouteSpec{Name: "smith", Default: true, Handle: func(ctx context.Context) error {
		switch user := chat.Request(ctx).UserMessage(); user {
		case "nest":
			return chat.Push(ctx)
		case "back":
			return chat.Pop(ctx)
		case "wipe":
			return chat.ClearMemory(ctx)
		default:
			r, err := svc.Chat(ctx, &ai.Request{Method: method, User: user})
			if err != nil {
				return err
			}
			n.usage.Add(int64(r.Usage.PromptTokens))
			n.calls.Add(int64(r.ModelCalls))
			return chat.SendValue(ctx, r.Content)
		}
	}})
	var ropts *chat.RouterOptions
	if store != nil {
		ropts = &chat.RouterOptions{Store: store, Logger: quiet()}
	} else {
		ropts = &chat.RouterOptions{Logger: quiet()}
	}
	router, err := chat.NewRouter(ropts, p)
	if err != nil {
		return nil, err
	}
	if err := svc.Check(); err != nil {
		t.Fatal(err)
	}
	n.router = router
	n.client = chat.NewLocalClient(router)
	t.Cleanup(func() { n.client.Close() })
	return n, nil
}

func mustNode(t *testing.T, store chatstore.ConversationStore, mems, offStore memory.Store, opts *offload.Options) *node {
	t.Helper()
	n, err := newNode(t, store, mems, offStore, opts)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// answers records what a session is told.
type answers struct {
	mu  sync.Mutex
	got []string
}

func (a *answers) connect(t *testing.T, n *node, who string) chat.Session {
	t.Helper()
	s, err := a.builder(n).Connect(chat.WithPrincipal(t.Context(), chat.User{ID: who}), "")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (a *answers) builder(n *node) *chat.SessionBuilder {
	return n.client.Builder().OnMessage(func(text string) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.got = append(a.got, text)
	})
}

func (a *answers) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.got) == 0 {
		return ""
	}
	return a.got[len(a.got)-1]
}

func say(t *testing.T, s chat.Session, a *answers, msg string) string {
	t.Helper()
	if err := s.Chat(t.Context(), msg); err != nil {
		t.Fatalf("chat %q: %v", msg, err)
	}
	return a.last()
}

// readPart decodes a "read: " answer.
func readPart(t *testing.T, answer string) offload.Part {
	t.Helper()
	var p offload.Part
	if err := json.Unmarshal([]byte(strings.TrimPrefix(answer, "read: ")), &p); err != nil {
		t.Fatalf("answer %q: %v", answer, err)
	}
	return p
}

// toolContents returns the tool results of a request's messages.
func toolContents(req llmtest.Request) []string {
	var out []string
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if r, ok := p.(llms.ToolCallResponse); ok {
				out = append(out, r.Content)
			}
		}
	}
	return out
}

// offloadIDs returns the offloaded results' ids in a memory store.
func offloadIDs(t *testing.T, s memory.Store) []string {
	t.Helper()
	ids, err := s.IDs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, id := range ids {
		if strings.Contains(id, "#offload:") {
			out = append(out, id)
		}
	}
	return out
}

type storeCase struct {
	name string
	open func(t *testing.T) (chatstore.ConversationStore, memory.Store)
}

func stores() []storeCase {
	return []storeCase{
		{"in-memory", func(t *testing.T) (chatstore.ConversationStore, memory.Store) {
			s := chat.NewInMemoryConversationStore(nil)
			return s, chatstoretest.InMemoryMemories(s)
		}},
		{"bbolt", func(t *testing.T) (chatstore.ConversationStore, memory.Store) {
			s, err := boltstore.Open(filepath.Join(t.TempDir(), "chat.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, s.Memories()
		}},
		{"redis", func(t *testing.T) (chatstore.ConversationStore, memory.Store) {
			c := redistest.Client(t)
			s, err := redisstore.New(c, &redisstore.Options{Prefix: redistest.Prefix(t, c, "offload")})
			if err != nil {
				t.Fatal(err)
			}
			return s, s.Memories()
		}},
		{"postgres", func(t *testing.T) (chatstore.ConversationStore, memory.Store) {
			pool := pgtest.Pool(t, nil)
			if _, err := pgstore.Migrate(t.Context(), pool); err != nil {
				t.Fatal(err)
			}
			s, err := pgstore.New(t.Context(), pool, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, s.Memories()
		}},
	}
}

// Through langchaingo's OpenAI client against llmtest, on a durable
// conversation: a result over the threshold reaches the turn's own model
// call whole, and the memory keeps its stub, which every later request
// sends byte for byte; read_result returns a range of it by lines or by
// bytes — on another node too, after the conversation moved there —; and
// closing the conversation deletes every offloaded result from the store.
func TestOffloadDurable(t *testing.T) {
	for _, sc := range stores() {
		t.Run(sc.name, func(t *testing.T) {
			store, mems := sc.open(t)
			a := mustNode(t, store, mems, mems, nil)
			rec := &answers{}
			s := rec.connect(t, a, "ada")
			if got := say(t, s, rec, "logs 500"); got != "whole: 20000 bytes" {
				t.Fatalf("the turn's model call was told %q, want the whole result", got)
			}
			say(t, s, rec, "logs 10") // small: kept as it is
			reqs := a.llm.Requests()
			next := toolContents(reqs[len(reqs)-1])
			if len(next) != 2 || !strings.HasPrefix(next[0], `{"offloaded":`) || next[1] != logLines(10) {
				t.Fatalf("the next turn's tool results are %.200q, want the stub, then the small result", next)
			}
			stub := next[0]
			if len(stub) > 600 || !strings.Contains(stub, `"bytes":20000`) || !strings.Contains(stub, `"lines":500`) || !strings.Contains(stub, "00001 forge heat") {
				t.Fatalf("stub %q", stub)
			}

			p := readPart(t, say(t, s, rec, `read {"id":"last","line":2,"lines":3}`))
			if p.Text != strings.Join(strings.SplitAfter(logLines(4), "\n")[1:4], "") || p.Line != 2 || p.Count != 3 || p.Offset != 40 || !p.More || p.Lines != 500 {
				t.Fatalf("lines 2 to 4: %+v", p)
			}
			// The stub stays in every later request, unchanged.
			for _, r := range a.llm.Requests()[len(reqs):] {
				if c := toolContents(r); len(c) == 0 || c[0] != stub {
					t.Fatalf("request %d: first tool result %.100q, want the stub", r.Index, c)
				}
			}

			// The conversation moves to node b, which reads the result.
			if err := a.client.Detach(); err != nil {
				t.Fatal(err)
			}
			b := mustNode(t, store, mems, mems, nil)
			rec2 := &answers{}
			s2, err := rec2.builder(b).Resume(chat.WithPrincipal(t.Context(), chat.User{ID: "ada"}), s.ConversationID(), s.ResumeToken())
			if err != nil {
				t.Fatal(err)
			}
			p = readPart(t, say(t, s2, rec2, `read {"id":"last","offset":19980,"length":100}`))
			if p.Text != logLines(500)[19980:] || p.End != 20000 || p.More {
				t.Fatalf("the last bytes, on node b: %+v", p)
			}
			if got := offloadIDs(t, mems); len(got) != 1 {
				t.Fatalf("stored results %q, want 1", got)
			}
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
			if got := offloadIDs(t, mems); len(got) != 0 {
				t.Fatalf("after the conversation closed the store still holds %q", got)
			}
		})
	}
}

// The results of a nested scope go with it; the enclosing scope's stay
// and remain readable; and the nested scope's ids are unknown there.
func TestOffloadDeletedWithScope(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	mems := chatstoretest.InMemoryMemories(store)
	n := mustNode(t, store, mems, mems, nil)
	rec := &answers{}
	s := rec.connect(t, n, "ada")
	say(t, s, rec, "logs 300")
	say(t, s, rec, "nest")
	say(t, s, rec, "logs 400")
	say(t, s, rec, "logs 401")
	reqs := n.llm.Requests()
	nested := lastStubID(reqs[len(reqs)-1].Messages)
	if got := offloadIDs(t, mems); len(got) != 3 {
		t.Fatalf("stored %q, want 3 results", got)
	}
	say(t, s, rec, "back")
	if got := offloadIDs(t, mems); len(got) != 1 {
		t.Fatalf("after the nested scope ended the store holds %q, want the top scope's result only", got)
	}
	if p := readPart(t, say(t, s, rec, `read {"id":"last","line":300}`)); p.Text != logLines(300)[299*40:] {
		t.Fatalf("the top scope's result: %+v", p)
	}
	got := say(t, s, rec, `read {"id":"`+nested+`"}`)
	if !strings.Contains(got, "no offloaded result has this id") {
		t.Fatalf("reading the ended scope's %s: %q", nested, got)
	}
}

// Bad input: an unknown id, an id of another conversation (another
// principal's), ranges outside the result, a malformed id; each is told
// to the model, and nothing of another conversation is read.
func TestOffloadBadReads(t *testing.T) {
	n := mustNode(t, nil, memory.NewInMemoryStore(), nil, nil)
	recA, recB := &answers{}, &answers{}
	sa := recA.connect(t, n, "ada")
	sb := recB.connect(t, n, "bob")
	say(t, sa, recA, "logs 300")
	say(t, sb, recB, "logs 300")
	say(t, sa, recA, "ok")
	adasID := lastStubID(n.llm.Requests()[len(n.llm.Requests())-1].Messages)
	if adasID == "" {
		t.Fatal("no stub in ada's prompt")
	}
	for _, c := range []struct{ args, want string }{
		{`{"id":"` + adasID + `"}`, "no offloaded result has this id"},
		{`{"id":"zzz-1"}`, "no offloaded result has this id"},
		{`{"id":"last-99"}`, "no offloaded result has this id"},
		{`{"id":"last","line":301}`, "line 301 of a result of 300 lines"},
		{`{"id":"last","offset":12000}`, "offset 12000 of a result of 12000 bytes"},
		{`{"id":"last","offset":-1}`, "negative offset"},
		{`{"id":"last","offset":5,"line":2}`, "an offset or a line, not both"},
		{`{"id":""}`, "id is empty"},
		{`{"id":7}`, "invalid arguments"},
	} {
		args := strings.ReplaceAll(c.args, `"last-99"`, `"`+strings.Split(lastStubID(n.llm.Requests()[len(n.llm.Requests())-1].Messages), "-")[0]+`-99"`)
		if got := say(t, sb, recB, "read "+args); !strings.Contains(got, c.want) {
			t.Fatalf("read %s: %q, want %q", args, got, c.want)
		}
	}
	// Ada's own id still reads, in her conversation.
	if p := readPart(t, say(t, sa, recA, `read {"id":"`+adasID+`","length":40}`)); p.Text != logLines(1) {
		t.Fatalf("ada's read: %+v", p)
	}
}

// Read outside a chat scope, or of an id of a scope without results,
// fails matchably.
func TestReadErrors(t *testing.T) {
	o := offload.New(&offload.Options{Logger: quiet()})
	if _, err := o.Read(context.Background(), "x-1", offload.Range{}); !errors.Is(err, chat.ErrNotActive) {
		t.Fatalf("outside a scope: %v", err)
	}
	// Outside a scope a large result cannot be kept: it is cut, for the
	// prompt and the memory alike.
	prompt, kept := o.OffloadResult(context.Background(), ai.ToolExecution{Name: "fetch_logs", Text: logLines(500)})
	if prompt != kept || !strings.HasPrefix(prompt, logLines(204)) || !strings.HasSuffix(prompt, "[cut at 8192 of 20000 bytes: the rest could not be kept]") {
		t.Fatalf("outside a scope the model is told %q", prompt[len(prompt)-100:])
	}
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer chat.End(ctx)
	if _, err := o.Read(ctx, "x-1", offload.Range{}); !errors.Is(err, offload.ErrUnknown) {
		t.Fatalf("unknown id: %v", err)
	}
}

// A 10 MB result: the stub reaches the model at once (the prompt stays
// small), the first MaxBytes are kept and readable, the stub says how
// much the tool returned, and offloading it allocates a bounded multiple
// of what is kept, not of what the tool returned.
func TestOffloadHuge(t *testing.T) {
	mems := memory.NewInMemoryStore()
	n := mustNode(t, nil, mems, mems, nil)
	rec := &answers{}
	s := rec.connect(t, n, "ada")
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := say(t, s, rec, "huge")
	runtime.ReadMemStats(&after)
	if !strings.HasPrefix(got, `stub: {"offloaded":`) || !strings.Contains(got, fmt.Sprintf(`"returned_bytes":%d`, huge)) || !strings.Contains(got, fmt.Sprintf(`"bytes":%d`, offload.DefaultMaxBytes)) {
		t.Fatalf("the model was told %.300q", got)
	}
	for _, r := range n.llm.Requests() {
		if len(r.Body) > 16<<10 {
			t.Fatalf("request %d is %d bytes", r.Index, len(r.Body))
		}
	}
	// The tool's own 10 MB string, plus a few copies of the megabyte kept.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > huge+12<<20 {
		t.Fatalf("the turn allocated %d MB", alloc>>20)
	}
	p := readPart(t, say(t, s, rec, fmt.Sprintf(`read {"id":"last","offset":%d}`, offload.DefaultMaxBytes-1)))
	if p.Text != "é" || p.Offset != offload.DefaultMaxBytes-2 || p.More {
		t.Fatalf("the last character kept (an offset inside it reads from its start): %+v", p)
	}
}

// A router with a conversation store refuses an offloader whose results
// would stay in the process.
func TestNotDurableStoreRefused(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	_, err := newNode(t, store, chatstoretest.InMemoryMemories(store), memory.NewInMemoryStore(), nil)
	if !errors.Is(err, chat.ErrMemoryNotDurable) {
		t.Fatalf("NewRouter: %v, want ErrMemoryNotDurable", err)
	}
}

// Inline < 0 sends the stub at once: the request after the tool call is
// byte for byte the prefix of every later one.
func TestInlineOff(t *testing.T) {
	mems := memory.NewInMemoryStore()
	n := mustNode(t, nil, mems, mems, &offload.Options{Inline: -1, Logger: quiet()})
	rec := &answers{}
	s := rec.connect(t, n, "ada")
	if got := say(t, s, rec, "logs 300"); !strings.HasPrefix(got, `stub: {"offloaded":`) {
		t.Fatalf("the turn's model was told %.100q", got)
	}
	say(t, s, rec, "next")
	reqs := n.llm.Requests()
	first, later := reqs[1].Messages, reqs[2].Messages
	if len(later) < len(first) {
		t.Fatalf("later request shorter")
	}
	for i := range first {
		a, _ := json.Marshal(first[i])
		b, _ := json.Marshal(later[i])
		if string(a) != string(b) {
			t.Fatalf("message %d changed:\n%s\n%s", i, a, b)
		}
	}
}

// A scope keeps its last MaxResults results: the oldest id is gone, told
// so, its slot taken by the newest; the shelf lists the kept ones, oldest
// first.
func TestOldestGone(t *testing.T) {
	mems := memory.NewInMemoryStore()
	n := mustNode(t, nil, mems, mems, &offload.Options{MaxResults: 2, Logger: quiet()})
	rec := &answers{}
	s := rec.connect(t, n, "ada")
	say(t, s, rec, "logs 300")
	say(t, s, rec, "ok")
	first := lastStubID(n.llm.Requests()[len(n.llm.Requests())-1].Messages)
	say(t, s, rec, "logs 301")
	say(t, s, rec, "logs 302")
	if got := say(t, s, rec, `read {"id":"`+first+`"}`); !strings.Contains(got, "the result is no longer kept: "+first+" (only the last 2 results are kept)") {
		t.Fatalf("reading the oldest: %q", got)
	}
	if p := readPart(t, say(t, s, rec, `read {"id":"last","line":302}`)); p.Text != logLines(302)[301*40:] {
		t.Fatalf("the newest: %+v", p)
	}
	if got := offloadIDs(t, mems); len(got) != 2 {
		t.Fatalf("stored %q, want 2 slots", got)
	}
	// The same outside a router, in a scope of its own.
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer chat.End(ctx)
	for i := range 3 {
		prompt, kept := n.off.OffloadResult(ctx, ai.ToolExecution{ID: fmt.Sprint("c", i), Name: "fetch_logs", Text: logLines(300 + i)})
		if prompt != logLines(300+i) || !strings.HasPrefix(kept, `{"offloaded":`) {
			t.Fatalf("result %d: prompt %.40q, kept %.40q", i, prompt, kept)
		}
	}
	shelf, err := n.off.Bean().Lookup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := shelf.List()
	if len(l) != 2 || l[0].Call != "c1" || l[1].Call != "c2" || l[1].Lines != 302 || l[1].Bytes != 302*40 {
		t.Fatalf("the shelf lists %+v, want c1 then c2", l)
	}
}

// A wipe of the scope's memory takes its stubs, and the results go too:
// their ids are gone.
func TestOffloadWiped(t *testing.T) {
	store := chat.NewInMemoryConversationStore(nil)
	mems := chatstoretest.InMemoryMemories(store)
	n := mustNode(t, store, mems, mems, nil)
	rec := &answers{}
	s := rec.connect(t, n, "ada")
	say(t, s, rec, "logs 300")
	say(t, s, rec, "ok")
	id := lastStubID(n.llm.Requests()[len(n.llm.Requests())-1].Messages)
	say(t, s, rec, "wipe")
	if got := offloadIDs(t, mems); len(got) != 0 {
		t.Fatalf("after the wipe the store holds %q", got)
	}
	if got := say(t, s, rec, `read {"id":"`+id+`"}`); !strings.Contains(got, "no longer kept: "+id+" (the scope's memory was wiped since)") {
		t.Fatalf("reading %s after the wipe: %q", id, got)
	}
}
