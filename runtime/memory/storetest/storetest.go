// Package storetest is a conformance suite for implementations of
// memory.Store. A store passes if
//
//	func TestMyStore(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) memory.Store { return newMyStore(t) })
//	}
//
// passes, under -race. The suite checks the contract documented on
// memory.Store (and on memory.IncrementalStore, when the store implements
// it): unknown ids, update, replace, delete, listing, isolation of ids,
// lossless round trips of every langchaingo content part (tool calls and
// tool results especially), independence from the slices callers pass and
// get, and concurrent use; that a memory.Compressing memory over the
// store finds its summary again when it is made anew (as after a restart);
// and that the memories of package memory, evicting whole turns, find
// their lists again through the store, Add after Add.
package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chatscopes/chatgen/runtime/memory"
	"github.com/tmc/langchaingo/llms"
)

// Run runs the suite. newStore must return a new, empty store for each
// call; the suite calls it once per subtest.
func Run(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s memory.Store)
	}{
		{"GetUnknown", testGetUnknown},
		{"UpdateGet", testUpdateGet},
		{"Replace", testReplace},
		{"Delete", testDelete},
		{"EmptyUpdateDeletes", testEmptyUpdateDeletes},
		{"IDs", testIDs},
		{"Isolation", testIsolation},
		{"RoundTripToolCalls", testRoundTripToolCalls},
		{"RoundTripAllParts", testRoundTripAllParts},
		{"NoAliasing", testNoAliasing},
		{"Concurrent", testConcurrent},
		{"Incremental", testIncremental},
		{"CompressingMemory", testCompressingMemory},
		{"EvictingMemories", testEvictingMemories},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newStore(t))
		})
	}
}

// Conversation returns a conversation with a system message, a user
// message, an AI message calling two tools, their two results and the AI's
// answer: the shape an AI service stores after one turn.
func Conversation() []llms.MessageContent {
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "You build weapons."),
		llms.TextParts(llms.ChatMessageTypeHuman, "Make me a sword."),
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.TextContent{Text: "Setting it up."},
			llms.ToolCall{ID: "call_1", Type: "function", FunctionCall: &llms.FunctionCall{
				Name:      "setBlade",
				Arguments: `{"length":90,"material":"steel \"damascus\"","tags":["a","ü"],"nested":{"x":[1,2.5,null,true]}}`,
			}},
			llms.ToolCall{ID: "call_2", Type: "function", FunctionCall: &llms.FunctionCall{
				Name:      "setHilt",
				Arguments: `{}`,
			}},
		}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "call_1", Name: "setBlade", Content: `{"ok":true}`},
		}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "call_2", Name: "setHilt", Content: "error: no hilt\n\ttry again <&>"},
		}},
		llms.TextParts(llms.ChatMessageTypeAI, "Your sword is ready. ⚔️"),
	}
}

// allParts returns messages using every content part type of langchaingo,
// and the corner cases a careless encoding loses.
func allParts() []llms.MessageContent {
	return []llms.MessageContent{
		{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{llms.TextContent{Text: ""}}},
		{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
			llms.TextContent{Text: "first"},
			llms.TextContent{Text: "second, with \"quotes\", \\ and \u2028"},
			llms.ImageURLContent{URL: "https://example.com/a.png", Detail: "high"},
			llms.ImageURLContent{URL: "data:image/png;base64,AAAA"},
			llms.BinaryContent{MIMEType: "application/octet-stream", Data: []byte{0, 1, 2, 0xfe, 0xff}},
		}},
		{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
			llms.ToolCall{ID: "call_nil", Type: "function"}, // no FunctionCall
			llms.ToolCall{ID: "call_empty", Type: "function", FunctionCall: &llms.FunctionCall{}},
		}},
		{Role: llms.ChatMessageTypeTool, Parts: []llms.ContentPart{
			llms.ToolCallResponse{ToolCallID: "call_nil", Name: "", Content: ""},
		}},
		{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
			llms.CachedContent{
				ContentPart:  llms.TextContent{Text: "a long, cached document"},
				CacheControl: &llms.CacheControl{Type: "ephemeral", Duration: 5 * time.Minute},
			},
			llms.CachedContent{ContentPart: llms.ToolCall{ID: "c", Type: "function", FunctionCall: &llms.FunctionCall{Name: "n", Arguments: "{}"}}},
		}},
		{Role: llms.ChatMessageTypeAI}, // no parts
		{Role: llms.ChatMessageTypeGeneric, Parts: []llms.ContentPart{llms.TextContent{Text: "generic"}}},
		llms.TextParts(llms.ChatMessageTypeAI, "end"),
	}
}

