package memory_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/chatscopes/chatgen/runtime/memory/storetest"
	"github.com/tmc/langchaingo/llms"
)

// Message helpers. Texts double as token counts under testTokens.

func sys(s string) llms.MessageContent   { return llms.TextParts(llms.ChatMessageTypeSystem, s) }
func human(s string) llms.MessageContent { return llms.TextParts(llms.ChatMessageTypeHuman, s) }
func ai(s string) llms.MessageContent    { return llms.TextParts(llms.ChatMessageTypeAI, s) }

func aiCalls(ids ...string) llms.MessageContent {
	m := llms.MessageContent{Role: llms.ChatMessageTypeAI}
	for _, id := range ids {
		m.Parts = append(m.Parts, llms.ToolCall{ID: id, Type: "function",
			FunctionCall: &llms.FunctionCall{Name: "tool", Arguments: `{"id":"` + id + `"}`}})
	}
	return m
}

func result(id string) llms.MessageContent {
	return llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: id, Name: "tool", Content: "ok"},
	}}
}

// testTokens counts a message as the length of its text, or 1 if it has
// none (tool calls, tool results).
var testTokens = memory.TokenizerFunc(func(m llms.MessageContent) int {
	n := 0
	for _, p := range m.Parts {
		if p, ok := p.(llms.TextContent); ok {
			n += len(p.Text)
		}
	}
	return max(n, 1)
})

// summary renders messages as "role:text", "ai:calls(a,b)", "tool:a",
// leaving out the summary message of a compressing memory: the contract
// tests run against it too, and check the messages it keeps word for word.
func summary(msgs []llms.MessageContent) string {
	var out []string
	for _, m := range msgs {
		if _, ok := memory.SummaryText(m); ok {
			continue
		}
		var parts []string
		var calls []string
		for _, p := range m.Parts {
			switch p := p.(type) {
			case llms.TextContent:
				parts = append(parts, p.Text)
			case llms.ToolCall:
				calls = append(calls, p.ID)
			case llms.ToolCallResponse:
				parts = append(parts, p.ToolCallID)
			}
		}
		if calls != nil {
			parts = append(parts, "calls("+strings.Join(calls, ",")+")")
		}
		out = append(out, string(m.Role)+":"+strings.Join(parts, "+"))
	}
	return strings.Join(out, " ")
}

// plainStore hides the Apply method of the store it wraps.
type plainStore struct{ memory.Store }

// countingStore counts the writes reaching the store it wraps.
type countingStore struct {
	memory.IncrementalStore
	mu     sync.Mutex
	writes int
}

func (s *countingStore) count() {
	s.mu.Lock()
	s.writes++
	s.mu.Unlock()
}

func (s *countingStore) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

func (s *countingStore) Update(ctx context.Context, id string, msgs []llms.MessageContent) error {
	s.count()
	return s.IncrementalStore.Update(ctx, id, msgs)
}

func (s *countingStore) Apply(ctx context.Context, id string, c memory.Change) error {
	s.count()
	return s.IncrementalStore.Apply(ctx, id, c)
}

func (s *countingStore) Delete(ctx context.Context, id string) error {
	s.count()
	return s.IncrementalStore.Delete(ctx, id)
}

// failingStore fails every write while failing is set.
type failingStore struct {
	memory.IncrementalStore
	failing bool
}

var errWrite = errors.New("write failed")

func (s *failingStore) Update(ctx context.Context, id string, msgs []llms.MessageContent) error {
	if s.failing {
		return errWrite
	}
	return s.IncrementalStore.Update(ctx, id, msgs)
}

func (s *failingStore) Apply(ctx context.Context, id string, c memory.Change) error {
	if s.failing {
		return errWrite
	}
	return s.IncrementalStore.Apply(ctx, id, c)
}

// stores are the kinds of store every policy test runs over: the
// incremental path, the Update path, and the durable store.
func stores(t *testing.T) map[string]memory.Store {
	return map[string]memory.Store{
		"incremental": memory.NewInMemoryStore(),
		"plain":       plainStore{memory.NewInMemoryStore()},
		"file":        newFileStore(t, t.TempDir()),
	}
}

