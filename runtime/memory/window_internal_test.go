package memory

import (
	"context"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

func TestDeque(t *testing.T) {
	d := deque[string]{items: strings.Split("s a b c d e", " ")}
	d.drop(1, 2) // keep "s", drop "a b"
	if got := strings.Join(d.live(), " "); got != "s c d e" {
		t.Fatalf("after drop(1, 2): %q", got)
	}
	if d.items[0] != "" || d.items[1] != "" {
		t.Fatalf("dead slots not cleared: %q", d.items)
	}
	d.drop(3, 1) // keep "s c d", drop "e"? no: drop the one after the first 3
	if got := strings.Join(d.live(), " "); got != "s c d" {
		t.Fatalf("after drop(3, 1): %q", got)
	}
	copy(d.prepend(2, 0), []string{"x", "y"}) // fits in the dead prefix
	if got := strings.Join(d.live(), " "); got != "x y s c d" || d.head != 1 {
		t.Fatalf("after prepend(2): %q, head %d", got, d.head)
	}
	copy(d.prepend(3, 1), []string{"1", "2", "3"}) // does not fit
	if got := strings.Join(d.live(), " "); got != "1 2 3 x y s c d" || d.head != 0 || cap(d.items) < 9 {
		t.Fatalf("after prepend(3): %q, head %d, cap %d", got, d.head, cap(d.items))
	}

	// Compaction: a long dead prefix is reclaimed, a short one is not.
	var q deque[int]
	for i := range 3 * compactMin {
		q.items = append(q.items, i)
	}
	q.drop(0, compactMin-1)
	q.compact()
	if q.head != compactMin-1 {
		t.Fatalf("compacted a dead prefix of %d", q.head)
	}
	q.drop(0, compactMin+2)
	q.compact()
	if q.head != 0 || q.len() != compactMin-1 || q.live()[0] != 2*compactMin+1 {
		t.Fatalf("after compaction: head %d, live %v", q.head, q.live())
	}
	if tail := q.items[q.len():cap(q.items)]; len(tail) > 0 && tail[0] != 0 {
		t.Fatalf("slots after compaction not cleared: %v", tail[:min(len(tail), 4)])
	}
}

func TestInMemoryStoreKeep(t *testing.T) {
	ctx := context.Background()
	s := NewInMemoryStore()
	msgs := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "s"),
		llms.TextParts(llms.ChatMessageTypeHuman, "1"),
		llms.TextParts(llms.ChatMessageTypeAI, "2"),
	}
	if err := s.Update(ctx, "id", msgs); err != nil {
		t.Fatal(err)
	}
	if err := s.apply(ctx, "id", Change{Drop: 3}, 1); err == nil {
		t.Fatal("apply dropped more messages than follow the kept one")
	}
	if err := s.apply(ctx, "id", Change{Drop: 1, Tail: msgs[1:2]}, 1); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "id")
	if len(got) != 3 || !equalMessages(got[0], msgs[0]) || !equalMessages(got[1], msgs[2]) || !equalMessages(got[2], msgs[1]) {
		t.Fatalf("after keeping the system message: %v", got)
	}
}

// TestWindowKeepsOneCopy checks that a window over an InMemoryStore leaves
// its messages to the store, and that one over another store keeps them.
func TestWindowKeepsOneCopy(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		store Store
		own   bool
	}{
		{"InMemoryStore", NewInMemoryStore(), false},
		{"other", struct{ IncrementalStore }{NewInMemoryStore()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Window(5, nil).New(ctx, tc.store, "id")
			if err != nil {
				t.Fatal(err)
			}
			w := m.(*window)
			for range 10 {
				if err := w.Add(ctx, llms.TextParts(llms.ChatMessageTypeHuman, "q"), llms.TextParts(llms.ChatMessageTypeAI, "a")); err != nil {
					t.Fatal(err)
				}
			}
			if got := w.msgs.len() > 0; got != tc.own {
				t.Fatalf("the window keeps %d messages of its own", w.msgs.len())
			}
			if w.meta.len() != 4 { // two whole turns
				t.Fatalf("the window counts %d messages, want 4", w.meta.len())
			}
			// Reopened, it still keeps one copy.
			m, err = Window(5, nil).New(ctx, tc.store, "id")
			if err != nil {
				t.Fatal(err)
			}
			if w := m.(*window); (w.msgs.len() > 0) != tc.own || w.meta.len() != 4 {
				t.Fatalf("reopened: %d messages of its own, %d counted", w.msgs.len(), w.meta.len())
			}
		})
	}
}

// TestWindowAllocations pins the copies of Add and Messages over an
// InMemoryStore: adding an exchange of two text messages to a full window
// copies their parts in one allocation, and reading it takes two (the
// slice and the parts), plus one per tool call read.
func TestWindowAllocations(t *testing.T) {
	ctx := context.Background()
	m, err := Window(10, nil).New(ctx, NewInMemoryStore(), "id")
	if err != nil {
		t.Fatal(err)
	}
	exchange := []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeHuman, "q"),
		llms.TextParts(llms.ChatMessageTypeAI, "a"),
	}
	for range 10 {
		if err := m.Add(ctx, exchange...); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		if err := m.Add(ctx, exchange...); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("Add of an exchange: %v allocations, want 1", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := m.Messages(ctx); err != nil {
			t.Fatal(err)
		}
	}); n > 2 {
		t.Errorf("Messages: %v allocations, want 2", n)
	}
	call := llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
		llms.ToolCall{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: "{}"}},
	}}
	result := llms.MessageContent{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
		llms.ToolCallResponse{ToolCallID: "c", Name: "f", Content: "ok"},
	}}
	turn := []llms.MessageContent{exchange[0], call, result, exchange[1]}
	// parts, function calls, and the tool call's interface value.
	if n := testing.AllocsPerRun(100, func() {
		if err := m.Add(ctx, turn...); err != nil {
			t.Fatal(err)
		}
	}); n > 3 {
		t.Errorf("Add of a turn with a tool call: %v allocations, want 3", n)
	}
}