// ids returns ids that stress the encoding of keys and file names.
func ids() []string {
	return []string{
		"a",
		"A", // differs from "a" only by case
		"scope-7f3c#github.com/chatscopes/chatgen/examples/weaponbuilder.Assistant.Chat",
		"a/b/../c",
		"..",
		".",
		"con",
		"with space and\ttab",
		"ünïcödé 😀",
		"100%",
		strings.Repeat("long-", 100),
	}
}

func ctx(t *testing.T) context.Context { return t.Context() }

// Equal reports whether a and b are the same messages, part by part, by
// value. Nil and empty part lists and byte slices are equal.
func Equal(a, b []llms.MessageContent) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

func normalize(msgs []llms.MessageContent) []llms.MessageContent {
	out := make([]llms.MessageContent, len(msgs))
	for i, m := range msgs {
		out[i].Role = m.Role
		for _, p := range m.Parts {
			out[i].Parts = append(out[i].Parts, normalizePart(p))
		}
	}
	return out
}

func normalizePart(p llms.ContentPart) llms.ContentPart {
	switch p := p.(type) {
	case llms.BinaryContent:
		if len(p.Data) == 0 {
			p.Data = nil
		}
		return p
	case llms.CachedContent:
		p.ContentPart = normalizePart(p.ContentPart)
		return p
	}
	return p
}

func requireEqual(t *testing.T, what string, got, want []llms.MessageContent) {
	t.Helper()
	if !Equal(got, want) {
		t.Fatalf("%s:\n got: %s\nwant: %s", what, show(got), show(want))
	}
}

func show(msgs []llms.MessageContent) string {
	b, err := memory.MarshalMessages(msgs)
	if err != nil {
		return fmt.Sprintf("%#v", msgs)
	}
	return string(b)
}

func get(t *testing.T, s memory.Store, id string) []llms.MessageContent {
	t.Helper()
	msgs, err := s.Get(ctx(t), id)
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return msgs
}

func update(t *testing.T, s memory.Store, id string, msgs []llms.MessageContent) {
	t.Helper()
	if err := s.Update(ctx(t), id, msgs); err != nil {
		t.Fatalf("Update(%q): %v", id, err)
	}
}

func del(t *testing.T, s memory.Store, id string) {
	t.Helper()
	if err := s.Delete(ctx(t), id); err != nil {
		t.Fatalf("Delete(%q): %v", id, err)
	}
}

func listIDs(t *testing.T, s memory.Store) []string {
	t.Helper()
	got, err := s.IDs(ctx(t))
	if err != nil {
		t.Fatalf("IDs: %v", err)
	}
	got = slices.Clone(got)
	slices.Sort(got)
	return got
}

func text(role llms.ChatMessageType, s string) llms.MessageContent { return llms.TextParts(role, s) }

func testGetUnknown(t *testing.T, s memory.Store) {
	if got := get(t, s, "unknown"); len(got) != 0 {
		t.Fatalf("Get of an unknown id = %s, want no messages", show(got))
	}
	if got := listIDs(t, s); len(got) != 0 {
		t.Fatalf("IDs of an empty store = %q", got)
	}
	del(t, s, "unknown") // not an error
}

func testUpdateGet(t *testing.T, s memory.Store) {
	update(t, s, "conv", Conversation())
	requireEqual(t, "Get after Update", get(t, s, "conv"), Conversation())
	requireEqual(t, "second Get", get(t, s, "conv"), Conversation())
}

func testReplace(t *testing.T, s memory.Store) {
	update(t, s, "conv", Conversation())
	next := []llms.MessageContent{text(llms.ChatMessageTypeHuman, "only this")}
	update(t, s, "conv", next)
	requireEqual(t, "Get after a second Update", get(t, s, "conv"), next)
}

func testDelete(t *testing.T, s memory.Store) {
	update(t, s, "conv", Conversation())
	del(t, s, "conv")
	if got := get(t, s, "conv"); len(got) != 0 {
		t.Fatalf("Get after Delete = %s", show(got))
	}
	if got := listIDs(t, s); len(got) != 0 {
		t.Fatalf("IDs after Delete = %q", got)
	}
	del(t, s, "conv") // twice is fine
	update(t, s, "conv", Conversation())
	requireEqual(t, "Get after Delete and Update", get(t, s, "conv"), Conversation())
}