func newMemory(t *testing.T, p memory.Policy, s memory.Store) memory.Memory {
	t.Helper()
	m, err := p.New(t.Context(), s, "id")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func add(t *testing.T, m memory.Memory, msgs ...llms.MessageContent) {
	t.Helper()
	if err := m.Add(t.Context(), msgs...); err != nil {
		t.Fatal(err)
	}
}

// check asserts that both the memory and its store hold want.
func check(t *testing.T, m memory.Memory, s memory.Store, want string) {
	t.Helper()
	got, err := m.Messages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if summary(got) != want {
		t.Fatalf("memory holds\n  %s\nwant\n  %s", summary(got), want)
	}
	stored, err := s.Get(t.Context(), m.ID())
	if err != nil {
		t.Fatal(err)
	}
	if summary(stored) != want {
		t.Fatalf("store holds\n  %s\nwant\n  %s", summary(stored), want)
	}
}

type policyCase struct {
	name   string
	policy func(size int) memory.Policy
}

// policies returns the policies, sized so that every test message (one
// character of text, or one tool call or result) costs 1 under each. The
// compressing memory has both its marks at its size and a summary that
// costs nothing, so that it keeps word for word what a token window keeps
// (and summarises what the window forgets).
func policies() []policyCase {
	return []policyCase{
		{"Window", func(n int) memory.Policy { return memory.Window(n, nil) }},
		{"TokenWindow", func(n int) memory.Policy { return memory.TokenWindow(n, testTokens, nil) }},
		{"Compressing", func(n int) memory.Policy { return contractCompressing(n) }},
	}
}

// forEach runs fn for each policy over each kind of store.
func forEach(t *testing.T, fn func(t *testing.T, policy func(int) memory.Policy, s memory.Store)) {
	for _, pc := range policies() {
		for name, s := range stores(t) {
			t.Run(pc.name+"/"+name, func(t *testing.T) { fn(t, pc.policy, s) })
		}
	}
}

func TestEvictsOldest(t *testing.T) {
	forEach(t, func(t *testing.T, p func(int) memory.Policy, s memory.Store) {
		m := newMemory(t, p(3), s)
		add(t, m, human("1"))
		add(t, m, ai("2"))
		add(t, m, human("3"))
		check(t, m, s, "human:1 ai:2 human:3")
		add(t, m, ai("4")) // the oldest turn goes whole: the window holds fewer than 3
		check(t, m, s, "human:3 ai:4")
		add(t, m, human("5"), ai("6"))
		check(t, m, s, "human:5 ai:6")
	})
}

func TestTokenWindowCountsTokens(t *testing.T) {
	s := memory.NewInMemoryStore()
	m := newMemory(t, memory.TokenWindow(10, testTokens, nil), s)
	add(t, m, sys("ss"), human("aaaa"), ai("bbbb")) // 10 tokens
	check(t, m, s, "system:ss human:aaaa ai:bbbb")
	add(t, m, human("c")) // 11: evict the oldest turn
	check(t, m, s, "system:ss human:c")
	add(t, m, ai("dddddd")) // 9
	check(t, m, s, "system:ss human:c ai:dddddd")
	add(t, m, human("e")) // 10
	check(t, m, s, "system:ss human:c ai:dddddd human:e")
}

func TestSystemMessage(t *testing.T) {
	forEach(t, func(t *testing.T, p func(int) memory.Policy, s memory.Store) {
		m := newMemory(t, p(3), s)
		add(t, m, sys("a"), human("1"), ai("2"))
		check(t, m, s, "system:a human:1 ai:2")
		add(t, m, human("3")) // the system message stays, the oldest turn goes
		check(t, m, s, "system:a human:3")
		add(t, m, sys("a")) // identical: ignored
		check(t, m, s, "system:a human:3")
		add(t, m, sys("b")) // different: replaces, first
		check(t, m, s, "system:b human:3")
		add(t, m, ai("4"), sys("c"), human("5")) // replaced mid-batch, still first
		check(t, m, s, "system:c human:5")
	})
}

func TestSystemMessageAddedLate(t *testing.T) {
	forEach(t, func(t *testing.T, p func(int) memory.Policy, s memory.Store) {
		m := newMemory(t, p(3), s)
		add(t, m, human("1"), ai("2"))
		add(t, m, sys("a")) // goes first, and counts
		check(t, m, s, "system:a human:1 ai:2")
		add(t, m, human("3"))
		check(t, m, s, "system:a human:3")
	})
}

func TestSystemMessageNotStoredTwice(t *testing.T) {
	s := &countingStore{IncrementalStore: memory.NewInMemoryStore()}
	m := newMemory(t, memory.Window(5, nil), s)
	add(t, m, sys("a"), human("1"))
	add(t, m, sys("a"))
	if s.Writes() != 1 {
		t.Fatalf("%d store writes, want 1: an identical system message writes nothing", s.Writes())
	}
	add(t, m, sys("a"), human("2"))
	if s.Writes() != 2 {
		t.Fatalf("%d store writes, want 2", s.Writes())
	}
}

// TestWholeTurnsEvicted: a turn (a user message and everything up to the
// next one) is evicted whole, so the memory never starts with an AI
// message or a tool result, which providers such as Anthropic refuse.
func TestWholeTurnsEvicted(t *testing.T) {
	forEach(t, func(t *testing.T, p func(int) memory.Policy, s memory.Store) {
		m := newMemory(t, p(5), s)
		add(t, m, sys("s"), human("1"), aiCalls("a", "b"), result("a"), result("b"))
		check(t, m, s, "system:s human:1 ai:calls(a,b) tool:a tool:b")
		add(t, m, ai("2")) // the newest turn grows past the window: it stays whole
		check(t, m, s, "system:s human:1 ai:calls(a,b) tool:a tool:b ai:2")
		add(t, m, human("3"), ai("4")) // the tool turn goes whole
		check(t, m, s, "system:s human:3 ai:4")
		add(t, m, human("5"), aiCalls("c"), result("c"), ai("6")) // 7: human:3's turn goes
		check(t, m, s, "system:s human:5 ai:calls(c) tool:c ai:6")
		add(t, m, human("7")) // 6: the tool turn goes, never its head alone
		check(t, m, s, "system:s human:7")
	})
}

// TestNewestTurnBiggerThanWindow: a turn that alone exceeds the window is
// kept whole (dropping its head would leave an AI message or tool results
// first), alone after the system message, until the next turn evicts it.
func TestNewestTurnBiggerThanWindow(t *testing.T) {
	forEach(t, func(t *testing.T, p func(int) memory.Policy, s memory.Store) {
		m := newMemory(t, p(3), s)
		add(t, m, human("0"), ai("1"))
		add(t, m, human("2"), aiCalls("a", "b"), result("a"), result("b"), ai("3"))
		check(t, m, s, "human:2 ai:calls(a,b) tool:a tool:b ai:3")
		add(t, m, human("4"))
		check(t, m, s, "human:4")
		add(t, m, ai("5"), human("6"), ai("7")) // human:4's turn goes, whole
		check(t, m, s, "human:6 ai:7")
	})
}

func TestLeadingToolMessagesEvicted(t *testing.T) {
	// A list that already starts with a tool result (written by someone
	// else) loses it at the first eviction.
	s := memory.NewInMemoryStore()
	if err := s.Update(t.Context(), "id", []llms.MessageContent{human("0"), result("x"), result("y"), human("1")}); err != nil {
		t.Fatal(err)
	}
	m := newMemory(t, memory.Window(4, nil), s)
	check(t, m, s, "human:0 tool:x tool:y human:1")
	add(t, m, ai("2"))
	check(t, m, s, "human:1 ai:2")
}

func TestMessageBiggerThanBudget(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			m := newMemory(t, memory.TokenWindow(10, testTokens, nil), s)
			add(t, m, sys("ss"), human("a"), ai("b"))
			add(t, m, human(strings.Repeat("x", 11))) // alone over budget: kept, the newest turn, alone
			check(t, m, s, "system:ss human:xxxxxxxxxxx")
			add(t, m, human("c"), ai("d")) // and evicted by the next turn
			check(t, m, s, "system:ss human:c ai:d")
			add(t, m, human(strings.Repeat("y", 11)), ai("ok")) // an Add's older turns go first
			check(t, m, s, "system:ss human:yyyyyyyyyyy ai:ok")
		})
	}
}

