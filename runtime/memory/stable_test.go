package memory_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/chatscopes/chatgen/runtime/memory"
)

// stability returns the Stability of mem before a turn whose user message
// is user, failing when mem is not a StableMemory.
func stability(t *testing.T, mem memory.Memory, user string) memory.Stability {
	t.Helper()
	sm, ok := mem.(memory.StableMemory)
	if !ok {
		t.Fatalf("%T is not a memory.StableMemory", mem)
	}
	st, err := sm.Stability(context.Background(), []llms.MessageContent{human(user)})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// length returns the number of messages of mem.
func length(t *testing.T, mem memory.Memory) int {
	t.Helper()
	msgs, err := mem.Messages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(msgs)
}

// TestStabilityWindow: a token window keeps its front (Keeps all) while
// the next turn, with a reply as long as the newest, fits; once it does
// not, Keeps is 0; after the Add that evicted, Kept is 0, and after one
// that only appended, Kept is all. A block-evicting window keeps its
// front again right after its eviction.
func TestStabilityWindow(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts *memory.WindowOptions
	}{{"sliding", nil}, {"EvictTo", &memory.WindowOptions{EvictTo: 60}}} {
		t.Run(c.name, func(t *testing.T) {
			mem, err := memory.NewManager(&memory.ManagerOptions{Policy: memory.TokenWindow(100, testTokens, c.opts)}).Memory(ctx, "id")
			if err != nil {
				t.Fatal(err)
			}
			if st := stability(t, mem, "hello"); st != (memory.Stability{}) {
				t.Fatalf("empty memory: %+v, want nothing kept (nothing there)", st)
			}
			if err := mem.Add(ctx, sys("be brief"), human("q1"), ai(strings.Repeat("a", 20))); err != nil {
				t.Fatal(err)
			}
			n := length(t, mem)
			if st := stability(t, mem, "q2"); st.Kept != n || st.Keeps != n {
				t.Fatalf("after one turn: %+v, want %d kept and keeps", st, n)
			}
			// 8+2+20 = 30 tokens; two more turns of 22 reach 74; the next
			// (2 + a 20-token reply estimated) would not pass 100 ...
			for _, q := range []string{"q2", "q3"} {
				if err := mem.Add(ctx, human(q), ai(strings.Repeat("b", 20))); err != nil {
					t.Fatal(err)
				}
			}
			n = length(t, mem)
			if st := stability(t, mem, "q4"); st.Kept != n || st.Keeps != n {
				t.Fatalf("at 74 tokens: %+v, want %d kept and keeps", st, n)
			}
			// ... but a long user message would.
			if st := stability(t, mem, strings.Repeat("q", 10)); st.Kept != n || st.Keeps != 0 {
				t.Fatalf("before an evicting turn: %+v, want %d kept, 0 keeps", st, n)
			}
			if err := mem.Add(ctx, human(strings.Repeat("q", 10)), ai(strings.Repeat("c", 20))); err != nil {
				t.Fatal(err)
			}
			st := stability(t, mem, "q")
			if st.Kept != 0 {
				t.Fatalf("after an evicting Add: Kept %d, want 0", st.Kept)
			}
			n = length(t, mem)
			want := 0 // the sliding window is full: the next turn evicts too
			if c.opts != nil {
				want = n // evicted down to 60: the next turn fits
			}
			if st.Keeps != want {
				t.Fatalf("after an evicting Add: Keeps %d, want %d (%d messages)", st.Keeps, want, n)
			}
		})
	}
}

// wantsConversation is a summarizer that asks for the conversation.
type wantsConversation struct{ memory.Summarizer }

func (wantsConversation) WantsConversation() bool { return true }

// TestStabilityCompressing: a compressing memory keeps its front until
// the next turn would pass its high-water mark; then Keeps is 0, unless
// its summarizer reads the conversation (ReuseConversation), whose
// request starts with it: Keeps all, and Summarizes (the turn's prompt is
// read again by the summary). After a summarising Add, Kept is 0.
func TestStabilityCompressing(t *testing.T) {
	ctx := context.Background()
	sum := memory.SummarizerFunc(func(context.Context, memory.SummaryRequest) (string, error) { return "s", nil })
	for _, c := range []struct {
		name  string
		sum   memory.Summarizer
		reuse bool
	}{{"transcript", sum, false}, {"conversation", wantsConversation{sum}, true}} {
		t.Run(c.name, func(t *testing.T) {
			policy := memory.Compressing(200, c.sum, &memory.CompressOptions{Tokenizer: testTokens, TriggerTokens: 100, KeepTokens: 40})
			mem, err := memory.NewManager(&memory.ManagerOptions{Policy: policy}).Memory(ctx, "id")
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"q1", "q2", "q3"} {
				if err := mem.Add(ctx, human(q), ai(strings.Repeat("a", 20))); err != nil {
					t.Fatal(err)
				}
			}
			n := length(t, mem) // 66 tokens
			if st := stability(t, mem, "q4"); st.Kept != n || st.Keeps != n || st.Summarizes {
				t.Fatalf("under the mark: %+v, want %d kept and keeps, no summary", st, n)
			}
			want := 0
			if c.reuse {
				want = n
			}
			if st := stability(t, mem, strings.Repeat("q", 20)); st.Kept != n || st.Keeps != want || st.Summarizes != c.reuse {
				t.Fatalf("before a summarising turn: %+v, want %d kept, %d keeps, summarizes %v", st, n, want, c.reuse)
			}
			if err := mem.Add(ctx, human(strings.Repeat("q", 20)), ai(strings.Repeat("a", 20))); err != nil {
				t.Fatal(err)
			}
			if policy.Stats().Compressions != 1 {
				t.Fatalf("stats %+v: the Add did not summarise", policy.Stats())
			}
			if st := stability(t, mem, "q"); st.Kept != 0 {
				t.Fatalf("after a summarising Add: %+v, want Kept 0", st)
			}
		})
	}
}

// TestStabilityDeleted: the memory of a Manager tells the stability of
// the policy's, and fails with ErrDeleted once deleted.
func TestStabilityDeleted(t *testing.T) {
	ctx := context.Background()
	m := memory.NewManager(&memory.ManagerOptions{Policy: memory.Window(10, nil)})
	mem, err := m.Memory(ctx, "id")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, "id"); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.(memory.StableMemory).Stability(ctx, nil); !errors.Is(err, memory.ErrDeleted) {
		t.Fatalf("Stability after Delete: %v, want ErrDeleted", err)
	}
}

// plainPolicy makes memories that are not StableMemory.
type plainPolicy struct{ memory.Policy }

func (p plainPolicy) New(ctx context.Context, store memory.Store, id string) (memory.Memory, error) {
	m, err := p.Policy.New(ctx, store, id)
	return struct{ memory.Memory }{m}, err
}

// TestStabilityUnknown: the memory of a Manager over a policy whose
// memories do not tell their stability fails with ErrNoStability.
func TestStabilityUnknown(t *testing.T) {
	ctx := context.Background()
	mem, err := memory.NewManager(&memory.ManagerOptions{Policy: plainPolicy{memory.Window(10, nil)}}).Memory(ctx, "id")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mem.(memory.StableMemory).Stability(ctx, nil); !errors.Is(err, memory.ErrNoStability) {
		t.Fatalf("Stability: %v, want ErrNoStability", err)
	}
}