func testEmptyUpdateDeletes(t *testing.T, s memory.Store) {
	update(t, s, "conv", Conversation())
	update(t, s, "conv", nil)
	if got := get(t, s, "conv"); len(got) != 0 {
		t.Fatalf("Get after Update(nil) = %s", show(got))
	}
	update(t, s, "other", []llms.MessageContent{})
	if got := listIDs(t, s); len(got) != 0 {
		t.Fatalf("IDs after empty updates = %q, want none", got)
	}
}

func testIDs(t *testing.T, s memory.Store) {
	want := ids()
	for i, id := range want {
		update(t, s, id, []llms.MessageContent{text(llms.ChatMessageTypeHuman, fmt.Sprint("message ", i))})
	}
	slices.Sort(want)
	if got := listIDs(t, s); !slices.Equal(got, want) {
		t.Fatalf("IDs = %q\nwant %q", got, want)
	}
	for i, id := range ids() {
		requireEqual(t, fmt.Sprintf("Get(%q)", id), get(t, s, id),
			[]llms.MessageContent{text(llms.ChatMessageTypeHuman, fmt.Sprint("message ", i))})
	}
	del(t, s, "A")
	want = slices.DeleteFunc(want, func(id string) bool { return id == "A" })
	if got := listIDs(t, s); !slices.Equal(got, want) {
		t.Fatalf("IDs after deleting %q = %q\nwant %q", "A", got, want)
	}
	requireEqual(t, `Get("a") after deleting "A"`, get(t, s, "a"),
		[]llms.MessageContent{text(llms.ChatMessageTypeHuman, "message 0")})
}

func testIsolation(t *testing.T, s memory.Store) {
	a := []llms.MessageContent{text(llms.ChatMessageTypeHuman, "to a")}
	b := []llms.MessageContent{text(llms.ChatMessageTypeHuman, "to b")}
	update(t, s, "a", a)
	update(t, s, "b", b)
	update(t, s, "a", Conversation())
	requireEqual(t, "b after updating a", get(t, s, "b"), b)
	del(t, s, "a")
	requireEqual(t, "b after deleting a", get(t, s, "b"), b)
	if got := get(t, s, "a"); len(got) != 0 {
		t.Fatalf("a after delete = %s", show(got))
	}
}

func testRoundTripToolCalls(t *testing.T, s memory.Store) {
	update(t, s, "conv", Conversation())
	got := get(t, s, "conv")
	requireEqual(t, "conversation", got, Conversation())
	// Check the fields one by one too, in case Equal is ever too lenient.
	if len(got) != 6 {
		t.Fatalf("got %d messages, want 6", len(got))
	}
	ai := got[2]
	if ai.Role != llms.ChatMessageTypeAI || len(ai.Parts) != 3 {
		t.Fatalf("AI message = %s", show(got[2:3]))
	}
	tc, ok := ai.Parts[1].(llms.ToolCall)
	if !ok || tc.ID != "call_1" || tc.Type != "function" || tc.FunctionCall == nil ||
		tc.FunctionCall.Name != "setBlade" || tc.FunctionCall.Arguments != Conversation()[2].Parts[1].(llms.ToolCall).FunctionCall.Arguments {
		t.Fatalf("tool call = %#v", ai.Parts[1])
	}
	for i, want := range []string{"call_1", "call_2"} {
		m := got[3+i]
		if m.Role != llms.ChatMessageTypeTool || len(m.Parts) != 1 {
			t.Fatalf("tool message %d = %s", i, show(got[3+i:4+i]))
		}
		r, ok := m.Parts[0].(llms.ToolCallResponse)
		if !ok || r.ToolCallID != want {
			t.Fatalf("tool result %d = %#v", i, m.Parts[0])
		}
	}
}

func testRoundTripAllParts(t *testing.T, s memory.Store) {
	update(t, s, "parts", allParts())
	requireEqual(t, "all part types", get(t, s, "parts"), allParts())
}