func TestSystemMessageBiggerThanBudget(t *testing.T) {
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			m := newMemory(t, memory.TokenWindow(3, testTokens, nil), s)
			add(t, m, sys("system"), human("a"))
			check(t, m, s, "system:system human:a") // the system message is never evicted, nor the newest turn
			add(t, m, human("b"))
			check(t, m, s, "system:system human:b")
			add(t, m, sys("s"), human("c"))
			check(t, m, s, "system:s human:b human:c")
		})
	}
}

func TestAddIsOneWrite(t *testing.T) {
	s := &countingStore{IncrementalStore: memory.NewInMemoryStore()}
	m := newMemory(t, memory.Window(4, nil), s)
	add(t, m, sys("s"), human("1"), aiCalls("a"), result("a"), ai("2"), human("3"))
	if s.Writes() != 1 {
		t.Fatalf("Add of 6 messages made %d store writes, want 1", s.Writes())
	}
	check(t, m, s, "system:s human:3")
}

func TestFailedAddChangesNothing(t *testing.T) {
	for _, incremental := range []bool{true, false} {
		t.Run(fmt.Sprint("incremental=", incremental), func(t *testing.T) {
			fs := &failingStore{IncrementalStore: memory.NewInMemoryStore()}
			var s memory.Store = fs
			if !incremental {
				s = plainStore{fs}
			}
			m := newMemory(t, memory.Window(3, nil), s)
			add(t, m, sys("s"), human("1"), ai("2"))
			fs.failing = true
			err := m.Add(t.Context(), sys("t"), human("3"), ai("4"))
			if !errors.Is(err, errWrite) {
				t.Fatalf("Add = %v, want %v", err, errWrite)
			}
			fs.failing = false
			check(t, m, s, "system:s human:1 ai:2")
			add(t, m, human("3"))
			check(t, m, s, "system:s human:3")
		})
	}
}

