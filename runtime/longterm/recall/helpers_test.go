package recall_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/ai"
	"github.com/chatscopes/chatgen/runtime/chat"
	"github.com/chatscopes/chatgen/runtime/llmtest"
	"github.com/chatscopes/chatgen/runtime/longterm"
	"github.com/chatscopes/chatgen/runtime/longterm/recall"
)

const svcName = "example.com/app.Assistant"

// system is the system message of the tests' service.
const system = "You are the weapon builder of a fantasy game. Help the player design a weapon: ask about its kind, material and enchantment, one question at a time, and keep your answers short."

var ask = &ai.Method{Name: "Ask", Kind: chat.KindChat, System: system}

// isExtraction reports whether req is the memory's extraction call.
func isExtraction(req *llmtest.Request) bool {
	return len(req.Messages) > 0 && req.Messages[0].Role == llms.ChatMessageTypeSystem &&
		strings.HasPrefix(text(req.Messages[0]), "You maintain a memory of durable facts")
}

func text(m llms.MessageContent) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(llms.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// extractor stands for the extraction model: it turns each sentence of
// the turn's user lines that speaks of the user in the first person
// ("My …", "I …") into a fact "The user said: …", and answers {"facts":
// [...]}. It knows nothing else of the tests.
func extractor(req *llmtest.Request) llmtest.Reply {
	turn := text(req.Messages[len(req.Messages)-1])
	_, turn, _ = strings.Cut(turn, "\nTurn:\n")
	var facts []string
	for line := range strings.Lines(turn) {
		user, ok := strings.CutPrefix(strings.TrimSpace(line), "User: ")
		if !ok {
			continue
		}
		for _, s := range strings.FieldsFunc(user, func(r rune) bool { return r == '.' || r == '!' || r == '?' }) {
			s = strings.TrimSpace(s)
			if strings.HasPrefix(s, "My ") || strings.HasPrefix(s, "I ") {
				facts = append(facts, "The user said: "+s+".")
			}
		}
	}
	return llmtest.Reply{Text: mustJSON(map[string][]string{"facts": facts})}
}

// fixture is a service with a long-term memory over a llmtest server.
type fixture struct {
	t     *testing.T
	srv   *llmtest.Server
	svc   *ai.Service
	mem   *recall.Memory
	store longterm.Store
	logs  *bytes.Buffer
	logMu *sync.Mutex
}

// newFixture returns a service whose chat calls answer with answer and
// whose extraction calls go to extractor.
func newFixture(t *testing.T, store longterm.Store, opts *recall.Options, answer func(req *llmtest.Request) llmtest.Reply) *fixture {
	t.Helper()
	if answer == nil {
		answer = func(*llmtest.Request) llmtest.Reply { return llmtest.Reply{Text: "Noted."} }
	}
	srv := llmtest.NewServer(llmtest.ScriptFunc(func(req *llmtest.Request) (llmtest.Reply, error) {
		if isExtraction(req) {
			return extractor(req), nil
		}
		return answer(req), nil
	}), nil)
	t.Cleanup(srv.Close)
	llm, err := srv.Client()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, srv: srv, store: store, logs: &bytes.Buffer{}, logMu: &sync.Mutex{}}
	if opts == nil {
		opts = &recall.Options{}
	}
	logger := slog.New(slog.NewTextHandler(lockedWriter{f.logMu, f.logs}, nil))
	opts.Logger = logger
	f.mem = recall.New(store, opts)
	f.svc = ai.NewService(svcName, &ai.Config{Model: llm, LongTerm: f.mem, Logger: logger})
	if err := f.svc.Check(); err != nil {
		t.Fatal(err)
	}
	return f
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (f *fixture) logged() string {
	f.logMu.Lock()
	defer f.logMu.Unlock()
	return f.logs.String()
}

// conversation begins a chat scope (a conversation) of principal p (nil:
// anonymous), ended with the test.
func conversation(t *testing.T, p chat.Principal) context.Context {
	t.Helper()
	ctx, err := chat.Begin(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = chat.End(ctx) })
	if p != nil {
		ctx = chat.WithPrincipal(ctx, p)
	}
	return ctx
}

// say runs one turn and returns its reply.
func (f *fixture) say(ctx context.Context, msg string) *ai.Reply {
	f.t.Helper()
	r, err := f.svc.Chat(ctx, &ai.Request{Method: ask, User: msg})
	if err != nil {
		f.t.Fatalf("turn %q: %v", msg, err)
	}
	return r
}

// chatRequests returns the recorded requests that are not extractions.
func (f *fixture) chatRequests() []llmtest.Request {
	var out []llmtest.Request
	for _, r := range f.srv.Requests() {
		if !isExtraction(&r) {
			out = append(out, r)
		}
	}
	return out
}

func (f *fixture) lastChat() *llmtest.Request {
	rs := f.chatRequests()
	if len(rs) == 0 {
		f.t.Fatal("no chat request")
	}
	return &rs[len(rs)-1]
}

// countingStore counts the calls of a Store, and fails them while down.
type countingStore struct {
	longterm.Store
	calls atomic.Int64
	down  atomic.Bool
}

var errDown = errors.New("store down")

func (c *countingStore) hit() error {
	c.calls.Add(1)
	if c.down.Load() {
		return errDown
	}
	return nil
}

func (c *countingStore) Put(ctx context.Context, p string, facts ...longterm.Fact) (longterm.Revision, error) {
	if err := c.hit(); err != nil {
		return 0, err
	}
	return c.Store.Put(ctx, p, facts...)
}

func (c *countingStore) Get(ctx context.Context, p, id string) (longterm.Fact, error) {
	if err := c.hit(); err != nil {
		return longterm.Fact{}, err
	}
	return c.Store.Get(ctx, p, id)
}

func (c *countingStore) List(ctx context.Context, p string) ([]longterm.Fact, longterm.Revision, error) {
	if err := c.hit(); err != nil {
		return nil, 0, err
	}
	return c.Store.List(ctx, p)
}

func (c *countingStore) Update(ctx context.Context, p string, f longterm.Fact) (longterm.Revision, error) {
	if err := c.hit(); err != nil {
		return 0, err
	}
	return c.Store.Update(ctx, p, f)
}

func (c *countingStore) Delete(ctx context.Context, p string, ids ...string) (longterm.Revision, error) {
	if err := c.hit(); err != nil {
		return 0, err
	}
	return c.Store.Delete(ctx, p, ids...)
}

func (c *countingStore) DeleteAll(ctx context.Context, p string) error {
	if err := c.hit(); err != nil {
		return err
	}
	return c.Store.DeleteAll(ctx, p)
}

func (c *countingStore) Revision(ctx context.Context, p string) (longterm.Revision, error) {
	if err := c.hit(); err != nil {
		return 0, err
	}
	return c.Store.Revision(ctx, p)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