func testNoAliasing(t *testing.T, s memory.Store) {
	in := Conversation()
	update(t, s, "conv", in)
	// Mutate everything the caller passed.
	in[0] = text(llms.ChatMessageTypeSystem, "changed")
	in[1].Parts[0] = llms.TextContent{Text: "changed"}
	in[2].Parts[1].(llms.ToolCall).FunctionCall.Arguments = `{"changed":true}`
	in[2].Parts = append(in[2].Parts[:1], llms.TextContent{Text: "changed"})
	requireEqual(t, "after mutating the slice passed to Update", get(t, s, "conv"), Conversation())

	out := get(t, s, "conv")
	out[0].Role = llms.ChatMessageTypeHuman
	out[1].Parts[0] = llms.TextContent{Text: "changed"}
	out[2].Parts[1].(llms.ToolCall).FunctionCall.Name = "changed"
	_ = append(out[1].Parts[:0], llms.TextContent{Text: "appended"})
	_ = append(out[:1], text(llms.ChatMessageTypeHuman, "appended"))
	requireEqual(t, "after mutating the slice Get returned", get(t, s, "conv"), Conversation())

	bin := []llms.MessageContent{{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
		llms.BinaryContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
	}}}
	update(t, s, "bin", bin)
	bin[0].Parts[0].(llms.BinaryContent).Data[0] = 9
	got := get(t, s, "bin")
	want := []llms.MessageContent{{Role: llms.ChatMessageTypeHuman, Parts: []llms.ContentPart{
		llms.BinaryContent{MIMEType: "image/png", Data: []byte{1, 2, 3}},
	}}}
	requireEqual(t, "after mutating binary data passed to Update", got, want)
	got[0].Parts[0].(llms.BinaryContent).Data[0] = 9
	requireEqual(t, "after mutating binary data Get returned", get(t, s, "bin"), want)
}

// turn returns the messages goroutine g writes in its iteration i: all of
// them carry the same "g/i" tag, so a torn list is easy to spot.
func turn(g, i, n int) []llms.MessageContent {
	tag := fmt.Sprintf("%d/%d", g, i)
	msgs := make([]llms.MessageContent, n)
	for j := range msgs {
		msgs[j] = text(llms.ChatMessageTypeHuman, tag)
	}
	msgs[n-1] = llms.MessageContent{Role: llms.ChatMessageTypeAI, Parts: []llms.ContentPart{
		llms.ToolCall{ID: tag, Type: "function", FunctionCall: &llms.FunctionCall{Name: "f", Arguments: `{"tag":"` + tag + `"}`}},
	}}
	return msgs
}