func TestClear(t *testing.T) {
	forEach(t, func(t *testing.T, p func(int) memory.Policy, s memory.Store) {
		m := newMemory(t, p(3), s)
		add(t, m, sys("s"), human("1"), ai("2"))
		if err := m.Clear(t.Context()); err != nil {
			t.Fatal(err)
		}
		check(t, m, s, "")
		if ids, _ := s.IDs(t.Context()); len(ids) != 0 {
			t.Fatalf("store ids after Clear: %q", ids)
		}
		add(t, m, human("3"), sys("t"))
		check(t, m, s, "system:t human:3")
	})
}

func TestCopySemantics(t *testing.T) {
	forEach(t, func(t *testing.T, p func(int) memory.Policy, s memory.Store) {
		m := newMemory(t, p(5), s)
		in := []llms.MessageContent{sys("s"), human("1"), aiCalls("a")}
		add(t, m, in...)
		in[0] = human("x")
		in[1].Parts[0] = llms.TextContent{Text: "x"}
		in[2].Parts[0].(llms.ToolCall).FunctionCall.Name = "x"
		check(t, m, s, "system:s human:1 ai:calls(a)")

		out, err := m.Messages(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		out[0] = human("x")
		out[1].Parts[0] = llms.TextContent{Text: "x"}
		tc := out[2].Parts[0].(llms.ToolCall)
		tc.FunctionCall.Name = "x"
		_ = append(out[1].Parts[:1], llms.TextContent{Text: "spill"})
		again, _ := m.Messages(t.Context())
		if summary(again) != "system:s human:1 ai:calls(a)" ||
			again[2].Parts[0].(llms.ToolCall).FunctionCall.Name != "tool" {
			t.Fatalf("mutating Messages' result changed the memory: %s", summary(again))
		}
	})
}

func TestSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	for _, pc := range policies() {
		t.Run(pc.name, func(t *testing.T) {
			s := newFileStore(t, dir)
			m, err := pc.policy(6).New(t.Context(), s, pc.name)
			if err != nil {
				t.Fatal(err)
			}
			add(t, m, sys("s"), human("1"), aiCalls("a", "b"), result("a"), result("b"))
			add(t, m, ai("2"))

			reopened := newFileStore(t, dir)
			m2, err := pc.policy(6).New(t.Context(), reopened, pc.name)
			if err != nil {
				t.Fatal(err)
			}
			check(t, m2, reopened, "system:s human:1 ai:calls(a,b) tool:a tool:b ai:2")
			got, _ := m2.Messages(t.Context())
			want, _ := m.Messages(t.Context())
			if !storetest.Equal(got, want) {
				t.Fatalf("reopened memory holds %s, want %s", summary(got), summary(want))
			}
			// It keeps counting where the old one stopped.
			add(t, m2, human("3"))
			check(t, m2, reopened, "system:s human:3")
		})
	}
}

func TestLoadNormalises(t *testing.T) {
	s := &countingStore{IncrementalStore: memory.NewInMemoryStore()}
	ctx := t.Context()
	if err := s.IncrementalStore.Update(ctx, "id", []llms.MessageContent{
		human("1"), sys("first"), ai("2"), sys("second"), human("3"), ai("4"),
	}); err != nil {
		t.Fatal(err)
	}
	m := newMemory(t, memory.Window(4, nil), s)
	check(t, m, s, "system:first human:3 ai:4") // the first system message, first; human:1's turn evicted
	if s.Writes() != 1 {
		t.Fatalf("%d writes, want 1 (the normalised list)", s.Writes())
	}
	// A well-formed list is not rewritten.
	if _, err := memory.Window(4, nil).New(ctx, s, "id"); err != nil {
		t.Fatal(err)
	}
	if s.Writes() != 1 {
		t.Fatalf("%d writes after loading a well-formed list, want 1", s.Writes())
	}
}

// TestLoadNormalisesInMemory loads, over an InMemoryStore, a list written
// under a bigger window.
func TestLoadNormalisesInMemory(t *testing.T) {
	for _, pc := range policies() {
		t.Run(pc.name, func(t *testing.T) {
			s := memory.NewInMemoryStore()
			m := newMemory(t, pc.policy(6), s)
			add(t, m, sys("s"), human("1"), aiCalls("a"), result("a"), ai("2"), human("3"))
			m = newMemory(t, pc.policy(3), s)
			check(t, m, s, "system:s human:3")
			add(t, m, ai("4"))
			check(t, m, s, "system:s human:3 ai:4")
		})
	}
}

func TestInvalidArguments(t *testing.T) {
	ctx := t.Context()
	s := memory.NewInMemoryStore()
	for name, f := range map[string]func() error{
		"Window(0)":        func() error { _, err := memory.Window(0, nil).New(ctx, s, "id"); return err },
		"TokenWindow(-1)":  func() error { _, err := memory.TokenWindow(-1, nil, nil).New(ctx, s, "id"); return err },
		"nil store":        func() error { _, err := memory.Window(1, nil).New(ctx, nil, "id"); return err },
		"empty id":         func() error { _, err := memory.Window(1, nil).New(ctx, s, ""); return err },
		"Manager empty id": func() error { _, err := memory.NewManager(&memory.ManagerOptions{}).Memory(ctx, ""); return err },
		"Manager bad policy": func() error {
			_, err := memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(0, nil)}).Memory(ctx, "x")
			return err
		},
	} {
		if err := f(); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestDefaultTokenizer(t *testing.T) {
	s := memory.NewInMemoryStore()
	// 12 bytes → 3 tokens, +4 overhead = 7 per message.
	m := newMemory(t, memory.TokenWindow(14, nil, nil), s)
	add(t, m, human("hello world!"), ai("hello world!"))
	check(t, m, s, "human:hello world! ai:hello world!")
	add(t, m, human("x")) // 1 byte → 1 + 4 = 5: 19 > 14
	check(t, m, s, "human:x")
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct {
		msg  llms.MessageContent
		want int
	}{
		{llms.MessageContent{Role: llms.ChatMessageTypeHuman}, memory.MessageOverheadTokens},
		{human("abcd"), 1 + memory.MessageOverheadTokens},
		{human("abcde"), 2 + memory.MessageOverheadTokens},
		{llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.ToolCall{ID: "id", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"}}, // 2+8+1+2 = 13
		}}, 4 + memory.MessageOverheadTokens},
		{result("abcdef"), 3 + memory.MessageOverheadTokens}, // 6+4+2 = 12
	} {
		if got := memory.EstimateTokens(tc.msg); got != tc.want {
			t.Errorf("EstimateTokens(%s) = %d, want %d", summary([]llms.MessageContent{tc.msg}), got, tc.want)
		}
	}
}