func testConcurrent(t *testing.T, s memory.Store) {
	const (
		goroutines = 8
		iterations = 20
	)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*iterations*4)
	for g := range goroutines {
		wg.Go(func() {
			own := fmt.Sprintf("own-%d", g)
			shared := fmt.Sprintf("shared-%d", g%2)
			for i := range iterations {
				c := t.Context()
				want := turn(g, i, 1+i%4)
				if err := s.Update(c, own, want); err != nil {
					errs <- fmt.Errorf("Update(%s): %w", own, err)
					return
				}
				got, err := s.Get(c, own)
				if err != nil || !Equal(got, want) {
					errs <- fmt.Errorf("Get(%s) = %s, %v; want %s", own, show(got), err, show(want))
					return
				}
				if err := s.Update(c, shared, turn(g, i, 3)); err != nil {
					errs <- fmt.Errorf("Update(%s): %w", shared, err)
					return
				}
				got, err = s.Get(c, shared)
				if err != nil {
					errs <- fmt.Errorf("Get(%s): %w", shared, err)
					return
				}
				if len(got) != 0 && !sameTurn(got) {
					errs <- fmt.Errorf("Get(%s) = %s: a torn list", shared, show(got))
					return
				}
				if i%5 == 4 {
					if err := s.Delete(c, shared); err != nil {
						errs <- fmt.Errorf("Delete(%s): %w", shared, err)
						return
					}
				}
				if _, err := s.IDs(c); err != nil {
					errs <- fmt.Errorf("IDs: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for g := range goroutines {
		own := fmt.Sprintf("own-%d", g)
		requireEqual(t, own, get(t, s, own), turn(g, iterations-1, 1+(iterations-1)%4))
	}
}

// sameTurn reports whether msgs were all written by one call of turn.
func sameTurn(msgs []llms.MessageContent) bool {
	if len(msgs) != 3 {
		return false
	}
	var g, i int
	if _, err := fmt.Sscanf(msgs[0].Parts[0].(llms.TextContent).Text, "%d/%d", &g, &i); err != nil {
		return false
	}
	return Equal(msgs, turn(g, i, 3))
}

func testIncremental(t *testing.T, s memory.Store) {
	is, ok := s.(memory.IncrementalStore)
	if !ok {
		t.Skip("the store is not a memory.IncrementalStore")
	}
	c := t.Context()
	apply := func(id string, ch memory.Change) {
		t.Helper()
		if err := is.Apply(c, id, ch); err != nil {
			t.Fatalf("Apply(%q, %s): %v", id, showChange(ch), err)
		}
	}
	m := func(s string) llms.MessageContent { return text(llms.ChatMessageTypeHuman, s) }
	sys := func(s string) llms.MessageContent { return text(llms.ChatMessageTypeSystem, s) }

	t.Run("AppendToUnknown", func(t *testing.T) {
		apply("new", memory.Change{Tail: []llms.MessageContent{m("1"), m("2")}})
		requireEqual(t, "after Apply", get(t, s, "new"), []llms.MessageContent{m("1"), m("2")})
		if got := listIDs(t, s); !slices.Contains(got, "new") {
			t.Fatalf("IDs = %q, want it to list %q", got, "new")
		}
	})
	t.Run("DropHeadTail", func(t *testing.T) {
		update(t, s, "x", []llms.MessageContent{sys("s"), m("1"), m("2"), m("3")})
		apply("x", memory.Change{Drop: 2, Head: []llms.MessageContent{sys("s")}, Tail: []llms.MessageContent{m("4")}})
		requireEqual(t, "after dropping 2", get(t, s, "x"), []llms.MessageContent{sys("s"), m("2"), m("3"), m("4")})
		apply("x", memory.Change{Drop: 1, Head: []llms.MessageContent{sys("t")}})
		requireEqual(t, "after replacing the head", get(t, s, "x"), []llms.MessageContent{sys("t"), m("2"), m("3"), m("4")})
		apply("x", memory.Change{Head: []llms.MessageContent{m("0")}})
		requireEqual(t, "after inserting in front", get(t, s, "x"), []llms.MessageContent{m("0"), sys("t"), m("2"), m("3"), m("4")})
		apply("x", memory.Change{})
		requireEqual(t, "after an empty change", get(t, s, "x"), []llms.MessageContent{m("0"), sys("t"), m("2"), m("3"), m("4")})
	})
	t.Run("DropTooMany", func(t *testing.T) {
		update(t, s, "y", []llms.MessageContent{m("1")})
		for _, drop := range []int{2, -1} {
			if err := is.Apply(c, "y", memory.Change{Drop: drop, Tail: []llms.MessageContent{m("2")}}); err == nil {
				t.Fatalf("Apply dropping %d of 1 messages succeeded", drop)
			}
			requireEqual(t, "after a failed Apply", get(t, s, "y"), []llms.MessageContent{m("1")})
		}
		if err := is.Apply(c, "unknown-y", memory.Change{Drop: 1}); err == nil {
			t.Fatal("Apply dropping 1 message of an unknown id succeeded")
		}
	})
	t.Run("EmptyResultDeletes", func(t *testing.T) {
		update(t, s, "z", []llms.MessageContent{m("1"), m("2")})
		apply("z", memory.Change{Drop: 2})
		if got := listIDs(t, s); slices.Contains(got, "z") {
			t.Fatalf("IDs = %q still lists an emptied id", got)
		}
		if got := get(t, s, "z"); len(got) != 0 {
			t.Fatalf("Get of an emptied id = %s", show(got))
		}
	})
	t.Run("NoAliasing", func(t *testing.T) {
		conv := Conversation()
		head, tail := conv[:1], conv[1:]
		apply("alias", memory.Change{Head: head, Tail: tail})
		head[0].Parts[0] = llms.TextContent{Text: "changed"}
		tail[1].Parts[1].(llms.ToolCall).FunctionCall.Arguments = "changed"
		tail[0] = m("changed")
		requireEqual(t, "after mutating the slices passed to Apply", get(t, s, "alias"), Conversation())
	})
	t.Run("AgainstModel", func(t *testing.T) {
		// A seeded random walk of window-like changes, checked against a
		// plain slice after every step.
		r := rand.New(rand.NewPCG(1, 2))
		var model []llms.MessageContent
		next := 0
		for step := range 600 {
			var ch memory.Change
			if len(model) > 0 {
				ch.Drop = r.IntN(min(len(model), 4) + 1)
			}
			if r.IntN(3) == 0 {
				ch.Head = []llms.MessageContent{sys(fmt.Sprint("s", step))}
				if ch.Drop == 0 && len(model) > 0 && r.IntN(2) == 0 {
					ch.Drop = 1
				}
			}
			for range r.IntN(4) {
				ch.Tail = append(ch.Tail, m(fmt.Sprint(next)))
				next++
			}
			apply("walk", ch)
			model = slices.Concat(ch.Head, model[ch.Drop:], ch.Tail)
			got := get(t, s, "walk")
			if !Equal(got, model) {
				t.Fatalf("step %d, after %s:\n got: %s\nwant: %s", step, showChange(ch), show(got), show(model))
			}
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				id := fmt.Sprint("inc-", g)
				for i := range 200 {
					var ch memory.Change
					if i >= 10 {
						ch.Drop = 1
					}
					ch.Tail = []llms.MessageContent{m(fmt.Sprint(i))}
					if err := is.Apply(t.Context(), id, ch); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		want := make([]llms.MessageContent, 0, 10)
		for i := 190; i < 200; i++ {
			want = append(want, m(fmt.Sprint(i)))
		}
		for g := range 8 {
			requireEqual(t, fmt.Sprint("inc-", g), get(t, s, fmt.Sprint("inc-", g)), want)
		}
	})
}

func showChange(c memory.Change) string {
	return fmt.Sprintf("{Drop: %d, Head: %s, Tail: %s}", c.Drop, show(c.Head), show(c.Tail))
}

// testCompressingMemory plays turns (with tool calls) through a
// compressing memory over s until it has summarised twice, then makes the
// memory anew, as a restart does: it must find the summary, pinned after
// the system message, and update it from there; clearing the memory
// deletes the summary with the rest.
func testCompressingMemory(t *testing.T, s memory.Store) {
	c := t.Context()
	var calls []memory.SummaryRequest
	var mu sync.Mutex
	summarizer := memory.SummarizerFunc(func(_ context.Context, req memory.SummaryRequest) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, req)
		return fmt.Sprintf("summary %d (%d messages after %q)", len(calls), len(req.Messages), req.Previous), nil
	})
	policy := func() *memory.CompressingPolicy {
		return memory.Compressing(400, summarizer, &memory.CompressOptions{TriggerTokens: 200, KeepTokens: 100})
	}
	newMemory := func(p *memory.CompressingPolicy) memory.Memory {
		t.Helper()
		m, err := p.New(c, s, "compressing")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	p := policy()
	m := newMemory(p)
	conv := Conversation()
	for i := 0; p.Stats().Compressions < 2; i++ {
		if i == 30 {
			t.Fatalf("no two compressions in 30 turns: %+v", p.Stats())
		}
		if err := m.Add(c, conv...); err != nil {
			t.Fatal(err)
		}
	}
	before, err := m.Messages(c)
	if err != nil {
		t.Fatal(err)
	}
	text, ok := memory.SummaryText(before[1])
	if before[0].Role != llms.ChatMessageTypeSystem || !ok || !strings.HasPrefix(text, "summary 2 ") {
		t.Fatalf("the memory does not hold the system message then the summary: %s", show(before[:2]))
	}
	requireEqual(t, "the store", get(t, s, "compressing"), before)

	// A restart: a new policy and memory over the same store.
	p = policy()
	m = newMemory(p)
	after, err := m.Messages(c)
	if err != nil {
		t.Fatal(err)
	}
	requireEqual(t, "the memory made anew", after, before)
	for i := 0; p.Stats().Compressions < 1; i++ {
		if i == 30 {
			t.Fatalf("no compression in 30 turns after the restart: %+v", p.Stats())
		}
		if err := m.Add(c, conv[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	last := calls[len(calls)-1]
	mu.Unlock()
	if last.Previous != text {
		t.Fatalf("after the restart the summary was updated from %q, want %q", last.Previous, text)
	}
	if err := m.Clear(c); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "compressing"); len(got) != 0 {
		t.Fatalf("a cleared compressing memory left %s", show(got))
	}
}