func TestConcurrentAdds(t *testing.T) {
	s := memory.NewInMemoryStore()
	m := newMemory(t, memory.TokenWindow(1000, testTokens, nil), s)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if err := m.Add(t.Context(), human(fmt.Sprint(g)), aiCalls(fmt.Sprint(g, "-", i)), result(fmt.Sprint(g, "-", i)), ai("x")); err != nil {
					t.Error(err)
					return
				}
				if _, err := m.Messages(t.Context()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, _ := m.Messages(t.Context())
	stored, _ := s.Get(t.Context(), "id")
	if summary(got) != summary(stored) {
		t.Fatal("memory and store disagree")
	}
	// Turns stay whole: every AI tool call is followed by its result.
	for i, msg := range got {
		if msg.Role == llms.ChatMessageTypeTool && (i == 0 || got[i-1].Role != llms.ChatMessageTypeAI) {
			t.Fatalf("orphan tool result at %d: %s", i, summary(got))
		}
	}
}

// TestEvictTo: a window with a low-water mark evicts in blocks, down to
// the mark, and is append-only between evictions; the Add in progress is
// evicted only as far as the budget requires, and a tool call is never
// separated from its results.
func TestEvictTo(t *testing.T) {
	for _, pc := range []policyCase{
		{"Window", func(n int) memory.Policy { return memory.Window(n, &memory.WindowOptions{EvictTo: 3}) }},
		{"TokenWindow", func(n int) memory.Policy { return memory.TokenWindow(n, testTokens, &memory.WindowOptions{EvictTo: 3}) }},
	} {
		for name, s := range stores(t) {
			t.Run(pc.name+"/"+name, func(t *testing.T) {
				m := newMemory(t, pc.policy(6), s)
				add(t, m, sys("s"), human("1"), ai("2"))
				add(t, m, human("3"), ai("4"))
				add(t, m, human("5"))
				check(t, m, s, "system:s human:1 ai:2 human:3 ai:4 human:5")
				add(t, m, ai("6")) // 7 > 6: down to 3, the system message included
				check(t, m, s, "system:s human:5 ai:6")
				add(t, m, human("7"))
				add(t, m, ai("8"))
				add(t, m, human("9")) // 6: no eviction, append only
				check(t, m, s, "system:s human:5 ai:6 human:7 ai:8 human:9")
				add(t, m, aiCalls("a"), result("a")) // 8: down to the newest turn, over the mark
				check(t, m, s, "system:s human:9 ai:calls(a) tool:a")
				// The turn whose tool results come in the Add in progress
				// stays whole: the block stops short of the mark.
				add(t, m, human("x"), aiCalls("b", "c")) // 6
				add(t, m, result("b"), result("c"))      // 8: human:9's turn goes for the budget
				check(t, m, s, "system:s human:x ai:calls(b,c) tool:b tool:c")
				// The Add in progress is kept whole when it fits the budget.
				add(t, m, human("y"), ai("z"), human("w"), ai("v"))
				check(t, m, s, "system:s human:y ai:z human:w ai:v")
			})
		}
	}
	for _, low := range []int{-1, 7} {
		if _, err := memory.Window(6, &memory.WindowOptions{EvictTo: low}).New(t.Context(), memory.NewInMemoryStore(), "x"); !errors.Is(err, memory.ErrInvalid) {
			t.Fatalf("EvictTo(%d) of a window of 6: %v, want ErrInvalid", low, err)
		}
	}
}
